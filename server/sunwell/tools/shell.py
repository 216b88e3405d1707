"""run_command: `bash -c COMMAND` in the workspace, sandboxed, time-limited, its output capped while it is read.

Its settings are ToolContext fields: `sandbox`, `network`, `max_timeout`, `bwrap_path`, `sandbox_ro_paths`,
`env_passthrough` and `quarantine_dir` (see tools/base.py).

The command runs in its own process group (unsandboxed) or PID namespace (sandboxed). When it ends, times out or the
turn is cancelled, the whole group gets SIGTERM, then SIGKILL after KILL_GRACE s: nothing it started outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.effects import apply, assess
from sunwell.tools.effects import preview as effects_preview
from sunwell.tools.environment import command_env
from sunwell.tools.files import string_arg
from sunwell.tools.guarded import guarded_entries, quarantine_planted
from sunwell.tools.output import char_boundary, truncate
from sunwell.tools.overlay import UNSAFE_IN_OPTIONS, Stage, probe_overlay
from sunwell.tools.sandbox import BwrapProbe, bwrap_argv, bwrap_available, probe_bwrap
from sunwell.tools.snapshot import BUDGET as SNAPSHOT_BUDGET
from sunwell.tools.snapshot import Snapshot

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_TIMEOUT = 600.0
TIMEOUT_CEILING = 3600.0
KILL_GRACE = 2.0  # between SIGTERM and SIGKILL
DRAIN_GRACE = 2.0  # reading what is left in the pipes once the process is gone
CHUNK = 1 << 16
WATCH_EVERY = 0.5  # s between two looks at a staged command's size
log = logging.getLogger(__name__)
NOTICE_ROOM = 400  # bytes kept under the cap for the section header, the truncation notice and the exit line
INSTALL_HINT = (
    "run_command needs the bubblewrap sandbox: apt-get install bubblewrap "
    "(or set sandbox: off in the config to run unsandboxed)"
)
MORE_HINT = (
    "redirect the output to a file (cmd > out.txt 2>&1) and read it with read_file or search_files, "
    "or filter it (| tail -n 100, | grep PATTERN)"
)


def sandbox_warning(ctx: ToolContext) -> str | None:
    """The warning to show each turn while run_command runs unsandboxed, else None."""
    if ctx.sandbox == "off":
        return (
            "run_command runs WITHOUT a sandbox (sandbox: off): commands can read and change anything your user "
            "can, outside the workspace too. Remove `sandbox: off` from the config to turn the sandbox back on."
        )
    return None


async def run_command(args: dict[str, Any], ctx: ToolContext) -> str:
    command = string_arg(args, "command")
    if not command or not command.strip():
        hint = 'e.g. {"command": "pytest -q tests/test_app.py"}'
        raise ToolFailure("validation", "parameter 'command' is required (a bash command line)", hint)
    cwd_arg = string_arg(args, "cwd", ".") or "."
    cwd = ctx.jail.resolve(cwd_arg)
    if not cwd.is_dir():
        raise ToolFailure("unsupported", f"cwd is not a directory: {cwd_arg}", "pass a folder as cwd")
    timeout = _timeout(args.get("timeout"), ctx)
    env = command_env(os.environ, ctx.env_passthrough)
    argv = ["bash", "-c", command]
    entries = await asyncio.to_thread(guarded_entries, ctx.jail)
    if ctx.sandbox != "off":
        bwrap, probe = await _bwrap(ctx)
        env.pop("TMPDIR", None)  # the host's temp dir is not in the sandbox; its own /tmp is
        prefix = await asyncio.to_thread(
            bwrap_argv, ctx.jail.root, cwd, ctx.jail, network=ctx.network, bwrap=bwrap,
            home=env.get("HOME"), ro_paths=ctx.sandbox_ro_paths, userns_flags=probe.userns_flags, entries=entries,
        )  # fmt: skip
        argv = prefix + argv
        if await staging_problem(ctx) is None:
            return await _run_staged(argv, command, cwd, env, timeout, ctx)
    snapshot = None
    if ctx.checkpoint_changes is not None:  # no overlay here: undo from a copy taken before
        budget = min(ctx.staging_max_bytes, SNAPSHOT_BUDGET)
        snapshot = await asyncio.to_thread(Snapshot.take, ctx.jail, _staging_parent(ctx), budget)
    try:
        try:
            code, out, err = await _run(argv, str(cwd), env, timeout, ctx.max_output_bytes)
        finally:  # also when the turn is cancelled: nothing planted may stay for the host to run (the thread
            # finishes the move even if this await is cancelled; the walk stays off the event loop)
            moved, folder = await asyncio.to_thread(quarantine_planted, ctx.jail, {e.rel for e in entries},
                                                    ctx.quarantine_dir)
            lost = await asyncio.to_thread(snapshot.record, ctx.checkpoint_changes) if snapshot else []
    finally:
        if snapshot is not None:
            snapshot.discard()
    notes = _planted_note(moved, folder) + _lost_note(lost)
    if code is None:
        partial = render(out, err, f"[stopped after {timeout:g} s]", ctx.max_output_bytes)
        raise ToolFailure(
            "timeout",
            f"the command did not finish within {timeout:g} s and was stopped (its whole process group was "
            f"killed). Output so far:\n{partial}{notes}",
            f"pass a larger timeout (at most {_max_timeout(ctx):g} s) or make the command do less; "
            "servers and watchers that never exit cannot run here",
        )
    return render(out, err, f"[exit code: {code}]", ctx.max_output_bytes) + notes


async def _bwrap(ctx: ToolContext) -> tuple[str, BwrapProbe]:
    bwrap = bwrap_available(ctx.bwrap_path)
    if bwrap is None:
        raise ToolFailure("permission", INSTALL_HINT)
    probe = await probe_bwrap(bwrap)
    if probe.problem:
        raise ToolFailure("permission", f"{INSTALL_HINT}; {probe.problem}")
    return bwrap, probe


async def staging_problem(ctx: ToolContext) -> str | None:
    """Why this context's commands cannot run staged (sandbox off, no bwrap, no unprivileged overlayfs), or None."""
    if ctx.sandbox == "off":
        return "the sandbox is off"
    bwrap = bwrap_available(ctx.bwrap_path)
    if bwrap is None:
        return "bubblewrap is not installed"
    probe = await probe_bwrap(bwrap)
    if probe.problem:
        return probe.problem
    if any(c in str(ctx.jail.root) for c in UNSAFE_IN_OPTIONS):
        return "the workspace path has a character an overlay mount cannot take (, : \\ or a quote)"
    return await probe_overlay(_staging_parent(ctx), ctx.jail.root, bwrap, probe.userns_flags)


def _staging_parent(ctx: ToolContext) -> Path:
    return Path(ctx.staging_dir) if ctx.staging_dir is not None else Path(tempfile.gettempdir()) / "sunwell-staging"


async def _run_staged(argv: list[str], command: str, cwd: Path, env: dict[str, str], timeout: float,
                      ctx: ToolContext) -> str:
    """Run in an overlay, show what it did (ctx.review), and apply it only on yes (tools/effects.py)."""
    stage = await asyncio.to_thread(Stage.create, _staging_parent(ctx))
    try:
        cap = _Cap(stage, ctx.staging_max_bytes, ctx.staging_max_files)
        code, out, err = await _run(stage.wrap(argv, ctx.jail.root), str(cwd), env, timeout, ctx.max_output_bytes,
                                    over=cap.over)
        if cap.reason is None:
            cap.reason = await asyncio.to_thread(cap.over)
        if cap.reason is not None:
            raise ToolFailure("execution", f"the command changed {cap.reason}, more than a command may change at once "
                              "(the staging limit); nothing was applied to the workspace",
                              "make it change less (build into a folder outside the workspace, clean first), or "
                              "raise staging.max_bytes / staging.max_files in the user config")  # fmt: skip
        if code is None:
            partial = render(out, err, f"[stopped after {timeout:g} s]", ctx.max_output_bytes)
            raise ToolFailure("timeout", f"the command did not finish within {timeout:g} s and was stopped; nothing "
                              f"it changed was applied. Output so far:\n{partial}",
                              f"pass a larger timeout (at most {_max_timeout(ctx):g} s) or make the command do less")
        output = render(out, err, f"[exit code: {code}]", ctx.max_output_bytes)
        if ctx.secrets is not None:
            output = ctx.secrets.mask(output)
        found = await asyncio.to_thread(assess, stage, ctx.jail)
        if ctx.review is not None:
            shown = await asyncio.to_thread(effects_preview, found, ctx.jail, command=command,
                                            cwd=ctx.jail.relative(cwd), exit_code=code, output=output)
            refusal = await ctx.review(shown)
            if refusal is not None:
                raise ToolFailure(refusal.code, refusal.message + "; nothing it changed was applied",
                                  refusal.suggestion)
        applied = await asyncio.to_thread(apply, found, ctx.jail, ctx.checkpoint_changes)
        return output + applied.note(found)
    finally:
        await asyncio.to_thread(stage.discard)


class _Cap:
    """The staging limit, checked while the command runs (every WATCH_EVERY s) and once after it."""

    def __init__(self, stage: Stage, max_bytes: int, max_files: int) -> None:
        self.stage, self.max_bytes, self.max_files = stage, max_bytes, max_files
        self.reason: str | None = None

    def over(self) -> str | None:
        size, count = self.stage.usage()
        if size > self.max_bytes:
            self.reason = f"{size:,} bytes of files (limit {self.max_bytes:,})"
        elif count > self.max_files:
            self.reason = f"{count:,} files and folders (limit {self.max_files:,})"
        return self.reason


def _lost_note(lost: list[str]) -> str:
    if not lost:
        return ""
    return (f"\n[Sunwell: undo cannot restore {', '.join(lost[:10])}{' and more' if len(lost) > 10 else ''}: "
            "too large to copy before the command ran]")


def _planted_note(moved: list[str], folder: object) -> str:
    if not moved:
        return ""
    log.info("a command created %s; moved to %s", ", ".join(moved), folder)  # the result says it; stderr stays clean
    return (f"\n[Sunwell: the command created {', '.join(moved)}, which commands may not create (configuration the "
            f"host runs: .git, .sunwell, .vscode, .env files, keys). It was moved out of the workspace to {folder}; "
            "ask the user to create such files themselves if they are needed.]")


def _seconds(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None  # type: ignore[arg-type]


def _max_timeout(ctx: ToolContext) -> float:
    return min(_seconds(ctx.max_timeout) or DEFAULT_MAX_TIMEOUT, TIMEOUT_CEILING)


def _timeout(value: object, ctx: ToolContext) -> float:
    seconds = DEFAULT_TIMEOUT if value is None else _seconds(value)
    if seconds is None:
        raise ToolFailure("validation", f"parameter 'timeout' must be a number of seconds > 0, got {value!r}")
    return min(seconds, _max_timeout(ctx))


# ---- running --------------------------------------------------------------------------------------------------


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


async def _run(
    argv: list[str], cwd: str, env: dict[str, str], timeout: float, keep: int,
    over: Callable[[], str | None] | None = None,
) -> tuple[int | None, Capture, Capture]:
    """Run argv; (exit code or None on timeout, stdout, stderr). On cancellation the group is killed first, and
    as soon as `over()` (asked every WATCH_EVERY s, in a thread) says a limit was passed."""
    # Our own pipes, not asyncio's: Python 3.11's Process.wait() also waits for the pipes to close, which a
    # backgrounded grandchild can keep open for ever.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out_w, stderr=err_w, cwd=cwd, env=env,
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
    code: int | None = None
    try:
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(_wait(proc, over), timeout)
    finally:
        try:
            await _stop_group(proc)
        finally:
            await _finish(readers)
    if code is not None and code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return code, out, err


async def _wait(proc: asyncio.subprocess.Process, over: Callable[[], str | None] | None) -> int:
    if over is None:
        return await proc.wait()
    while True:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(proc.wait()), WATCH_EVERY)
        if await asyncio.to_thread(over) is not None:
            _signal_group(proc.pid, signal.SIGKILL)
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
            _signal_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE)
    finally:
        _signal_group(proc.pid, signal.SIGKILL)
        if proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _finish(readers: list[asyncio.Task[None]]) -> None:
    """Let the readers take what is left in the pipes; a process that escaped the group may hold them open, so
    give up after DRAIN_GRACE."""
    try:
        await asyncio.wait(readers, timeout=DRAIN_GRACE)
    finally:
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


def command_preview(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """What an approval shows: the exact command and its jailed working directory."""
    cwd = ctx.jail.resolve(args.get("cwd") or ".")
    return {"kind": "command", "command": args["command"], "cwd": ctx.jail.relative(cwd)}


RUN_COMMAND = Tool(
    name="run_command",
    description=(
        "Run a shell command (bash) in the workspace and get its output and exit code. Use it to run tests, "
        'builds and linters. `cwd` is the folder to run in, relative to the workspace root (default "."). '
        "`timeout` is in seconds (default 30). The command gets no input, cannot see secrets (.env files, keys), "
        ".git, node_modules or files outside the workspace, and has no network unless the user allowed it. "
        "A non-zero exit code is reported in the result, it is not an error. "
        'Example: {"command": "pytest -q tests/test_app.py", "timeout": 120}.'
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line to run."},
            "cwd": {"type": "string", "description": "Folder relative to the workspace root", "default": "."},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds", "default": 30},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    handler=run_command,
    preview=command_preview,
    min_trust=Trust.shell,
    approval="ask",
    risk="shell",
    read_only=False,
    staged=True,
    timeout=TIMEOUT_CEILING + 2 * KILL_GRACE + DRAIN_GRACE + 10,  # the handler enforces its own limit
)
