"""`sunwell/mcp`, `sunwell/mcpRestart` and `sunwell/mcpSignOut`: the configured MCP servers as `sunwell mcp list`
shows them, and the user's Restart of one or Sign Out of a url server (VS Code's "Sunwell: MCP Servers").

Its imports of the engine floor (agent/, tools/, config/) are in the handlers: the sidecar answers `initialize`
before it loads the engine (lsp/server.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.lsp.failures import RequestFailed
from sunwell.lsp.sessions import engine_or_fail
from sunwell.wire.protocol import (
    MCP,
    MCP_RESTART,
    MCP_SIGN_OUT,
    EmptyParams,
    McpRestartParams,
    McpRestartResult,
    McpResult,
    McpServerInfo,
    McpSignOutParams,
    McpSignOutResult,
)

if TYPE_CHECKING:
    from sunwell.agent.mcp_servers import ServerStatus
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)


def setup(server: SunwellServer) -> None:
    @server.feature(MCP)
    def servers(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, MCP)
        # The state as it is: a server that no turn has needed yet is `stopped` (listing does not start it)
        from sunwell.config.loading import user_config_path

        rows = engine_or_fail(ls).servers.status()
        return McpResult(servers=[server_info(row) for row in rows], config=str(user_config_path())).wire()

    @server.feature(MCP_RESTART)
    async def restart(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.mcp_servers import ServerDown

        request = ls.parse(McpRestartParams, params, MCP_RESTART)
        servers = engine_or_fail(ls).servers
        try:
            row = await servers.restart(request.name, lambda _level, _code, message: log.info("%s", message))
        except KeyError:
            raise JsonRpcInvalidParams(f"{MCP_RESTART}: no MCP server '{request.name}' is configured "
                                       f"(configured: {', '.join(servers.names()) or 'none'})") from None
        except ServerDown as exc:
            raise RequestFailed(f"MCP server {request.name} cannot be restarted: {exc}") from None
        return McpRestartResult(state=row.state).wire()


    @server.feature(MCP_SIGN_OUT)
    async def sign_out(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(McpSignOutParams, params, MCP_SIGN_OUT)
        try:
            forgotten, _ = await engine_or_fail(ls).servers.sign_out(request.name)
        except (KeyError, ValueError):
            raise JsonRpcInvalidParams(f"{MCP_SIGN_OUT}: no MCP server '{request.name}' with a url is configured"
                                       ) from None
        return McpSignOutResult(forgotten=forgotten).wire()


def server_info(row: ServerStatus) -> McpServerInfo:
    return McpServerInfo(name=row.name, state=row.state, transport=row.transport, tools=row.tools)
