"""What the MCP bridge's modules share without importing the SDK (importing `mcp` takes over half a second, which
a turn with no MCP server configured should not pay)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sunwell.tools.mcp.vaults import Vault
from sunwell.tools.network.hosts import HostRules
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
    network: HostRules = field(default_factory=HostRules)
    """The user's address rules: every host a url server's sign-in reaches besides the server's own (an
    authorization server its metadata names) must pass them, as a web_fetch must."""

    def jail(self) -> Jail:
        return Jail(self.workspace, self.blocked_paths)


Opener = Callable[[str, str], Awaitable[bool]]
"""(server, url) -> whether the page was opened for a person."""


class SignInFront(Protocol):
    """What a browser sign-in (tools/mcp/oauth.py) needs from the front end (the hub, from its client port)."""

    def vault(self, server: str, url: str) -> Vault:
        """Where `server`'s sign-in is kept: the front end's secret storage (VS Code's), else the OS keyring."""
        ...

    @property
    def opener(self) -> Opener | None:
        """Opens the authorization page for a person (VS Code's `window/showDocument`, the terminal's browser);
        None: no one is here, and a server that asks for a sign-in fails at once, saying how to sign in."""
        ...


class ServerDown(Exception):
    """The server cannot be used now; the message says why (for the model and the user alike)."""
