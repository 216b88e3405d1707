"""What the MCP bridge's modules share without importing the SDK (importing `mcp` takes over half a second, which
a turn with no MCP server configured should not pay)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.workspace.jail import Jail

Notify = Callable[[str, str, str], None]
"""(level, code, message): a `notice` event of the running turn."""
UNSANDBOXED = ("unsandboxed (sandbox: off): it runs as you, with your files, and what it starts may keep running "
               "after Sunwell exits")
"""What `sunwell mcp list` and the first start of a `sandbox: off` server say. Stopping a server signals its process
group; a daemon that leaves the group (setsid, double fork) is out of reach without the sandbox, whose
`--die-with-parent` and PID namespace take everything down with it."""


@dataclass(frozen=True)
class Surroundings:
    """What every server of a workspace starts with (from the engine's settings)."""

    workspace: Path
    data_dir: Path
    blocked_paths: tuple[str, ...] = ()
    env_passthrough: tuple[str, ...] = ()
    bwrap_path: str | None = None
    quarantine_dir: Path | None = None

    def jail(self) -> Jail:
        return Jail(self.workspace, self.blocked_paths)


class ServerDown(Exception):
    """The server cannot be used now; the message says why (for the model and the user alike)."""
