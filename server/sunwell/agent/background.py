"""The background processes as a front end manages them (VS Code's processes strip, `sunwell/processes`,
`sunwell/processStop`): a session's processes as rows, the user's Stop, and where a process's events go while no turn
of its session runs. The engine's own table (tools/processes/table.py), so what is done here is what its turns see;
front ends go through this, never the table.
"""

from __future__ import annotations

from collections.abc import Callable

from sunwell.tools.failure import ToolFailure
from sunwell.tools.processes import ProcessTable
from sunwell.wire.events import ProcessEvent
from sunwell.wire.processes import ProcessInfo

__all__ = ["BackgroundProcesses", "UnknownProcess"]


class UnknownProcess(LookupError):
    """No such process in the session; the message names the ones it has."""


class BackgroundProcesses:
    def __init__(self, table: ProcessTable) -> None:
        self._table = table

    def of(self, session: str) -> list[ProcessInfo]:
        """The session's processes, by id, the ended ones too."""
        return [process.info() for process in self._table.of(session)]

    async def stop(self, session: str, process_id: int) -> ProcessInfo:
        """Stop one (and all it started) and answer once it ended; one that is not running is left as it is.
        UnknownProcess: the session has no such process."""
        try:
            process = self._table.get(session, process_id)
        except ToolFailure as exc:
            raise UnknownProcess(exc.error.message) from None
        if process.running:
            await self._table.stop(session, process_id)
        return process.info()

    async def watch(self, send: Callable[[ProcessEvent], None]) -> None:
        """Events of processes whose session runs no turn go to `send` from now on (with their session, no turn);
        what a dead Sunwell left running on this data dir is stopped, and announced there as `orphaned`."""
        self._table.outside = send
        await self._table.reap()
