"""Which MCP servers proposed by a workspace config the user has approved, kept in `<data>/mcp/approved.json`.

A workspace config is written by whoever wrote the repository, so a server it proposes never starts on its own
(Claude Code's CVE-2025-59536 ran a project's MCP servers before anyone agreed). The user approves the exact
launch once — `sunwell mcp approve NAME`, or the approval card the first turn shows — and the approval is remembered
by the workspace, the server's name and a fingerprint of what would run: command, args, cwd and the environment it
sets (names and values: `NODE_OPTIONS=--require ./x.js` changes what runs as much as an argument does), or the url and
the names of its headers. Any change to those asks again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any

from sunwell.config import McpServerConfig


def fingerprint(config: McpServerConfig) -> str:
    """A hash of everything that decides what a proposed server runs or where it connects."""
    what: dict[str, Any] = (
        {"command": config.command, "args": config.args, "cwd": config.cwd, "env": sorted(config.env.items())}
        if config.command is not None
        else {"url": config.url, "headers": sorted(config.headers)}
    )
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def launch_line(config: McpServerConfig) -> str:
    """What an approval shows: the command line (with the variables it sets) and where it runs, or the url."""
    if config.command is None:
        headers = f" (headers: {', '.join(sorted(config.headers))})" if config.headers else ""
        return f"{config.url}{headers}"
    env = " ".join(f"{name}={_quote(value)}" for name, value in sorted(config.env.items()))
    line = " ".join(_quote(part) for part in [config.command, *config.args])
    return (f"{env} " if env else "") + line


def _quote(text: str) -> str:
    return shlex.quote(text)


class Consents:
    """The approvals file: `{"approved": [{workspace, server, sha256, at}]}`, written atomically, mode 0600."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "mcp" / "approved.json"

    def approved(self, workspace: Path, server: str, config: McpServerConfig) -> bool:
        key = (str(workspace), server, fingerprint(config))
        return any((e.get("workspace"), e.get("server"), e.get("sha256")) == key for e in self._entries())

    def approve(self, workspace: Path, server: str, config: McpServerConfig) -> None:
        """Remember the approval (replacing an older one of the same server in the same workspace)."""
        entries = [e for e in self._entries() if (e.get("workspace"), e.get("server")) != (str(workspace), server)]
        entries.append({"workspace": str(workspace), "server": server, "sha256": fingerprint(config),
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self._write(entries)

    def _entries(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []  # none yet, or unreadable: nothing is approved
        entries = data.get("approved") if isinstance(data, dict) else None
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

    def _write(self, entries: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".approved-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"approved": entries}, out, indent=2)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
