"""A stored session replayed as the events its turns sent, so that a front end rebuilds a transcript with the same
code that draws the live stream, and keeps no copy of its own to reconcile (`sunwell/session`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, TypeVar, get_args

from pydantic import TypeAdapter, ValidationError

from sunwell.agent.sessions import EventRow
from sunwell.wire.events import (
    DoneEvent,
    Event,
    SessionEvent,
    TextEvent,
    ThinkingEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from sunwell.wire.messages import AssistantMessage, Message, UserMessage

log = logging.getLogger(__name__)
T = TypeVar("T")
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_EVENT: TypeAdapter[Event] = TypeAdapter(Event)
_EVENT_TYPES = frozenset(model.model_fields["type"].default for model in get_args(get_args(Event)[0]))
UNFINISHED = "the turn did not finish: the process running it ended; it can be resumed"


def replay(rows: Iterable[EventRow]) -> list[SessionEvent]:
    """A session's log as the events a client replays: per turn, the user's line (`userMessage`), the events the
    log kept, each answer's text and thinking whole (the log folds their deltas into the message: they go back
    before the calls of the same answer, where the stream had them), and one `done`, made up (status `interrupted`)
    for a turn the log never saw end; a turn resumed after a provider error shows only its last `done`. Rows of kinds this Sunwell does not know are left out."""
    turns: list[list[SessionEvent]] = []
    for row in rows:
        turn = turns[-1] if turns and turns[-1][0].turn == row.turn else None
        if row.kind == "message":
            message = _parse(_MESSAGE, row)
            if isinstance(message, UserMessage) and turn is None:
                labels = [attachment.label for attachment in message.attachments]
                turns.append([UserMessageEvent(session=row.session, turn=row.turn, seq=row.seq, text=message.text,
                                               mentions=labels, image_count=len(message.images) or None)])
            elif isinstance(message, AssistantMessage) and turn is not None:
                ids = {call.id for call in message.tool_calls}
                at = next((i for i, e in enumerate(turn) if isinstance(e, ToolCallEvent) and e.call_id in ids),
                          len(turn))
                where: dict[str, Any] = {"session": row.session, "turn": row.turn, "seq": row.seq}
                turn[at:at] = [*([ThinkingEvent(delta=message.thinking, **where)] if message.thinking else []),
                               *([TextEvent(delta=message.text, **where)] if message.text else [])]
            # not shown, as the stream does not show them: the loop's own prompts (a limit reached), tool results
            # (their events carry them), system messages
        elif row.kind in _EVENT_TYPES and turn is not None and (event := _parse(_EVENT, row)) is not None:
            if isinstance(turn[-1], DoneEvent):  # a turn taken up again after a provider error: one `done`, last
                turn.pop()
            turn.append(event)
    for turn in turns:
        if not isinstance(turn[-1], DoneEvent):
            last = turn[-1]
            calls = sum(isinstance(e, ToolCallEvent) for e in turn)
            turn.append(DoneEvent(session=last.session, turn=last.turn, seq=last.seq + 1, status="interrupted",
                                  tool_calls=calls, usage=None, error=UNFINISHED, resumable=True))
    return [event for turn in turns for event in turn]


def _parse(adapter: TypeAdapter[T], row: EventRow) -> T | None:
    try:
        return adapter.validate_python(row.data)
    except ValidationError as exc:  # a row of a newer Sunwell, say: the rest of the session still shows
        log.warning("session %s: event %d is not one I can replay (%s)", row.session, row.id, exc.errors()[0]["msg"])
        return None
