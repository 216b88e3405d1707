"""Ending a background process and everything it started: SIGTERM to its tree and its group, SIGKILL to both after
a grace.

Both, because each misses something: a daemon that called `setsid` has left the group but not the tree (inside the
sandbox's PID namespace it cannot leave the tree: an orphan is adopted by bwrap, its init), and a process whose
parent died has left the tree but not the group. With `sandbox: off` a process that does both (a double fork and
`setsid`) is adopted by the host's init and escapes: nothing tells it from any other process of the user's.
Inside the sandbox, killing bwrap ends the whole PID namespace (its init dies, the kernel kills the rest), and
`--die-with-parent` ends it when Sunwell dies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from sunwell.tools.processes import procfs

GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL: a dev server's time to close its connections and write its caches."""
POLL = 0.05


def signal_all(pid: int, sig: int, *, sandboxed: bool = False) -> dict[int, int | None]:
    """`sig` to `pid`'s tree and to its process group (pid is the group's leader: started with a session of its own);
    the tree it found, each pid with its start time. A SIGTERM to a sandboxed one spares bwrap: bwrap would end at
    once and take the namespace with it (a SIGKILL to everything), leaving the command no time to end cleanly."""
    spare = sandboxed and sig != signal.SIGKILL
    found = {each: procfs.start_time(each) for each in procfs.tree(pid)}
    for each in found:
        if not (spare and procfs.name(each) == "bwrap"):
            with contextlib.suppress(OSError):
                os.kill(each, sig)
    if not spare:
        with contextlib.suppress(OSError):
            os.killpg(pid, sig)
    return found


def end(pid: int, gone: Callable[[], bool], grace: float = GRACE) -> bool:
    """SIGTERM, then SIGKILL if `gone()` is not true within `grace` seconds; True when it went on SIGTERM. Blocking:
    call it in a thread."""
    signal_all(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if gone():
            signal_all(pid, signal.SIGKILL)  # what it left behind in its group or tree, if anything
            return True
        time.sleep(POLL)
    signal_all(pid, signal.SIGKILL)
    return False


def await_group_gone(pgid: int, seconds: float = 1.0) -> None:
    """Wait (a little) until no process is left in group `pgid`: a process sent SIGKILL is still there, its command
    line readable, until the kernel has finished it. Called right after the group's leader was reaped."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:  # ESRCH: nobody left (EPERM: the id is someone else's by now)
            return
        time.sleep(POLL / 5)


def await_gone(processes: dict[int, int | None], seconds: float = GRACE) -> None:
    """Wait (up to `seconds`) until none of `processes` (pid -> start time, as signal_all found them) is alive. A
    process sent SIGKILL dies when the kernel next runs it: on a busy machine, a while after its parent was reaped
    (a sandboxed command runs in a session of its own, outside the group await_group_gone waits for)."""
    deadline = time.monotonic() + seconds
    while any(alive(pid, started) for pid, started in processes.items()) and time.monotonic() < deadline:
        time.sleep(POLL / 5)


def alive(pid: int, started: int | None) -> bool:
    """Whether `pid` is still the process that started at `started` (and not a zombie)."""
    stat = procfs.start_time(pid)
    return stat is not None and stat == started and procfs.state(pid) not in ("Z", "X", None)
