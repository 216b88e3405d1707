"""`sunwell/worktrees`, `sunwell/worktreeAction` and `sunwell/chat`'s `worktree`: worktree sessions through the
sidecar (agent/worktree_sessions.py). A line sent with `worktree` runs in an engine of its own whose workspace is
the worktree's checkout, with that checkout's settings (its workspace config only narrows); the engines are kept
by checkout, so two worktree sessions run side by side, each with its approvals (they name their session). Git's
work (a checkout, a commit, a merge) runs off the event loop.

Its imports of the engine floor are in the handlers: the sidecar answers `initialize` before it loads the engine
(lsp/server.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.errors import SetupError
from sunwell.lsp.failures import RequestFailed
from sunwell.lsp.sessions import engine_or_fail
from sunwell.wire.protocol import WORKTREE_ACTION, WORKTREES, EmptyParams
from sunwell.wire.worktrees import WorktreeActionParams, WorktreeActionResult, WorktreesResult

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine
    from sunwell.agent.worktree_sessions import WorktreeSessions
    from sunwell.lsp.server import SunwellServer
    from sunwell.wire.events import DoneEvent


def setup(server: SunwellServer) -> None:
    @server.feature(WORKTREES)
    async def worktrees(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, WORKTREES)
        rows = await _off_loop(ls, lambda sessions: sessions.rows())
        return WorktreesResult(worktrees=rows).wire()

    @server.feature(WORKTREE_ACTION)
    async def action(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(WorktreeActionParams, params, WORKTREE_ACTION)
        return (await _off_loop(ls, lambda sessions: _act(sessions, request))).wire()

    def close_engines() -> None:
        """Their MCP servers and background processes stopped, at `shutdown` (the event loop still runs)."""
        engines, server.worktree_engines = list(server.worktree_engines.values()), {}
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the stream closed without `shutdown`: the process ends, and its children with it
            return
        for engine in engines:
            server.run_task(engine.aclose())

    server.on_shutdown(close_engines)


async def worktree_turn(ls: SunwellServer, name: str, line: str, session: str | None,
                        turn: Callable[[Engine, str | None], Awaitable[DoneEvent]], base: str | None = None) -> DoneEvent:
    """`turn` run by the engine of worktree `name` (made when new), in its session unless `session` names one;
    refused before anything runs when `worktrees.max_running` turns run already. Its changes are committed after."""
    from sunwell.agent.session import latest_session

    sessions = await _off_loop(ls, lambda sessions: sessions)
    row, _ = await _off_loop(ls, lambda _: sessions.open(name, line, base), sessions)
    end = await _off_loop(ls, lambda _: sessions.begin(row.name), sessions)
    try:
        engine = sessions.equip(_engine_for(ls, sessions.workspace_of(row)), row)
        # a first turn killed before its end recorded the row's session: the newest of the checkout's is it
        done = await turn(engine, session or row.session or await asyncio.to_thread(latest_session, engine))
        end.session, end.status = done.session, done.status
        return done
    finally:
        await asyncio.to_thread(sessions.end, row.name, line, end)


def _act(sessions: WorktreeSessions, request: WorktreeActionParams) -> WorktreeActionResult:
    from sunwell.agent.worktree_sessions import row_of

    match request.action:
        case "merge":
            merged = sessions.merge(request.name, request.into)
            message = f"merged {sessions.worktrees.get(request.name).branch} into {merged.into}: {merged.how}"
            row = sessions.worktrees.get(request.name)
        case "discard":
            row = sessions.drop(request.name, force=request.force)
            message = f"removed worktree {row.name} and its branch {row.branch}"
        case _:
            row = sessions.worktrees.get(request.name)
            message = f"send the next line with worktree {row.name} to continue its session"
    return WorktreeActionResult(worktree=row_of(row), message=message)


async def _off_loop(ls: SunwellServer, work: Callable[[WorktreeSessions], Any],
                    sessions: WorktreeSessions | None = None) -> Any:
    """`work` on the workspace's worktree sessions in a thread; its one-line failure the request's error."""
    from sunwell.agent.worktree_sessions import NAME_RULE, WorktreeSessions

    def run() -> Any:
        return work(sessions or WorktreeSessions(engine_or_fail(ls).settings, ls.root))

    try:
        return await asyncio.to_thread(run)
    except SetupError as exc:
        raise (JsonRpcInvalidParams if NAME_RULE in str(exc) else RequestFailed)(str(exc)) from None


def _engine_for(ls: SunwellServer, workspace: Path) -> Engine:
    """The engine of a worktree's checkout, made on its first line: the checkout's settings and the client's
    options, as the workspace's own engine has them."""
    from sunwell.agent.engine import Engine
    from sunwell.lsp.client import SidecarClient
    from sunwell.lsp.configuration import resolve_settings

    engine = ls.worktree_engines.get(workspace)
    if engine is None:
        settings, problems = resolve_settings(workspace, ls.options)
        for problem in problems:
            ls.show_message(problem)
        engine = ls.worktree_engines[workspace] = Engine(settings, workspace, client=SidecarClient(ls))
    return engine
