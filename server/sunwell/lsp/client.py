"""The editor on the other side, as the client port (wire/client.py): every request to the user is a request to the
client — `sunwell/approve`, `sunwell/ask`, `sunwell/elicit`, `sunwell/codeIntel`, `sunwell/secret` (docs/sidecar.md) —
and LSP's own `window/showDocument` for a sign-in's page.

What it answers is what the client announced (`initializationOptions.clientCapabilities`: `ask`, `codeIntel`,
`elicit`, `secrets`), read at each request, so a change of the options takes effect at once; approvals and the
browser it always answers (a client that cannot show documents opens nothing, and the `mcp_auth` notice carries the
URL, which the person can open: the sign-in waits for them all the same).

A request abandoned (time limit, cancelled turn) is withdrawn from the client with `$/cancelRequest`, so its card goes
away, and a late answer is ignored. What comes back is checked: an answer that is not of its type is no answer (a
decision the policy denies, no answer to a question, a form declined); the editor's locations are checked by the
tools, through the jail. A secret crosses the wire only between the two processes of one editor window; it is never
in a notice, a log or a result.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pydantic import ValidationError

from sunwell.vocabulary import DECISIONS
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.client import Headless, OpenUrl, Request
from sunwell.wire.protocol import APPROVE, ASK, CODE_INTEL, ELICIT, SECRET
from sunwell.wire.user_requests import (
    ApproveResult,
    AskParams,
    AskResult,
    CodeIntelParams,
    ElicitParams,
    ElicitResult,
    SecretParams,
    SecretResult,
)

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)
ANNOUNCED: dict[Request, str] = {"ask": "ask", "codeIntel": "code_intel", "elicit": "elicit", "secrets": "secrets"}
"""The requests a client answers only when it announced them, by their `clientCapabilities` field."""


class SidecarClient(Headless):
    secret_storage = "VS Code's secret storage"

    def __init__(self, ls: SunwellServer) -> None:
        self.ls = ls

    def answers(self, request: Request) -> bool:
        if request in ("approve", "openUrl"):
            return True
        announced = self.ls.options.client_capabilities
        return request in ANNOUNCED and announced is not None and bool(getattr(announced, ANNOUNCED[request]))

    async def approve(self, request: ApprovalRequest) -> ApproveResult:
        return approve_result(await self._send(APPROVE, request.wire()))

    async def ask(self, request: AskParams) -> AskResult:
        try:
            return AskResult.model_validate(await self._send(ASK, request.wire()))
        except ValidationError:
            log.warning("sunwell/ask got an answer that is not {answer: string | null}; taken as no answer")
            return AskResult(answer=None)

    async def elicit(self, request: ElicitParams) -> ElicitResult:
        try:
            return ElicitResult.model_validate(await self._send(ELICIT, request.wire()))
        except ValidationError:  # declined, like an answer the server's schema refuses
            return ElicitResult(action="decline")

    async def code_intel(self, request: CodeIntelParams) -> Any:
        return await self._send(CODE_INTEL, request.model_dump(by_alias=True, mode="json", exclude_none=True))

    async def secret(self, request: SecretParams) -> SecretResult:
        answer = await self._send(SECRET, request.model_dump(by_alias=True, mode="json", exclude_none=True))
        value = answer.get("value") if isinstance(answer, dict) else None
        return SecretResult(value=value if isinstance(value, str) else None)

    async def open_url(self, request: OpenUrl) -> bool:
        window = self.ls.client_capabilities.window
        if not (window is not None and window.show_document is not None and window.show_document.support):
            return False
        try:
            shown = await self.ls.window_show_document_async(types.ShowDocumentParams(uri=request.url, external=True))
        except Exception as exc:  # noqa: BLE001 - the notice still carries the URL
            log.info("the client did not open the sign-in page of %s: %r", request.server, exc)
            return False
        return bool(getattr(shown, "success", False))

    async def _send(self, method: str, params: dict[str, Any]) -> Any:
        """`method` to the client, its answer; withdrawn if the caller gives up."""
        msg_id = f"{method.rsplit('/', 1)[-1]}-{secrets.token_hex(6)}"
        protocol = self.ls.protocol
        try:
            return await protocol.send_request_async(method, params, msg_id=msg_id)
        except asyncio.CancelledError:
            protocol.forget_request(msg_id)
            raise


def approve_result(answer: Any) -> ApproveResult:
    """The decision and note of a `{decision, note?}` answer (a note that is not a string is dropped); ValueError for
    anything else, which the policy denies."""
    decision = answer.get("decision") if isinstance(answer, dict) else None
    note = answer.get("note") if isinstance(answer, dict) else None
    if decision not in DECISIONS:
        raise ValueError(f"sunwell/approve got no decision it knows: {decision!r}")
    return ApproveResult(decision=decision, note=note if isinstance(note, str) else None)
