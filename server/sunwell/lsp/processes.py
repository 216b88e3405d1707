"""`sunwell/processes` and `sunwell/processStop`: a session's background processes as VS Code's processes strip
shows them, and its Stop; and the `process` events that come while no turn of the session runs (a server that
exits between turns, what a dead sidecar left running, stopped when this one starts), sent as `sunwell/chatEvent`
with no turn. All through the engine's facade (agent/background.py).

Its imports of the engine floor are in the handlers: the sidecar answers `initialize` before it loads the engine
(lsp/server.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.lsp.sessions import engine_or_fail
from sunwell.wire.protocol import (
    PROCESS_STOP,
    PROCESSES,
    ProcessesParams,
    ProcessesResult,
    ProcessStopParams,
    ProcessStopResult,
)

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer


def setup(server: SunwellServer) -> None:
    @server.feature(PROCESSES)
    def processes(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(ProcessesParams, params, PROCESSES)
        return ProcessesResult(processes=engine_or_fail(ls).background.of(request.session, request.tail)).wire()

    @server.feature(PROCESS_STOP)
    async def stop(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.background import UnknownProcess

        request = ls.parse(ProcessStopParams, params, PROCESS_STOP)
        try:
            process = await engine_or_fail(ls).background.stop(request.session, request.process_id)
        except UnknownProcess as exc:
            raise JsonRpcInvalidParams(f"{PROCESS_STOP}: {exc}") from None
        return ProcessStopResult(process=process).wire()

    async def outside_turns() -> None:
        """Each new engine's events outside turns go to the client; what a dead sidecar left running is stopped."""
        await engine_or_fail(server).background.watch(
            lambda event: server.send_event(event.model_dump_json(by_alias=True)))

    server.on_engine(outside_turns)
