"""What else the sidecar asks its client, when the client said it answers (`clientCapabilities`): `ask_user`'s
questions (`sunwell/ask`) and the editor's language features (`sunwell/codeIntel`).

Like approvals (lsp/approvals.py): a question abandoned (time limit, cancelled turn) is withdrawn from the client with
`$/cancelRequest` and a late answer is ignored. What comes back is checked where it is used: a question's answer
here (anything but `{answer: string | null}` is no answer), the editor's locations by the tool, through the jail.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any

from sunwell.wire.protocol import ASK, CODE_INTEL

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer
    from sunwell.wire.protocol import AskParams

log = logging.getLogger(__name__)


async def send(server: SunwellServer, method: str, params: dict[str, Any]) -> Any:
    """`method` to the client, its answer; withdrawn if the caller gives up."""
    msg_id = f"{method.rsplit('/', 1)[-1]}-{secrets.token_hex(6)}"
    protocol = server.protocol
    try:
        return await protocol.send_request_async(method, params, msg_id=msg_id)
    except asyncio.CancelledError:
        protocol.forget_request(msg_id)
        raise


class ClientQuestioner:
    def __init__(self, server: SunwellServer) -> None:
        self.server = server

    async def __call__(self, request: AskParams) -> str | None:
        answer = await send(self.server, ASK, request.wire())
        text = answer.get("answer") if isinstance(answer, dict) else None
        if not (text is None or isinstance(text, str)) or not isinstance(answer, dict):
            log.warning("sunwell/ask got an answer that is not {answer: string | null}; taken as no answer")
            return None
        return text


class ClientCodeIntel:
    def __init__(self, server: SunwellServer) -> None:
        self.server = server

    async def __call__(self, params: dict[str, Any]) -> Any:
        return await send(self.server, CODE_INTEL, params)


def wire_client(ls: SunwellServer, engine: Any) -> None:
    """Give `engine` the client's questioner and language features when the client announced them."""
    announced = ls.options.client_capabilities
    engine.questioner = ClientQuestioner(ls) if announced and announced.ask else None
    engine.code_intel = ClientCodeIntel(ls) if announced and announced.code_intel else None
