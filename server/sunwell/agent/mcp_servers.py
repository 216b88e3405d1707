"""The MCP servers as a front end manages them (`sunwell mcp`, VS Code's "MCP Servers", `::mcp`): their states,
the user's Restart, Approve, sign-in and Sign Out, their resources for the `@` picker. The engine's own hub
(tools/mcp/hub.py), so what is done here is what its turns see; front ends go through this, never the hub.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sunwell.tools.mcp.hub import McpHub, ServerStatus
from sunwell.tools.mcp.surroundings import ServerDown
from sunwell.vocabulary import Trust

__all__ = ["McpServers", "ServerDown", "ServerResource", "ServerStatus"]

Notify = Callable[[str, str, str], None]
"""(level, code, message): what a server says as it starts."""


@dataclass(frozen=True)
class ServerResource:
    server: str
    uri: str
    name: str
    description: str | None
    mime_type: str | None


class McpServers:
    def __init__(self, hub: McpHub) -> None:
        self._hub = hub

    def names(self, *, with_url: bool = False, proposed: bool = False) -> list[str]:
        """The configured servers (only url servers, only those the workspace proposes)."""
        return [name for name, server in self._hub.servers.items()
                if (not with_url or server.config.url is not None) and (not proposed or server.proposed)]

    def status(self) -> list[ServerStatus]:
        """Every configured server as it is now (a server no turn needed yet is `stopped`)."""
        return self._hub.status()

    async def start(self, trust: Trust, notify: Notify) -> list[ServerStatus]:
        """Start every server a turn at `trust` may use (none is asked about), then their states."""
        await self._hub.start(trust, None, notify)
        return self._hub.status()

    async def restart(self, name: str, notify: Notify) -> ServerStatus:
        """Stop and start one server with a clean slate. KeyError: unknown; ServerDown: it may not start."""
        return await self._hub.restart(name, notify)

    def approve(self, name: str) -> None:
        """Remember the user's approval of a server the workspace proposes. KeyError: unknown."""
        self._hub.approve(name)

    async def sign_out(self, name: str) -> tuple[bool, str]:
        """Forget a url server's sign-in: (whether one was kept, where). KeyError: unknown; ValueError: stdio."""
        return await self._hub.sign_out(name)

    def signed_in_where(self, name: str) -> str:
        """Where a url server's sign-in is kept, as the user is told. KeyError: unknown."""
        return self._hub.vault(name, self._hub.servers[name].config.url or "").where

    def resources(self) -> list[ServerResource]:
        """The resources of the servers listed so far: `@SERVER:URI` mentions."""
        return [ServerResource(server=name, uri=str(r.uri), name=r.name, description=r.description or None,
                               mime_type=r.mime_type)
                for name, server in self._hub.servers.items() for r in server.resources]
