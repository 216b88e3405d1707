"""`sunwell/sessions`, `sunwell/session`, `sunwell/undo`: the stored conversations, read off the event loop.

`sunwell/session` also replays the session's log as events (`replay`), so that a client rebuilds a transcript with
the same code that draws the live stream, and keeps no copy of its own to reconcile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, get_args

from pydantic import TypeAdapter, ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from sunwell.agent.events import DoneEvent, Event, TextEvent, ThinkingEvent, ToolCallEvent
from sunwell.agent.mentions import labels, without_attachments
from sunwell.lsp.protocol import (
    SESSION,
    SESSIONS,
    UNDO,
    USAGE,
    EmptyParams,
    SessionEvent,
    SessionInfo,
    SessionParams,
    SessionResult,
    SessionsResult,
    UndoParams,
    UndoResult,
    UsageParams,
    UserMessageEvent,
)
from sunwell.messages import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from sunwell.agent.sessions import EventRow, SessionStore
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_EVENT: TypeAdapter[Event] = TypeAdapter(Event)
UNFINISHED = "the turn did not finish: the sidecar stopped while it ran"


def setup(server: SunwellServer) -> None:
    @server.feature(SESSIONS)
    async def sessions(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, SESSIONS)
        infos = await asyncio.to_thread(_store(ls).list)
        return SessionsResult(sessions=[
            SessionInfo(id=info.id, title=info.title, updated_at=iso_time(info.updated_at), turns=info.turns)
            for info in infos]).wire()

    @server.feature(SESSION)
    async def session(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(SessionParams, params, SESSION)
        store = _store(ls)

        def read(session: str) -> SessionResult:
            rows = store.events(session)  # first: an unknown session fails here, before any work
            return SessionResult(session=session, messages=store.messages(session), events=replay(rows))

        return (await asyncio.to_thread(_known(request.session, read))).wire()

    @server.feature(USAGE)
    async def usage(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.usage import session_usage

        request = ls.parse(UsageParams, params, USAGE)
        engine = engine_or_fail(ls)
        store = _store(ls)
        model = session_model(engine, request.session)
        rows = await asyncio.to_thread(_known(request.session, store.events))
        return session_usage(rows, model, engine.settings.prices).wire()

    @server.feature(UNDO)
    async def undo(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.engine import SetupError
        from sunwell.lsp.server import RequestFailed
        from sunwell.tools.checkpoints import UndoError

        request = ls.parse(UndoParams, params, UNDO)
        engine = engine_or_fail(ls)
        _store(ls)
        try:
            result = await asyncio.to_thread(engine.undo, request.session, force=request.force)
        except SetupError as exc:  # an unknown session, or one of another workspace
            raise JsonRpcInvalidParams(str(exc)) from None
        except UndoError as exc:  # a conflict (files changed since), or nothing recorded for that turn
            raise RequestFailed(str(exc)) from None
        return UndoResult(restored=[*result.restored, *result.deleted], turn=result.turn, deleted=result.deleted,
                          conflicts=result.conflicts).wire()


def replay(rows: Iterable[EventRow]) -> list[SessionEvent]:
    """A session's log as the events a client replays: per turn, the user's line (`userMessage`), the events the
    log kept, each answer's text and thinking whole (the log folds their deltas into the message: they go back
    before the calls of the same answer, where the stream had them), and one `done`, made up for a turn the log
    never saw end. Rows of kinds this Sunwell does not know are left out."""
    turns: list[list[SessionEvent]] = []
    for row in rows:
        turn = turns[-1] if turns and turns[-1][0].turn == row.turn else None
        if row.kind == "message":
            message = _parse(_MESSAGE, row)
            if isinstance(message, UserMessage) and turn is None:
                turns.append([UserMessageEvent(session=row.session, turn=row.turn, seq=row.seq,
                                               text=without_attachments(message.text), mentions=labels(message.text))])
            elif isinstance(message, AssistantMessage) and turn is not None:
                ids = {call.id for call in message.tool_calls}
                at = next((i for i, e in enumerate(turn) if isinstance(e, ToolCallEvent) and e.call_id in ids),
                          len(turn))
                where = {"session": row.session, "turn": row.turn, "seq": row.seq}
                turn[at:at] = [*([ThinkingEvent(delta=message.thinking, **where)] if message.thinking else []),
                               *([TextEvent(delta=message.text, **where)] if message.text else [])]
            # not shown, as the stream does not show them: the loop's own prompts (a limit reached), tool results
            # (their events carry them), system messages
        elif row.kind in _EVENT_TYPES and turn is not None and (event := _parse(_EVENT, row)) is not None:
            turn.append(event)
    for turn in turns:
        if not isinstance(turn[-1], DoneEvent):
            last = turn[-1]
            calls = sum(isinstance(e, ToolCallEvent) for e in turn)
            turn.append(DoneEvent(session=last.session, turn=last.turn, seq=last.seq + 1, status="error",
                                  tool_calls=calls, usage=None, error=UNFINISHED))
    return [event for turn in turns for event in turn]


def _parse(adapter: TypeAdapter[Any], row: EventRow) -> Any:
    try:
        return adapter.validate_python(row.data)
    except ValidationError as exc:  # a row of a newer Sunwell, say: the rest of the session still shows
        log.warning("session %s: event %d is not one I can replay (%s)", row.session, row.id, exc.errors()[0]["msg"])
        return None


_EVENT_TYPES = frozenset(model.model_fields["type"].default for model in get_args(get_args(Event)[0]))


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def session_model(engine: Any, session: str) -> str | None:
    """The model string a session's turns go to: the one its chat chose (`::model`), else the configured one."""
    from sunwell.errors import SunwellError

    live = engine.live.get(session) if session in engine.live else None
    chosen = getattr(getattr(live, "chat", None), "model", None)
    try:
        return str(engine.model_spec(chosen))
    except SunwellError:
        return None


def engine_or_fail(ls: SunwellServer) -> Any:
    """The engine; when there is none (no workspace, a broken setting), RequestFailed with the reason."""
    from sunwell.lsp.server import RequestFailed, Unavailable

    try:
        return ls.engine
    except Unavailable as exc:
        raise RequestFailed(str(exc)) from None


def _store(ls: SunwellServer) -> SessionStore:
    """The engine's store; an unusable data dir is RequestFailed with the reason."""
    from sunwell.agent.sessions import SessionStoreError
    from sunwell.lsp.server import RequestFailed

    try:
        return engine_or_fail(ls).store
    except SessionStoreError as exc:
        raise RequestFailed(str(exc)) from None


def _known(session: str, action: Any) -> Any:
    """`action(session)` for a thread, with an unknown session as invalid params (-32602)."""
    from sunwell.agent.sessions import SessionNotFound

    def run() -> Any:
        try:
            return action(session)
        except SessionNotFound as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    return run
