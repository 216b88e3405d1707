"""The background processes as a front end manages them (VS Code's processes strip, `sunwell/processes`,
`sunwell/processStop`): a session's processes as rows, the user's Stop, and where a process's events go while no turn
of its session runs. The engine's own table (tools/processes/table.py), so what is done here is what its turns see;
front ends go through this, never the table.
"""

from __future__ import annotations

from collections.abc import Callable

from sunwell.tools.failure import ToolFailure
from sunwell.tools.processes import ProcessTable
from sunwell.tools.processes.handle import BackgroundProcess
from sunwell.wire.events import ProcessEvent
from sunwell.wire.processes import ProcessInfo, ProcessRow

__all__ = ["BackgroundProcesses", "UnknownProcess"]


class UnknownProcess(LookupError):
    """No such process in the session; the message names the ones it has."""


class BackgroundProcesses:
    def __init__(self, table: ProcessTable) -> None:
        self._table = table

    def of(self, session: str, tail: int = 0) -> list[ProcessRow]:
        """The session's processes, by id, the ended ones too; with `tail`, each one's last whole lines within that
        many bytes. Reading a tail moves no reader: the model's next process_output goes on where its last ended."""
        return [ProcessRow(**process.info().model_dump(), isolated=process.launch.isolated,
                           tail=last_lines(process, tail) if tail else None)
                for process in self._table.of(session)]

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


def last_lines(process: BackgroundProcess, limit: int) -> str:
    """The process's output's last `limit` bytes, less a line they begin in the middle of (unless it is the only one)."""
    part = process.ring.tail(limit + 1)  # one byte more: whether the first line is whole
    data = part.data
    if part.start > 0:
        cut = data.find(b"\n", 0, len(data) - 1)
        data = data[cut + 1:] if cut >= 0 else data[1:]
    return data.decode("utf-8", "replace")
