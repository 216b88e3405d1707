"""Background processes under attack, at the tool level: real bash, real bwrap, real processes; no mocks.

A background process is a command that keeps running: it must not plant what the host runs, write outside the
workspace (or in it, but for the folders the user listed), outlive its session or Sunwell, slip out of its group, or
fill memory with its output; and a `wait_for` pattern must not hang Sunwell.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SERVER, call_tool
from sunwell.agent.sessions import SessionStore
from sunwell.agent.turn import TurnLog
from sunwell.config.settings import Background
from sunwell.tools.base import CommandSettings, Limits, ToolContext, ToolFailure, ToolReturn, TurnServices
from sunwell.tools.handlers.processes import PROCESS_LIST, PROCESS_OUTPUT, PROCESS_STOP
from sunwell.tools.handlers.shell import RUN_COMMAND
from sunwell.tools.processes import ProcessTable
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.results import ProcessList, ProcessOutput, part_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap and /proc: Linux")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "notes.txt").write_text("hello\n")
    return ws


class Turn:
    """A turn's real event log in a real session store, and the tool context a turn gives its tools."""

    def __init__(self, tmp_path: Path, ws: Path, table: ProcessTable, **settings: object) -> None:
        self.events: list = []
        store = SessionStore(tmp_path / "sessions.db")
        self.session = store.create("t")
        self.log = TurnLog(store, self.session, self.events.append)
        self.ctx = ToolContext(jail=Jail(ws), limits=Limits(max_output_bytes=20_000, commands=CommandSettings(
            quarantine_dir=tmp_path / "quarantine", **settings)),
            turn=TurnServices(processes=table.attach(self.session, self.log)))
        self.results: list[ToolReturn] = []
        """What each call returned, its data too; the calls below answer its text, as the model reads it."""

    async def call(self, tool, **args: object) -> str:
        self.results.append(result := await call_tool(tool, args, self.ctx))
        return "".join(part_text(part) for part in result.parts)

    async def start(self, command: str, **args: object) -> str:
        return await self.call(RUN_COMMAND, command=command, background=True, **args)

    def processes(self):
        return self.ctx.turn.processes.all()


def table_for(tmp_path: Path, **limits: object) -> ProcessTable:
    return ProcessTable(tmp_path / "data" / "processes", lambda: Background(**limits))


@pytest.fixture
async def table(tmp_path: Path):
    table = table_for(tmp_path)
    yield table
    await table.close()


def marked(marker: str) -> list[int]:
    """Host pids whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def hold(marker: str, seconds: int = 300) -> str:
    """Shell text for a process named `marker` (its argv[0]) that sleeps; the text itself does not spell the marker,
    so the shells and bwraps that carry the command line are not taken for it."""
    return f'exec -a {marker[:3]}""{marker[3:]} sleep {seconds}'


async def until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


# ---- it starts, keeps running, and says so ------------------------------------------------------------------------


async def test_a_background_command_returns_at_once_and_keeps_running(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    started = time.monotonic()
    result = await turn.start(f"echo up; {hold('marker-keeps-running')}", wait_for="^up$")
    assert time.monotonic() - started < 10
    assert "background process 1 started" in result and "up" in result and "process 1: running" in result
    assert marked("marker-keeps-running")
    assert [e.state for e in turn.events if e.type == "process"] == ["running"]
    assert "1: running" in await turn.call(PROCESS_LIST)


async def test_each_result_carries_the_process_and_what_was_read_as_data(tmp_path, ws, table):
    """For the front ends (toolResult.data): the process as it is, and the output read with its offsets."""
    turn = Turn(tmp_path, ws, table)
    await turn.start("echo up; echo more; sleep 300", wait_for="more")
    started = turn.results[-1].data
    assert isinstance(started, ProcessOutput) and started.process.process_id == 1
    assert (started.process.state, started.process.exit_code, started.process.command) == (
        "running", None, "echo up; echo more; sleep 300")
    assert started.output == "up\nmore\n" and (started.offset, started.next_offset) == (0, 8)
    assert (started.skipped, started.dropped, started.waiting) == (0, 0, 0)
    await turn.call(PROCESS_LIST)
    listed = turn.results[-1].data
    assert isinstance(listed, ProcessList) and [(p.process_id, p.state) for p in listed.processes] == [(1, "running")]
    await turn.call(PROCESS_STOP, process_id=1)
    stopped = turn.results[-1].data
    assert isinstance(stopped, ProcessOutput) and stopped.process.state == "stopped"
    assert stopped.process.exit_code is not None and stopped.output == ""
    wire = stopped.wire()
    assert wire["kind"] == "processOutput" and wire["process"]["exitCode"] == stopped.process.exit_code
    assert set(wire) >= {"output", "offset", "nextOffset", "skipped", "dropped", "waiting"}


# ---- what it may change ---------------------------------------------------------------------------------------------


async def test_it_cannot_plant_a_git_directory_or_vscode_config(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    result = await turn.start(
        "mkdir -p .vscode sub/.git/hooks && echo evil > .vscode/tasks.json; git init -q planted; "
        "echo '[core]' > .git/config; echo done; sleep 300", wait_for="done")
    assert "Read-only file system" in result
    await turn.call(PROCESS_STOP, process_id=1)
    assert not (ws / ".vscode").exists() and not (ws / "sub").exists() and not (ws / "planted").exists()
    assert not (ws / ".git" / "config").exists()


async def test_it_writes_neither_outside_the_workspace_nor_in_it(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    result = await turn.start(f"touch {tmp_path}/outside; echo x > notes.txt; echo made > new.txt; echo done; "
                              "sleep 300", wait_for="done")
    await turn.call(PROCESS_STOP, process_id=1)
    assert not (tmp_path / "outside").exists() and not (ws / "new.txt").exists()
    assert (ws / "notes.txt").read_text() == "hello\n"
    assert result.count("Read-only file system") >= 2


async def test_the_folders_the_user_listed_are_writable_and_what_it_plants_there_goes(tmp_path, ws):
    table = table_for(tmp_path, writable=["cache"])
    try:
        turn = Turn(tmp_path, ws, table)
        await turn.start("echo built > cache/out.txt; mkdir -p cache/.vscode; echo x > cache/.vscode/tasks.json; "
                         "echo x > elsewhere.txt; echo done; sleep 300", wait_for="done")
        assert (ws / "cache" / "out.txt").read_text() == "built\n" and not (ws / "elsewhere.txt").exists()
        result = await turn.call(PROCESS_STOP, process_id=1)
        assert not (ws / "cache" / ".vscode").exists() and "cache/.vscode" in result
    finally:
        await table.close()


@pytest.mark.parametrize("entry", [".", "../out", ".vscode", ".git"])
async def test_a_writable_entry_never_opens_the_workspace_or_what_the_host_runs(tmp_path, ws, entry):
    table = table_for(tmp_path, writable=[entry])
    try:
        with pytest.raises(ToolFailure) as info:
            await Turn(tmp_path, ws, table).start("sleep 300")
        assert info.value.error.code == "permission"
    finally:
        await table.close()


# ---- it ends with its session, with Sunwell, and after Sunwell died -------------------------------------------


async def test_it_ends_with_its_session_and_with_the_engine(tmp_path, ws):
    table = table_for(tmp_path)
    turn = Turn(tmp_path, ws, table)
    await turn.start(hold("marker-session-end"))
    await turn.start(hold("marker-session-other"))
    other = Turn(tmp_path, ws, table)
    await other.start(hold("marker-engine-end"))
    table.end_session(turn.session)
    assert await until(lambda: not marked("marker-session-end") and not marked("marker-session-other"))
    assert marked("marker-engine-end")
    await table.close()
    assert not marked("marker-engine-end")
    assert [p.state for p in table.of(other.session)] == ["stopped"]


async def test_with_stop_at_session_end_off_it_outlives_its_session_but_never_the_engine(tmp_path, ws):
    table = table_for(tmp_path, stop_at_session_end=False)
    turn = Turn(tmp_path, ws, table)
    await turn.start(hold("marker-kept"))
    table.end_session(turn.session)
    await asyncio.sleep(1)
    assert marked("marker-kept")
    await table.close()
    assert not marked("marker-kept")


OWNER = """
import asyncio, os, sys
sys.path.insert(0, {server!r})
from pathlib import Path
from sunwell.config.settings import Background
from sunwell.tools.base import CommandSettings, Limits, ToolContext, TurnServices
from sunwell.tools.handlers.shell import RUN_COMMAND
from sunwell.tools.processes import ProcessTable
from sunwell.tools.workspace.jail import Jail

class Stream:
    done = False
    def emit(self, event): pass

async def main():
    table = ProcessTable(Path({folder!r}), lambda: Background())
    ctx = ToolContext(jail=Jail(Path({ws!r})), limits=Limits(commands=CommandSettings(sandbox={sandbox!r})),
                      turn=TurnServices(processes=table.attach("s-owner", Stream())))
    await RUN_COMMAND.handler(RUN_COMMAND.bind({{"command": {command!r}, "background": True}}), ctx)
    print("started", flush=True)
    os._exit(0)  # killed: nothing is stopped, no record removed

asyncio.run(main())
"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_after_sunwell_died_the_next_one_stops_what_it_left_and_reports_it_orphaned(tmp_path, ws, sandbox):
    folder, marker = tmp_path / "data" / "processes", f"marker-orphan-{sandbox}"
    code = OWNER.format(server=str(SERVER), folder=str(folder), ws=str(ws), sandbox=sandbox, command=hold(marker))
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True,
                                   timeout=60, check=False)
    assert "started" in done.stdout, done.stderr
    assert list(folder.glob("*.json"))  # written down while it ran
    if sandbox == "off":
        assert marked(marker)  # nothing else ends it: the records do
    table = table_for(tmp_path)
    heard: list = []
    table.outside = heard.append
    found = await table.reap()
    assert [r.session for r in found] == ["s-owner"]
    assert await until(lambda: not marked(marker)) and not list(folder.glob("*.json"))
    assert [(p.id, p.state) for p in table.of("s-owner")] == [(1, "orphaned")]
    await asyncio.sleep(0.1)
    assert [(e.type, e.state, e.session) for e in heard] == [("process", "orphaned", "s-owner")]


async def test_the_records_of_a_sunwell_still_running_are_left_alone(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    await turn.start(hold("marker-not-mine"))
    other = table_for(tmp_path)
    assert await other.reap() == []
    assert marked("marker-not-mine") and list((tmp_path / "data" / "processes").glob("*.json"))


# ---- its group and its tree --------------------------------------------------------------------------------------


async def test_a_daemon_that_leaves_its_group_is_still_stopped_in_the_sandbox(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    await turn.start(f"(setsid bash -c '{hold('marker-daemon')}' &) ; echo go; {hold('marker-leader')}",
                     wait_for="go")
    assert await until(lambda: len(marked("marker-daemon")) == 1)
    await turn.call(PROCESS_STOP, process_id=1)
    assert not marked("marker-daemon") and not marked("marker-leader")


async def test_without_the_sandbox_the_group_is_stopped_and_a_double_forked_setsid_daemon_escapes(tmp_path, ws, table):
    """What `sandbox: off` cannot hold (README "Background processes"): a process that leaves both its group and
    its tree is adopted by init and is nobody's to find."""
    turn = Turn(tmp_path, ws, table, sandbox="off")
    await turn.start(f"({hold('marker-grp-child')}) & (setsid bash -c '{hold('marker-escaped')}' &); echo go; "
                     f"{hold('marker-grp')}", wait_for="go")
    escaped = []
    try:
        assert await until(lambda: len(marked("marker-escaped")) == 1)
        escaped = marked("marker-escaped")
        await turn.call(PROCESS_STOP, process_id=1)
        assert not marked("marker-grp") and not marked("marker-grp-child") and marked("marker-escaped") == escaped
    finally:
        for pid in escaped:
            os.kill(pid, 9)


async def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    await turn.start("trap '' TERM; echo go; while true; do sleep 0.2; done # marker-stubborn", wait_for="go")
    started = time.monotonic()
    result = await turn.call(PROCESS_STOP, process_id=1)
    assert time.monotonic() - started < 10
    assert not marked("marker-stubborn") and "stopped (exit code" in result


# ---- its output -------------------------------------------------------------------------------------------------


async def test_a_flood_of_output_keeps_the_newest_bytes_and_counts_the_rest(tmp_path, ws):
    table = table_for(tmp_path, output_ring_bytes=100_000)
    try:
        turn = Turn(tmp_path, ws, table)
        await turn.start("yes 0123456789 | head -c 30000000; echo; echo THE-END")
        process = turn.processes()[0]
        assert await until(lambda: not process.running, 60)
        assert process.ring.total == 30_000_000 + len("\nTHE-END\n")
        assert process.ring.dropped == process.ring.total - 100_000 and len(process.ring._buf) == 100_000
        result = await turn.call(PROCESS_OUTPUT, process_id=1, since=0)
        assert "were dropped from the ring" in result and "exited with code 0" in result
        first = turn.results[-1].data
        assert isinstance(first, ProcessOutput) and first.process.exit_code == 0
        assert first.skipped == first.dropped == process.ring.dropped and first.offset >= process.ring.dropped
        more = result
        while "more output waits" in more:
            more = await turn.call(PROCESS_OUTPUT, process_id=1)
        assert "THE-END" in more
        last = turn.results[-1].data
        assert "THE-END" in last.output and last.waiting == 0 and last.next_offset == process.ring.total
    finally:
        await table.close()


async def test_a_wait_for_pattern_that_backtracks_for_ever_does_not_stall_sunwell(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table)
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    result = await turn.start("printf 'a%.0s' $(seq 40); echo '!'; sleep 300", wait_for="(a+)+$", timeout=2)
    ticker.cancel()
    assert time.monotonic() - started < 6 and ticks > 20
    assert "no line matched wait_for" in result and "process 1: running" in result


async def test_no_more_than_max_processes_run_at_once(tmp_path, ws):
    table = table_for(tmp_path, max_processes=2)
    try:
        turn = Turn(tmp_path, ws, table)
        await turn.start("sleep 300")
        await turn.start("sleep 300")
        with pytest.raises(ToolFailure) as info:
            await turn.start("sleep 300")
        assert info.value.error.code == "rate_limit" and "background.max_processes" in info.value.error.message
        await turn.call(PROCESS_STOP, process_id=1)
        assert "process 3: running" in await turn.start("sleep 300")
    finally:
        await table.close()


# ---- its ports ----------------------------------------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_sandboxed_server_is_reached_through_its_relay_and_never_on_this_machines_port(tmp_path, ws, table):
    """Opening its port on this machine would let a model squat a port the host trusts (a database's, Ollama's
    11434) before that service starts; so its relay is a unix socket only Sunwell reaches."""
    import socket

    turn = Turn(tmp_path, ws, table)
    port = free_port()
    await turn.start(f"python3 -m http.server {port} --bind 127.0.0.1", wait_for="Serving")
    process = turn.processes()[0]
    assert process.ports == [port] and turn.ctx.turn.processes.endpoints() == set()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens here for it
    route = turn.ctx.turn.processes.route(port)
    assert route is not None and Path(route).parent.stat().st_mode & 0o077 == 0  # a folder of Sunwell's alone

    def get() -> bytes:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(route)
            conn.sendall(f"GET / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            return b"".join(iter(lambda: conn.recv(65536), b""))

    assert b"notes.txt" in await asyncio.to_thread(get)
    assert [e.ports for e in turn.events if e.type == "process"][-1] == [port]
    assert turn.ctx.turn.processes.route(port + 1) is None
    await turn.call(PROCESS_STOP, process_id=1)
    assert turn.ctx.turn.processes.route(port) is None and not Path(route).exists()


async def test_an_unsandboxed_server_is_its_own_on_this_machine_while_it_runs(tmp_path, ws, table):
    turn = Turn(tmp_path, ws, table, sandbox="off")
    port = free_port()
    await turn.start(f"python3 -m http.server {port} --bind 127.0.0.1", wait_for="Serving")
    assert turn.ctx.turn.processes.endpoints() == {("127.0.0.1", port)} and turn.ctx.turn.processes.route(port) is None
    await turn.call(PROCESS_STOP, process_id=1)
    assert turn.ctx.turn.processes.endpoints() == set()
