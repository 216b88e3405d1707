"""`ask_user`'s way to a person: the front end's questioner, bound to a turn, under the approval time limit.

The front end that has someone to ask gives the engine a `Questioner` (the terminal prompt, the sidecar's
`sunwell/ask`); a question it fails to answer, or does not answer in time, is no answer, like an approval that
gets none. With approvals set to `deny` no one is asked anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sunwell.config import Settings
from sunwell.wire.protocol import AskParams

log = logging.getLogger(__name__)

Questioner = Callable[[AskParams], Awaitable[str | None]]
"""Asks a person; their answer, or None when they declined."""
Ask = Callable[[str, str, list[str]], Awaitable[str | None]]


def question_asker(questioner: Questioner | None, settings: Settings, session: str, turn: str) -> Ask | None:
    """ToolContext.ask for a turn of `session`, or None when no one can be asked."""
    if questioner is None or settings.approval == "deny":
        return None
    timeout = settings.approval_timeout_sec

    async def ask(call_id: str, question: str, options: list[str]) -> str | None:
        request = AskParams(session=session, turn=turn, call_id=call_id, question=question, options=options)
        try:
            answer = await asyncio.wait_for(questioner(request), timeout=timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a client that errors or never answers: no answer
            log.warning("the question of %s got no answer: %r", call_id, exc)
            return None
        return answer if isinstance(answer, str) else None

    return ask
