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

from sunwell.errors import SetupError, SunwellError
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
    from sunwell.agent.sessions import SessionStore
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)


def setup(server: SunwellServer) -> None:
    @server.feature(SESSIONS)
    async def sessions(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, SESSIONS)
        infos = await asyncio.to_thread(_store(ls).list)
        return SessionsResult(sessions=[
            SessionInfo(id=info.id, title=info.title, updated_at=iso_time(info.updated_at), turns=info.turns,
                        status=info.status)
            for info in infos]).wire()

    @server.feature(SESSION)
    async def session(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.session import Session

        request = ls.parse(SessionParams, params, SESSION)
        _store(ls)  # an unusable data dir is RequestFailed, with the reason
        stored = Session(engine_or_fail(ls), request.session)

        def read(session: str) -> SessionResult:
            events = stored.replay()  # first: an unknown session fails here, before any work
            return SessionResult(session=session, messages=stored.messages(), events=events)

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
        from sunwell.tools.workspace.checkpoints import UndoError

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


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def session_model(engine: Engine, session: str) -> str | None:
    """The model string a session's turns go to: the one its chat chose (`::model`), else the configured one."""
    from sunwell.agent.session import Session

    try:
        return str(Session(engine, session).model_spec())
    except SunwellError:
        return None


def engine_or_fail(ls: SunwellServer) -> Engine:
    """The engine; when there is none (no workspace, a broken setting), RequestFailed with the reason."""
    try:
        return ls.engine
    except Unavailable as exc:
        raise RequestFailed(str(exc)) from None


def _store(ls: SunwellServer) -> SessionStore:
    """The engine's store; an unusable data dir is RequestFailed with the reason."""
    from sunwell.agent.sessions import SessionStoreError

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
