"""One background process: started, read into its ring, watched for ports and its end, stopped.

It runs in a session of its own (its own process group) with stdout and stderr on one pipe, as a terminal shows
them. Three threads serve it, none on an event loop, so a process is read and its ports are served while no loop
runs (`sunwell chat` at its prompt): the reader (pipe -> ring), the waiter (its end) and the watcher (its ports,
every WATCH_EVERY s). The waiter sees the end with `waitid(WNOWAIT)`, which leaves the zombie in place: while it is
there its pid cannot be reused, so the group and the tree are signalled without a chance of hitting a stranger; only
then is it reaped. Whatever it left running in its group is killed then, as run_command's leftovers are.

Popen is called on the caller's thread: bwrap's `--die-with-parent` ties the sandbox to the thread that started it,
so that thread must live as long as Sunwell does (the event loop's).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sunwell.tools.failure import ToolFailure
from sunwell.tools.processes import procfs, stopping
from sunwell.tools.processes.forward import Publisher
from sunwell.tools.processes.ring import OutputRing
from sunwell.wire.processes import ProcessInfo

WATCH_EVERY = 1.0
CHUNK = 1 << 16


@dataclass(frozen=True)
class Launch:
    """What to start, checked and wrapped in its sandbox already (tools/handlers/shell.py)."""

    command: str
    """As the model wrote it: what lists and events show."""
    argv: list[str]
    cwd: str
    env: dict[str, str]
    sandboxed: bool
    """Run in bwrap (its first two processes are bwrap's)."""
    isolated: bool
    """Sandboxed without network: its ports are reached through a relay (forward.py), never on the host's TCP."""
    on_end: Callable[[], str] | None = None
    """Run in a thread once it ended (the workspace scanned for what it planted); a note for the model, or ""."""


@dataclass
class BackgroundProcess:
    id: int
    session: str
    launch: Launch
    ring: OutputRing
    on_change: Callable[[BackgroundProcess], None]
    state: str = "running"
    """running, exited (by itself), stopped (by Sunwell), orphaned (found running after Sunwell died; stopped)."""
    exit_code: int | None = None
    started: float = field(default_factory=time.time)
    pid: int = 0
    read_to: int = 0
    """Where the model's last process_output read ended: the next one goes on from there."""
    notes: list[str] = field(default_factory=list)
    """What Sunwell says of it beside its output (its ports unreachable, what it planted)."""
    _ports: set[tuple[str, int]] = field(default_factory=set)
    _proc: subprocess.Popen[bytes] | None = None
    _publisher: Publisher | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _watching: threading.Lock = field(default_factory=threading.Lock)
    _ended: threading.Event = field(default_factory=threading.Event)
    _stopping: bool = False
    _reaped: bool = False
    _started_at: int | None = None
    """Its start time (clock ticks since boot): with the pid, what tells it from a process that got its number."""

    @property
    def command(self) -> str:
        return self.launch.command

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def ports(self) -> list[int]:
        return sorted({port for _, port in self._ports})

    def info(self) -> ProcessInfo:
        """It as it is now, on the wire (a processes strip's row, the tools' `toolResult.data`)."""
        started = datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return ProcessInfo(process_id=self.id, command=self.command, state=self.state,  # type: ignore[arg-type]
                           exit_code=self.exit_code, ports=self.ports, started=started)

    def endpoints(self) -> set[tuple[str, int]]:
        """(loopback address, port) of this machine where this process listens while it runs, read now (a port it
        closed is not its any more); none when it is isolated: its ports are reached through `route` only."""
        if not self.running or self.launch.isolated:
            return set()
        return procfs.listening(procfs.tree(self.pid))

    def start(self) -> None:
        launch = self.launch
        try:
            self._proc = subprocess.Popen(launch.argv, cwd=launch.cwd, env=launch.env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise ToolFailure("execution", f"could not start the command: {exc}") from None
        self.pid = self._proc.pid
        self._started_at = procfs.start_time(self.pid)
        for name, target in (("read", self._read), ("wait", self._wait), ("watch", self._watch)):
            threading.Thread(target=target, daemon=True, name=f"sunwell-process-{self.id}-{name}").start()

    def stop(self) -> None:
        """SIGTERM to its tree and group, SIGKILL after the grace; returns once it and all it ran ended (a sandboxed
        command's own session too, which is not bwrap's group). Blocking: a thread's."""
        signalled: dict[int, int | None] = {}
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with self._lock:  # never once it is reaped: its pid may be someone else's by then
                if self._reaped or not stopping.alive(self.pid, self._started_at):
                    break
                self._stopping = True
                signalled |= stopping.signal_all(self.pid, sig, sandboxed=self.launch.sandboxed)
            if self._ended.wait(stopping.GRACE):
                break
        self._ended.wait(stopping.GRACE)
        stopping.await_gone(signalled)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while chunk := os.read(fd, CHUNK):
            self.ring.write(chunk)
        self._proc.stdout.close()

    def _wait(self) -> None:
        assert self._proc is not None
        zombie = True
        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:  # ended, and reaped by another waiter in this process: its pid is not ours now
            zombie = False
        with self._lock:
            if zombie:  # its pid and group id are still ours to signal
                stopping.signal_all(self.pid, signal.SIGKILL)
            code = self._proc.wait()
            self._reaped = True
        stopping.await_group_gone(self.pid)
        with self._watching:  # a look under way finishes first; any later one finds it reaped and makes no relay
            if self._publisher is not None:
                self._publisher.close()
        note = self.launch.on_end() if self.launch.on_end is not None else ""
        if note:
            self.notes.append(note)
        self.exit_code = 128 - code if code < 0 else code
        self.state = "stopped" if self._stopping else "exited"
        self._ports = set()
        self._ended.set()
        self.on_change(self)

    def look(self) -> None:
        """Read its ports now (and open a way to new ones); an event if they changed. The watcher does it every
        WATCH_EVERY s; a start does it once before it answers, so the ports it reports are reachable already."""
        with self._watching:
            with self._lock:
                if self._reaped:
                    return
                pids = procfs.tree(self.pid)
            found = procfs.listening(pids)
            if self.launch.isolated:
                found = self._publish(found, pids)
            if found != self._ports and not self._ended.is_set():
                self._ports = found
                self.on_change(self)

    def _watch(self) -> None:
        while not self._ended.wait(WATCH_EVERY):
            self.look()

    def _publish(self, found: set[tuple[str, int]], pids: list[int]) -> set[tuple[str, int]]:
        """The ports of `found` reachable through the relay from now on, as the loopback addresses a URL names them
        by (the relay tries 127.0.0.1, then ::1, in the namespace)."""
        wanted = {port for _, port in found}
        if not wanted:
            return set()
        if self._publisher is None:
            inside = next((pid for pid in pids if procfs.other_network(pid)), None)
            if inside is None:
                return set()
            try:
                self._publisher = Publisher(inside)
            except OSError as exc:
                self._note(f"its ports cannot be reached from outside the sandbox: {exc}")
                return set()
        for port in wanted:
            self._publisher.publish(port)
        return {(host, port) for port in wanted for host in ("127.0.0.1", "::1")}

    def route(self, port: int) -> str | None:
        """The unix socket that reaches `port` of an isolated process while it runs, else None."""
        publisher = self._publisher
        if not self.running or publisher is None or ("127.0.0.1", port) not in self._ports:
            return None
        return publisher.paths.get(port)

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)
