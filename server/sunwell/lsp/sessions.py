"""`sunwell/sessions`, `sunwell/session`, `sunwell/usage`, `sunwell/undo`: the stored conversations, read off the
event loop. `sunwell/session` answers with the session's messages and its replay as events (agent/replay.py).

Its imports of the engine floor (agent/, tools/, config/) are in the handlers: the sidecar answers `initialize`
before it loads the engine (lsp/server.py).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.errors import SetupError
from sunwell.lsp.failures import RequestFailed, Unavailable
from sunwell.wire.protocol import (
    SESSION,
    SESSIONS,
    UNDO,
    USAGE,
    EmptyParams,
    SessionInfo,
    SessionParams,
    SessionResult,
    SessionsResult,
    UndoParams,
    UndoResult,
    UsageParams,
)

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)


def setup(server: SunwellServer) -> None:
    @server.feature(SESSIONS)
    async def sessions(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, SESSIONS)
        from sunwell.agent.session import stored_sessions

        infos = await asyncio.to_thread(stored_sessions, _usable(ls))
        return SessionsResult(sessions=[
            SessionInfo(id=info.id, title=info.title, updated_at=iso_time(info.updated_at), turns=info.turns,
                        status=info.status)
            for info in infos]).wire()

    @server.feature(SESSION)
    async def session(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.session import Session

        request = ls.parse(SessionParams, params, SESSION)
        stored = Session(_usable(ls), request.session)

        def read(session: str) -> SessionResult:
            events = stored.replay()  # first: an unknown session fails here, before any work
            return SessionResult(session=session, messages=stored.messages(), events=events)

        return (await asyncio.to_thread(_known(request.session, read))).wire()

    @server.feature(USAGE)
    async def usage(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.session import Session

        request = ls.parse(UsageParams, params, USAGE)
        engine = _usable(ls)
        usage = await asyncio.to_thread(_known(request.session, lambda session: Session(engine, session).usage()))
        return usage.wire()

    @server.feature(UNDO)
    async def undo(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.exports import UndoError

        request = ls.parse(UndoParams, params, UNDO)
        engine = _usable(ls)
        try:
            result = await asyncio.to_thread(engine.undo, request.session, force=request.force)
        except SetupError as exc:  # an unknown session, or one of another workspace
            raise JsonRpcInvalidParams(str(exc)) from None
        except UndoError as exc:  # a conflict (files changed since), or nothing recorded for that turn
            raise RequestFailed(str(exc)) from None
        return UndoResult(restored=[*result.restored, *result.deleted], turn=result.turn, deleted=result.deleted,
                          conflicts=result.conflicts).wire()


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def engine_or_fail(ls: SunwellServer) -> Engine:
    """The engine; when there is none (no workspace, a broken setting), RequestFailed with the reason."""
    try:
        return ls.engine
    except Unavailable as exc:
        raise RequestFailed(str(exc)) from None


def _usable(ls: SunwellServer) -> Engine:
    """The engine, its session store opened; an unusable data dir is RequestFailed with the reason."""
    from sunwell.agent.session import open_store
    from sunwell.agent.sessions import SessionStoreError

    engine = engine_or_fail(ls)
    try:
        open_store(engine)
    except SessionStoreError as exc:
        raise RequestFailed(str(exc)) from None
    return engine


def _known(session: str, action: Any) -> Any:
    """`action(session)` for a thread, with an unknown session as invalid params (-32602)."""
    from sunwell.agent.sessions import SessionNotFound

    def run() -> Any:
        try:
            return action(session)
        except SessionNotFound as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    return run
