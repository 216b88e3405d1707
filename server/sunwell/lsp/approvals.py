"""Approvals over the wire: the engine's `Asker` as a `sunwell/approve` request to the client.

The policy (`ApprovalPolicy.decide`) owns the rules: its time limit, and that an error or an unknown answer means
deny. This adapter only asks, and when the question is abandoned (time limit, cancelled turn) it tells the client
with `$/cancelRequest`, so the approval card goes away, and ignores an answer that comes too late.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any

from sunwell.tools.policy.approval import Answer
from sunwell.wire.protocol import APPROVE

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer
    from sunwell.tools.policy.approval import ApprovalRequest


class ClientAsker:
    def __init__(self, server: SunwellServer) -> None:
        self.server = server

    async def __call__(self, request: ApprovalRequest) -> Answer:
        msg_id = f"approve-{secrets.token_hex(6)}"
        protocol = self.server.protocol
        try:
            answer = await protocol.send_request_async(APPROVE, request.wire(), msg_id=msg_id)
        except asyncio.CancelledError:
            protocol.forget_request(msg_id)
            raise
        return answer_of(answer)


def answer_of(answer: Any) -> Answer:
    """The decision and note of a `{decision, note?}` answer; anything else is "" (which the policy denies)."""
    decision = answer.get("decision") if isinstance(answer, dict) else None
    note = answer.get("note") if isinstance(answer, dict) else None
    return Answer(decision if isinstance(decision, str) else "", note if isinstance(note, str) else None)
