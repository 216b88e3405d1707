"""The background processes of every session of one engine: started under a cap, listed, stopped, and ended with
their session (by default) or with the engine (always); found again after a crash (records.py).

Each state change becomes a `process` event. Changes come from the processes' own threads (handle.py) and hop to
the event loop the process was started on; there the event goes to the session's running turn, if one is open
(`attach` hands the table each turn's stream), else to `outside` (the sidecar sends it as a `sunwell/chatEvent`
with no turn). A turn's stream is done once its `done` went out: nothing follows a turn's `done` in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from sunwell.tools.failure import ToolFailure
from sunwell.tools.processes.handle import BackgroundProcess, Launch
from sunwell.tools.processes.records import Record, Records
from sunwell.tools.processes.ring import OutputRing
from sunwell.wire.events import ProcessEvent


class Stream(Protocol):
    """A turn's event stream (agent/turn.py TurnLog)."""

    done: bool

    def emit(self, event: Any) -> Any: ...


class Limits(Protocol):
    """The user's `background:` settings (config/settings.py Background)."""

    max_processes: int
    output_ring_bytes: int
    stop_at_session_end: bool
    writable: list[str]


class ProcessTable:
    def __init__(self, folder: Path, limits: Callable[[], Limits]) -> None:
        self.records = Records(folder)
        self.limits = limits
        self.outside: Callable[[ProcessEvent], None] | None = None
        """Where an event goes while no turn of its session is open (the sidecar's client), else nowhere."""
        self._sessions: dict[str, dict[int, BackgroundProcess]] = {}
        self._streams: dict[str, Stream] = {}
        self._records: dict[int, Record] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reaping: asyncio.Task[list[Record]] | None = None
        self.reaped = threading.Event()
        """Set once the records of dead Sunwells were dealt with (`reap`)."""

    # ---- what a session sees

    def attach(self, session: str, stream: Stream) -> SessionProcesses:
        """`stream` is the session's open turn from now on: its processes' events go there. The first turn also
        has what dead Sunwells left running stopped (`reap`), meanwhile."""
        self._streams[session] = stream
        self._loop = asyncio.get_running_loop()
        self._reaping = self._reaping or self._loop.create_task(self._reap())
        return SessionProcesses(self, session)

    def of(self, session: str) -> list[BackgroundProcess]:
        return sorted(self._sessions.get(session, {}).values(), key=lambda p: p.id)

    def get(self, session: str, process_id: int) -> BackgroundProcess:
        found = self._sessions.get(session, {}).get(process_id)
        if found is None:
            known = ", ".join(str(p.id) for p in self.of(session)) or "none"
            raise ToolFailure("not_found", f"no background process {process_id} in this session (its processes: "
                              f"{known})", "process_list shows the session's processes")
        return found

    def endpoints(self, session: str) -> set[tuple[str, int]]:
        """The loopback (address, port) pairs the session's running processes are reached on."""
        return set().union(*(p.endpoints() for p in self.of(session) if p.running))

    def start(self, session: str, launch: Launch) -> BackgroundProcess:
        """Start `launch` for `session` (on this thread: see handle.py); raises ToolFailure past the cap."""
        limits = self.limits()
        running = [p for p in self.of(session) if p.running]
        if limits.max_processes <= 0:
            raise ToolFailure("unsupported", "background processes are turned off (background.max_processes: 0 in "
                              "the config)", "run the command without background, with a timeout")
        if len(running) >= limits.max_processes:
            shown = "; ".join(f"{p.id}: {p.command}" for p in running)
            raise ToolFailure("rate_limit", f"{len(running)} background processes are running, the most a session "
                              f"may run at once (background.max_processes): {shown}",
                              "stop one you no longer need with process_stop, then start this one")
        self._loop = asyncio.get_running_loop()
        processes = self._sessions.setdefault(session, {})
        process = BackgroundProcess(max(processes, default=0) + 1, session, launch,
                                    OutputRing(limits.output_ring_bytes), self._changed)
        process.start()
        processes[process.id] = process
        self._records[id(process)] = self.records.add(session, process.id, launch.command, process.pid)
        self._changed(process)
        return process

    async def stop(self, session: str, process_id: int) -> BackgroundProcess:
        process = self.get(session, process_id)
        await asyncio.to_thread(process.stop)
        return process

    # ---- ends

    def end_session(self, session: str) -> None:
        """The session ended (`::clear`, its live state released): its processes stop, on a thread of their own,
        unless the user's `background.stop_at_session_end` is false."""
        self._streams.pop(session, None)
        running = [p for p in self.of(session) if p.running]
        if running and self.limits().stop_at_session_end:
            threading.Thread(target=lambda: [p.stop() for p in running], daemon=True).start()

    async def close(self) -> None:
        """Stop every process the engine started (the engine is closing), and finish reaping if it is under way."""
        await self._stop_all([p for session in list(self._sessions) for p in self.of(session)])
        if self._reaping is not None:
            await asyncio.gather(self._reaping, return_exceptions=True)

    async def _stop_all(self, processes: list[BackgroundProcess]) -> None:
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in processes if p.running))

    async def reap(self) -> list[Record]:
        """Stop what dead Sunwells left running on this data dir (records.py), once; each is listed in its session as
        `orphaned` and announced."""
        self._loop = asyncio.get_running_loop()
        self._reaping = self._reaping or self._loop.create_task(self._reap())
        return await asyncio.shield(self._reaping)

    async def _reap(self) -> list[Record]:
        try:
            found = await asyncio.to_thread(self.records.reap)
        finally:
            self.reaped.set()
        for record in found:
            processes = self._sessions.setdefault(record.session, {})
            if record.id in processes:  # this Sunwell numbered a process the same meanwhile: keep both visible
                continue
            processes[record.id] = _orphan(record.id, record.session, record.command, record.pid, self._changed)
            self._changed(processes[record.id])
        return found

    def lost(self, session: str, logged: dict[int, str]) -> list[tuple[int, str]]:
        """Of the processes a session's log saw running last (id -> command), those not running here: listed in the
        session as `orphaned` from now on (a resumed turn reports them, agent/session.py)."""
        processes = self._sessions.setdefault(session, {})
        gone = [(pid, command) for pid, command in logged.items() if not (pid in processes and processes[pid].running)]
        for pid, command in gone:
            processes.setdefault(pid, _orphan(pid, session, command, 0, self._changed))
        return gone

    # ---- events

    def _changed(self, process: BackgroundProcess) -> None:
        """From any thread: the process's state now, as an event, on the loop."""
        if not process.running and (record := self._records.pop(id(process), None)) is not None:
            self.records.remove(record)
        state: Any = process.state  # one of the event's four: BackgroundProcess.state says so
        event = ProcessEvent(process_id=process.id, command=process.command, state=state,
                             exit_code=process.exit_code, ports=process.ports)
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._dispatch, process.session, event)

    def _dispatch(self, session: str, event: ProcessEvent) -> None:
        stream = self._streams.get(session)
        if stream is not None and not stream.done:
            stream.emit(event)
        elif self.outside is not None:
            self.outside(event.model_copy(update={"session": session}))


def _orphan(process_id: int, session: str, command: str, pid: int,
            on_change: Callable[[BackgroundProcess], None]) -> BackgroundProcess:
    """A process found running after Sunwell died (and stopped then), or logged running and gone: a row, no more."""
    return BackgroundProcess(process_id, session, Launch(command, [], "", {}, False, False), OutputRing(1), on_change,
                             state="orphaned", pid=pid)


class SessionProcesses:
    """One session's processes, as a turn's tools get them (ToolContext.processes)."""

    def __init__(self, table: ProcessTable, session: str) -> None:
        self.table, self.session = table, session

    @property
    def limits(self) -> Limits:
        return self.table.limits()

    def start(self, launch: Launch) -> BackgroundProcess:
        return self.table.start(self.session, launch)

    def get(self, process_id: int) -> BackgroundProcess:
        return self.table.get(self.session, process_id)

    def all(self) -> list[BackgroundProcess]:
        return self.table.of(self.session)

    async def stop(self, process_id: int) -> BackgroundProcess:
        return await self.table.stop(self.session, process_id)

    def endpoints(self) -> set[tuple[str, int]]:
        return self.table.endpoints(self.session)

    def route(self, port: int) -> str | None:
        """Where a connection to `port` of one of the session's sandboxed servers goes (its relay's unix socket);
        None: to the port itself (a process with the network of this machine), or nowhere."""
        return next((path for p in self.all() if (path := p.route(port)) is not None), None)
