"""Approvals a user gave once and Sunwell remembers: what a workspace config proposed to run on this machine (an
MCP server, tools/mcp/consent.py; a hook, sunwell/hooks/). One JSON file per kind, `{"approved": [{workspace, name,
sha256, at}]}`, written atomically, mode 0600, in a 0700 folder of the data dir: a program the workspace runs in the
sandbox never sees it (it is outside the workspace), so it cannot approve anything itself.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


class RememberedApprovals:
    def __init__(self, path: Path, key: str = "name") -> None:
        self.path = Path(path)
        self.key = key
        """The entry's field that names what was approved (`server` in the MCP file, kept for old files)."""

    def has(self, workspace: Path, name: str, sha256: str) -> bool:
        wanted = (str(workspace), name, sha256)
        return any((e.get("workspace"), e.get(self.key), e.get("sha256")) == wanted for e in self.entries())

    def add(self, workspace: Path, name: str, sha256: str, *, replace: bool = True) -> None:
        """Remember one approval; with `replace`, an older approval of the same name in the same workspace goes."""
        entries = [e for e in self.entries()
                   if (e.get("workspace"), e.get(self.key)) != (str(workspace), name)
                   or (not replace and e.get("sha256") != sha256)]
        entries.append({"workspace": str(workspace), self.key: name, "sha256": sha256,
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self._write(entries)

    def entries(self) -> list[dict[str, Any]]:
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
