"""`sunwell/sessions`, `sunwell/session`, `sunwell/undo`: the stored conversations, read off the event loop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.lsp.protocol import (
    SESSION,
    SESSIONS,
    UNDO,
    EmptyParams,
    SessionInfo,
    SessionParams,
    SessionResult,
    SessionsResult,
    UndoParams,
    UndoResult,
)

if TYPE_CHECKING:
    from sunwell.agent.sessions import SessionStore
    from sunwell.lsp.server import SunwellServer


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
        messages = await asyncio.to_thread(_known(request.session, _store(ls).messages))
        return SessionResult(session=request.session, messages=messages).wire()

    @server.feature(UNDO)
    async def undo(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.engine import SetupError
        from sunwell.lsp.server import RequestFailed
        from sunwell.tools.checkpoints import UndoError

        request = ls.parse(UndoParams, params, UNDO)
        engine = _engine(ls)
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


def _engine(ls: SunwellServer) -> Any:
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
        return _engine(ls).store
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
