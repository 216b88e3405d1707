"""Elicitation over the wire: an MCP server's question to the user as a `sunwell/elicit` request to the client
(docs/sidecar.md "sunwell/elicit"), sent only when the client announced `clientCapabilities.elicit`; the answer
is checked against the server's schema by the bridge (tools/mcp/elicitation.py), which declines what does not
fit."""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any

from sunwell.wire.protocol import ELICIT

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer


class ClientElicitor:
    def __init__(self, server: SunwellServer) -> None:
        self.server = server

    async def __call__(self, session: str, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        msg_id = f"elicit-{secrets.token_hex(6)}"
        protocol = self.server.protocol
        params = {"session": session, "server": server, "message": message, "schema": schema}
        try:
            answer = await protocol.send_request_async(ELICIT, params, msg_id=msg_id)
        except asyncio.CancelledError:
            protocol.forget_request(msg_id)
            raise
        return answer if isinstance(answer, dict) else {"action": "decline"}


def wants_elicit(options: Any) -> bool:
    """Whether the client announced it answers `sunwell/elicit` (initializationOptions.clientCapabilities)."""
    capabilities = getattr(options, "client_capabilities", None)
    return bool(capabilities is not None and capabilities.elicit)
