"""A person on the other side of the client port (wire/client.py), scripted like the model's answers: each request
kind is answered by the function given for it, the others by no one (as `Headless`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sunwell.wire.client import Headless, Request
from sunwell.wire.user_requests import ApproveResult, AskResult, ElicitResult


class Person(Headless):
    def __init__(self, *, approve: Callable[[Any], Awaitable[Any]] | None = None,
                 ask: Callable[[Any], Awaitable[Any]] | None = None,
                 elicit: Callable[[Any], Awaitable[Any]] | None = None,
                 open_url: Callable[[Any], Awaitable[bool]] | None = None) -> None:
        self._answer: dict[Request, Callable[[Any], Awaitable[Any]]] = {
            kind: fn for kind, fn in (("approve", approve), ("ask", ask), ("elicit", elicit), ("openUrl", open_url))
            if fn is not None}

    def answers(self, request: Request) -> bool:
        return request in self._answer

    async def approve(self, request):
        """A decision string, or an ApproveResult."""
        answer = await self._answer["approve"](request)
        return answer if isinstance(answer, ApproveResult) else ApproveResult(decision=answer)

    async def ask(self, request):
        answer = await self._answer["ask"](request)
        return answer if isinstance(answer, AskResult) else AskResult(answer=answer)

    async def elicit(self, request):
        answer = await self._answer["elicit"](request)
        return answer if isinstance(answer, ElicitResult) else ElicitResult.model_validate(answer)

    async def open_url(self, request):
        return await self._answer["openUrl"](request)
