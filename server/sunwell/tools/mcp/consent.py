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
import shlex
from pathlib import Path
from typing import Any

from sunwell.config import McpServerConfig
from sunwell.tools.policy.remembered import RememberedApprovals


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
    """The approvals file `<data>/mcp/approved.json` (tools/policy/remembered.py), keyed by server name."""

    def __init__(self, data_dir: Path) -> None:
        self.file = RememberedApprovals(Path(data_dir) / "mcp" / "approved.json", key="server")
        self.path = self.file.path

    def approved(self, workspace: Path, server: str, config: McpServerConfig) -> bool:
        return self.file.has(workspace, server, fingerprint(config))

    def approve(self, workspace: Path, server: str, config: McpServerConfig) -> None:
        """Remember the approval (replacing an older one of the same server in the same workspace)."""
        self.file.add(workspace, server, fingerprint(config))
