"""The client port as a turn's tools meet it: `ask_user`'s questions (and learn_api's) under the approval time limit.

The front end's client (wire/client.py) answers; a question it fails to answer, or does not answer in time, is no
answer, like an approval that gets none. With approvals set to `deny` no one is asked anything: the tools then hear
that no one answers questions, and say so to the model at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sunwell.config import Settings
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.client import Client, OpenUrl, Request
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

log = logging.getLogger(__name__)


class TurnClient:
    """`client` for the tools of one turn: questions bounded by `settings`' approval mode and time limit; the
    requests in `refused` are not put to anyone (a sub-agent asks the person nothing)."""

    def __init__(self, client: Client, settings: Settings, refused: frozenset[Request] = frozenset()) -> None:
        self.client, self.settings, self.refused = client, settings, refused
        self.secret_storage = client.secret_storage

    def answers(self, request: Request) -> bool:
        if request in self.refused or (request == "ask" and self.settings.approval == "deny"):
            return False
        return self.client.answers(request)

    async def ask(self, request: AskParams) -> AskResult:
        try:
            return await asyncio.wait_for(self.client.ask(request), timeout=self.settings.approval_timeout_sec)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a client that errors or never answers: no answer
            log.warning("the question of %s got no answer: %r", request.call_id, exc)
            return AskResult(answer=None)

    async def approve(self, request: ApprovalRequest) -> ApproveResult:
        return await self.client.approve(request)

    async def elicit(self, request: ElicitParams) -> ElicitResult:
        return await self.client.elicit(request)

    async def code_intel(self, request: CodeIntelParams) -> Any:
        return await self.client.code_intel(request)

    async def open_url(self, request: OpenUrl) -> bool:
        return await self.client.open_url(request)

    async def secret(self, request: SecretParams) -> SecretResult:
        return await self.client.secret(request)
