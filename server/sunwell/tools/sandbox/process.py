"""Running one process with bounded output: its own process group, output capped while it is read, the whole
group stopped when it ends, times out or the turn is cancelled (SIGTERM, then SIGKILL after KILL_GRACE s), so
nothing it started outlives it. run_command uses it for commands, staged or not.

Windows has no process groups to signal and its event loop cannot read anonymous pipes: there the process itself
is killed and its output read through asyncio's own pipes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable

from sunwell.tools.base import ToolFailure
from sunwell.tools.output import char_boundary, truncate

KILL_GRACE = 2.0  # between SIGTERM and SIGKILL
_SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has no SIGKILL (and kills the process either way)
DRAIN_GRACE = 2.0  # reading what is left in the pipes once the process is gone
CHUNK = 1 << 16
WATCH_EVERY = 0.5  # s between two looks at a staged command's size
NOTICE_ROOM = 400  # bytes kept under the cap for the section header, the truncation notice and the exit line
MORE_HINT = (
    "redirect the output to a file (cmd > out.txt 2>&1) and read it with read_file or search_files, "
    "or filter it (| tail -n 100, | grep PATTERN)"
)


class Capture:
    """One output stream, bounded while it is read: its first and last `keep` bytes, and how many there were."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(len(self.tail) - self.keep, 0)]

    def text(self, budget: int) -> str:
        """All of it if it fits in `budget` bytes, else its head and tail around a line saying what was left out."""
        if self.total <= budget:
            return (self.head + self.tail).decode("utf-8", "replace")
        marker_room = len(f"\n[... {self.total:,} bytes omitted ...]\n")
        half = max(budget - marker_room, 0) // 2
        head = bytes(self.head[: char_boundary(bytes(self.head), half)])
        if (nl := head.rfind(b"\n")) >= half // 2:
            head = head[: nl + 1]
        tail = bytes(self.tail[len(self.tail) - half :] if half else b"")
        while tail and (tail[0] & 0xC0) == 0x80:  # don't start inside a UTF-8 character
            tail = tail[1:]
        if 0 <= (nl := tail.find(b"\n")) < len(tail) // 2:
            tail = tail[nl + 1 :]
        omitted = self.total - len(head) - len(tail)
        sep = "" if head.endswith(b"\n") or not head else "\n"
        marker = f"{sep}[... {omitted:,} bytes omitted ...]\n"
        return head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")


def render(out: Capture, err: Capture, last_line: str, max_bytes: int) -> str:
    """stdout, then a `[stderr]` section if there was any, then `last_line`; at most max_bytes in all."""
    budget = max(max_bytes - NOTICE_ROOM - len(last_line), 0)
    cut = out.total + err.total > budget
    if not cut:
        out_budget, err_budget = out.total, err.total
    elif err.total <= budget // 2:
        out_budget, err_budget = budget - err.total, err.total
    elif out.total <= budget // 2:
        out_budget, err_budget = out.total, budget - out.total
    else:
        out_budget = err_budget = budget // 2
    parts = [out.text(out_budget)] if out.total else []
    if err.total:
        parts.append("[stderr]\n" + err.text(err_budget))
    body = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
    if cut:
        body += f"[output truncated: showed {len(body.encode()):,} of {out.total + err.total:,} bytes; {MORE_HINT}]\n"
    # Invalid UTF-8 decodes to 3-byte replacement characters: the only way past the budget; cut again if it happened.
    body = truncate(body, max(max_bytes - len(last_line) - 2, 0), MORE_HINT)
    separator = "" if body.endswith("\n") or not body else "\n"
    return truncate(body + separator + last_line, max_bytes, MORE_HINT)


async def run_process(
    argv: list[str], cwd: str, env: dict[str, str], timeout: float, keep: int,
    over: Callable[[], str | None] | None = None, stdin: int | None = None,
) -> tuple[int | None, Capture, Capture]:
    """Run argv; (exit code or None on timeout, stdout, stderr). On cancellation the group is killed first, and
    as soon as `over()` (asked every WATCH_EVERY s, in a thread) says a limit was passed. `stdin` is a file
    descriptor to read from (a hook's call as JSON), else nothing."""
    stdin = asyncio.subprocess.DEVNULL if stdin is None else stdin
    if sys.platform == "win32":
        return await _run_windows(argv, cwd, env, timeout, keep, over, stdin)
    # Our own pipes, not asyncio's: Python 3.11's Process.wait() also waits for the pipes to close, which a
    # backgrounded grandchild can keep open for ever.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=stdin, stdout=out_w, stderr=err_w, cwd=cwd, env=env,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        for fd in (out_r, err_r):
            os.close(fd)
        raise ToolFailure("execution", f"could not start the command: {exc}") from None
    finally:
        for fd in (out_w, err_w):
            os.close(fd)
    out, err = Capture(keep), Capture(keep)
    readers = [asyncio.create_task(_read(fd, capture)) for fd, capture in ((out_r, out), (err_r, err))]
    code = await _until_done(proc, readers, timeout, over)
    if code is not None and code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return code, out, err


async def _until_done(proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]], timeout: float,
                      over: Callable[[], str | None] | None) -> int | None:
    """The exit code, or None when `timeout` passed first; the process (its group) stopped and its output read."""
    code: int | None = None
    try:
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(_wait(proc, over), timeout)
    finally:
        try:
            await _stop_group(proc)
        finally:
            await _finish(readers)
    return code


async def _run_windows(
    argv: list[str], cwd: str, env: dict[str, str], timeout: float, keep: int,
    over: Callable[[], str | None] | None, stdin: int,
) -> tuple[int | None, Capture, Capture]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=cwd, env=env,
        )  # fmt: skip
    except OSError as exc:
        raise ToolFailure("execution", f"could not start the command: {exc}") from None
    out, err = Capture(keep), Capture(keep)

    async def read(stream: asyncio.StreamReader | None, capture: Capture) -> None:
        while stream is not None and (chunk := await stream.read(CHUNK)):
            capture.add(chunk)

    readers = [asyncio.create_task(read(proc.stdout, out)), asyncio.create_task(read(proc.stderr, err))]
    code = await _until_done(proc, readers, timeout, over)
    return code, out, err


async def _wait(proc: asyncio.subprocess.Process, over: Callable[[], str | None] | None) -> int:
    if over is None:
        return await proc.wait()
    while True:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(proc.wait()), WATCH_EVERY)
        if await asyncio.to_thread(over) is not None:
            _signal_group(proc, _SIGKILL)
            return await proc.wait()


async def _read(fd: int, capture: Capture) -> None:
    pipe = os.fdopen(fd, "rb", buffering=0)  # the transport owns it from here and closes it
    reader = asyncio.StreamReader(limit=CHUNK)  # it stops reading the pipe past 2 * limit unread bytes
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
    except BaseException:
        pipe.close()
        raise
    try:
        while chunk := await reader.read(CHUNK):
            capture.add(chunk)
    finally:
        transport.close()


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM to the process group if the command still runs, then SIGKILL to the group in any case (a second
    cancellation included), which also ends whatever it left running in the background."""
    try:
        if proc.returncode is None:
            _signal_group(proc, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE)
    finally:
        _signal_group(proc, _SIGKILL)
        if proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE)


def _signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":
            if proc.returncode is None:
                proc.kill()  # TerminateProcess: what it started itself is not reached (no groups on Windows)
        else:
            os.killpg(proc.pid, sig)


async def _finish(readers: list[asyncio.Task[None]]) -> None:
    """Let the readers take what is left in the pipes; a process that escaped the group may hold them open, so
    give up after DRAIN_GRACE."""
    try:
        await asyncio.wait(readers, timeout=DRAIN_GRACE)
    finally:
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
