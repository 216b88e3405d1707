"""The background process tools: run_command's `background` start (called from tools/handlers/shell.py, which
prepares and sandboxes the command as for any other), process_output, process_stop and process_list.

A background process is the session's (ToolContext.turn.processes, tools/processes/table.py); what the model reads
of it is its ring (tools/processes/ring.py) from an offset: each read goes on where the last one ended unless `since`
says otherwise, and says how many bytes the ring dropped before it. Each result is the text the model reads and, for
the front ends, the process and what was read as `toolResult.data` (wire/results.py ProcessOutput, ProcessList).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, ToolReturn, Trust
from sunwell.tools.output import char_boundary
from sunwell.tools.processes import BackgroundProcess, Launch, SessionProcesses, matcher
from sunwell.wire.results import ProcessList, ProcessOutput

FIRST_OUTPUT = 2.0
"""Seconds a start without `wait_for` waits for the first output (or the end) before it answers."""
POLL = 0.05
MAX_WAIT = 30
NOTICE_ROOM = 600
"""Bytes of a result kept for the lines around the output."""


def processes_of(ctx: ToolContext) -> SessionProcesses:
    if ctx.turn.processes is None:
        raise ToolFailure("unsupported", "background processes cannot be started or read here (a sub-agent, or no "
                          "session)", "run the command without background, with a timeout")
    return ctx.turn.processes


def writable_folders(jail: Any, names: Any) -> list[Path]:
    """The workspace folders the user lets background processes write (`background.writable`: build caches),
    resolved through the jail and made when missing. Never the workspace itself, a blocked or protected path."""
    folders = []
    for name in names:
        where = f"background.writable entry {name!r}"
        if str(name).strip() in ("", ".", "./"):
            raise ToolFailure("permission", f"{where}: list folders inside the workspace, not the workspace itself",
                              "ask the user to fix background.writable in the config")
        path = jail.resolve(name, must_exist=False)  # outside the workspace or blocked: ToolFailure
        if jail.is_protected(jail.relative(path)):
            raise ToolFailure("permission", f"{where} is configuration the host runs programs from",
                              "ask the user to fix background.writable in the config")
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir() or path.is_symlink():
            raise ToolFailure("permission", f"{where} is not a folder")
        folders.append(path)
    return folders


async def start_background(launch: Launch, wait_for: str | None, timeout: float, ctx: ToolContext) -> ToolReturn:
    """Start it, wait for its first output (or the line `wait_for` matches, within `timeout`), and say what it is."""
    process = processes_of(ctx).start(launch)
    if wait_for is None:
        await _until(lambda: not process.running, FIRST_OUTPUT)
        said = ""
    elif await _matched(process, wait_for, timeout):
        said = f"a line matched wait_for {wait_for!r}; "
    else:
        said = (f"no line matched wait_for {wait_for!r} within {timeout:g} s (a program may hold back its output "
                "when it does not write to a terminal: look for an option to flush it); " if process.running else
                f"it ended before a line matched wait_for {wait_for!r}; ")
    await asyncio.to_thread(process.look)
    head = (f"[Sunwell: background process {process.id} started: {launch.command}. It keeps running after this "
            f"result: read what it prints with process_output {{\"process_id\": {process.id}}}, end it with "
            "process_stop.]\n")
    return read(process, 0, ctx.max_output_bytes - len(head), said=said, head=head)


def read(process: BackgroundProcess, since: int, budget: int, said: str = "", head: str = "") -> ToolReturn:
    """Its output from `since` (at most `budget` bytes of result), then a line with its state, as the model reads it
    (after `head`) and as `toolResult.data` (ProcessOutput); the next read goes on from where this one ended."""
    room = max(budget - NOTICE_ROOM, 1_000)
    part = process.ring.read(since, room)
    data, start = part.data, part.start
    skip = 0
    while skip < len(data) and skip < 3 and (data[skip] & 0xC0) == 0x80:  # dropped mid-character
        skip += 1
    cut = char_boundary(data, len(data)) if part.end < process.ring.total or process.running else len(data)
    text = data[skip:cut].decode("utf-8", "replace")
    end = start + cut
    process.read_to = end
    waiting = process.ring.total - end
    lines = []
    if part.skipped:
        lines.append(f"[{part.skipped:,} bytes before offset {start:,} were dropped from the ring (it keeps the "
                     "newest output only)]")
    if text:
        lines.append(text.rstrip("\n"))
    if waiting > 0:
        lines.append(f"[more output waits: {waiting:,} bytes; call process_output again with since={end}]")
    lines += [f"[Sunwell: {note}]" for note in process.notes]
    lines.append(f"[{said}process {process.id}: {state_words(process)}; next output from since={end}; "
                 f"{process.ring.dropped:,} bytes dropped from the ring in all]")
    shown = ProcessOutput(process=process.info(), output=text, offset=start + skip, next_offset=end,
                          skipped=part.skipped, dropped=process.ring.dropped, waiting=max(waiting, 0))
    return ToolReturn.text(head + "\n".join(lines), shown)


def state_words(process: BackgroundProcess) -> str:
    ports = f", listening on port{'s' if len(process.ports) > 1 else ''} {', '.join(map(str, process.ports))}" \
        if process.ports else ""
    match process.state:
        case "running":
            return f"running{ports}"
        case "exited":
            return f"exited with code {process.exit_code}"
        case "stopped":
            return f"stopped (exit code {process.exit_code})"
    return "orphaned: it was running when Sunwell ended, and was stopped"


async def _until(done: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL)
    return True


async def _matched(process: BackgroundProcess, pattern: str, timeout: float) -> bool:
    """Whether a line of its output matches `pattern` within `timeout` (or before it ended). The regex runs in a
    child process (matcher.py), killed at the deadline: a pattern that backtracks for ever costs nothing here."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-I", matcher.__file__, pattern, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    answer = asyncio.ensure_future(child.stdout.readline())
    deadline, fed = time.monotonic() + timeout, 0
    try:
        while (left := deadline - time.monotonic()) > 0:
            part = process.ring.read(fed, 1 << 20)
            if part.data:
                child.stdin.write(part.data)
                await asyncio.wait_for(child.stdin.drain(), left)
                fed = part.end
            elif not process.running and not child.stdin.is_closing():
                child.stdin.close()  # its last line, even without a newline, is read now
            done, _ = await asyncio.wait({answer}, timeout=min(POLL, max(left, 0)))
            if done:
                return answer.result() == b"match\n"
        return False
    except (TimeoutError, ConnectionError):
        return False
    finally:
        answer.cancel()
        if child.returncode is None:
            child.kill()
        await child.wait()


# ---- the tools --------------------------------------------------------------------------------------------------


class ProcessOutputArguments(ToolArguments):
    process_id: int = Field(ge=1, description="The background process, as run_command or process_list named it.")
    since: int | None = Field(None, ge=0, description="Byte offset to read from (default: where the last read ended)")
    wait: float = Field(0, ge=0, le=MAX_WAIT, description="Seconds to wait for new output (0-30)")


async def process_output(args: ProcessOutputArguments, ctx: ToolContext) -> ToolReturn:
    process = processes_of(ctx).get(args.process_id)
    since = process.read_to if args.since is None else args.since
    if args.wait:
        await _until(lambda: process.ring.total > since or not process.running, args.wait)
    return read(process, since, ctx.max_output_bytes)


class ProcessIdArguments(ToolArguments):
    process_id: int = Field(ge=1, description="The background process, as run_command or process_list named it.")


async def process_stop(args: ProcessIdArguments, ctx: ToolContext) -> ToolReturn:
    processes = processes_of(ctx)
    process = processes.get(args.process_id)
    was = process.state
    if process.running:
        await processes.stop(process.id)
    head = "" if was == "running" else f"[it was not running: {state_words(process)}]\n"
    tail = max(process.ring.total - 4_000, process.read_to)
    return read(process, tail, ctx.max_output_bytes - len(head), head=head)


class NoArguments(ToolArguments):
    pass


async def process_list(args: NoArguments, ctx: ToolContext) -> ToolReturn:
    processes = processes_of(ctx).all()
    return ToolReturn.text(describe(processes), ProcessList(processes=[process.info() for process in processes]))


def describe(processes: list[BackgroundProcess]) -> str:
    """One line per process: id, state, when it started, the command (`process_list`, `::ps`)."""
    if not processes:
        return "No background processes in this session."
    lines = []
    for process in processes:
        started = time.strftime("%H:%M:%S", time.localtime(process.started))
        lines.append(f"{process.id}: {state_words(process)}; started {started}; {process.command}")
    return "\n".join(lines)


_ID_HINT = 'e.g. {"process_id": 1}; process_list names the session\'s processes'
PROCESS_OUTPUT = Tool.of(
    ProcessOutputArguments, process_output,
    name="process_output",
    description=(
        "Read what a background process (started by run_command with background: true) printed since your last "
        "read, and whether it still runs. Use it to check a server's log or a watcher's latest run. `since` reads "
        f"from a byte offset instead; `wait` waits up to that many seconds (at most {MAX_WAIT}) for new output. Only "
        "the newest output is kept (the result says how much was dropped); it ends with the process's state and the "
        "offset to read from next. " + _ID_HINT + "."),
    min_trust=Trust.discovery, harmless=True, volatile=True, expendable=True,
    companion="run_command", timeout=MAX_WAIT + 10,
)
PROCESS_STOP = Tool.of(
    ProcessIdArguments, process_stop,
    name="process_stop",
    description=(
        "Stop a background process and everything it started (SIGTERM, then SIGKILL after a few seconds). Use it "
        "when you no longer need a server or watcher you started. The result has its exit code and its last output. "
        + _ID_HINT + "."),
    min_trust=Trust.discovery, read_only=False, expendable=True, companion="run_command",
    timeout=30,
)
PROCESS_LIST = Tool.of(
    NoArguments, process_list,
    name="process_list",
    description=("List this session's background processes: id, state (running, exited, stopped), the ports each "
                 "listens on, when it started and its command. Use it to find a process id for process_output or "
                 "process_stop, or to see whether a server still runs. It lists only the processes this session "
                 "started. Example: {}."),
    min_trust=Trust.discovery, harmless=True, volatile=True, expendable=True,
    companion="run_command",
)
PROCESS_TOOLS = (PROCESS_OUTPUT, PROCESS_STOP, PROCESS_LIST)
"""Offered with run_command only; expendable: in a context window too small for every tool they go first (what a
session started still ends with it, and `::ps` and `::stop` still reach it)."""
