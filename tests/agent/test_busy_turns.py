"""A turn with a great deal to do before its first request (issue 40, item 5): a learned API of 5,000 operations.

The API is stored as `sunwell tools learn` stores one (tools/learned/store.py), so a real `sunwell run` offers its
operations and must fit them to the window before it sends anything; a process asked to stop, stops, busy or not.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_provider import Reply
from sunwell.tools.learned.document import Operation, Param
from sunwell.tools.learned.store import LearnedApi, LearnedStore
from sunwell.wire import protocol
from test_sidecar_frames import RawSidecar, frame

HANG_GUARD = 30.0
"""Seconds a stopped process may take to end: generous on a shared machine; only one that ignores the signal hits it."""


def store_huge_api(data_dir: Path, operations: int, name: str = "huge") -> None:
    """A learned API of `operations` GET operations, each with a summary, a required `id` and two optional
    parameters, saved where the engine reads learned APIs."""
    def operation(i: int) -> Operation:
        schema = {"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string", "description": "The resource's name or number."},
            "limit": {"type": "integer", "description": "How many related resources per page (default 20)."},
            "offset": {"type": "integer", "description": "Where the page of related resources starts."}}}
        return Operation(tool=f"{name}__get_r{i}", method="GET", path=f"/r{i}/{{id}}", server="https://huge.example",
                         summary=f"Get one r{i} resource by its id", description="Returns everything the API knows "
                         "about it, with links to the related resources.", tags=(f"t{i % 50}",),
                         params=(Param("id", "path", "id"), Param("limit", "query", "limit"),
                                 Param("offset", "query", "offset")),
                         body=None, schema=schema, security=())

    LearnedStore(data_dir).save(LearnedApi(name, "huge.json", "Huge", "1", ["huge.example"],
                                           [operation(i) for i in range(operations)]))


def test_a_learned_api_of_five_thousand_operations_is_fitted_and_the_request_sent(sunwell, fake, tmp_path):
    store_huge_api(tmp_path / "data", 5000)
    fake.script(Reply(text="done"))
    run = sunwell("run", "show me r17", "--json", "--model", "openai:gpt-4o")  # the fixture's 60 s: a hang fails
    assert run.code == 0, run.stderr
    offered = [tool["function"]["name"] for tool in fake.requests[0].body["tools"]]
    assert "huge__get_r17" in offered and len(offered) < 500  # the one asked about kept, thousands left out
    assert "read_file" in offered


def caught_signals(pid: int) -> int:
    """The mask of signals process `pid` has a handler for (Linux: SigCgt in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"SigCgt:\s+([0-9a-f]+)", status)[1], 16)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="sees the signal handler in /proc")
def test_sigterm_while_the_turn_is_busy_ends_the_run_saying_so_once(env, workspace, tmp_path, fake):
    """Two APIs of 5,000 operations: a turn busy for seconds before its first request, its event loop held. SIGTERM
    is sent as soon as `sunwell run` handles it, which is where its turn starts: the run ends, cancelled, whether
    the loop took the cancel or was too busy to (then the process stops without it, after a short grace)."""
    for n in range(2):
        store_huge_api(tmp_path / "data", 5000, name=f"huge{n}")
    fake.script(Reply(text="done"))
    proc = subprocess.Popen([sys.executable, "-m", "sunwell", "run", "show me r17", "--json", "--model",
                             "openai:gpt-4o"], cwd=workspace, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while not caught_signals(proc.pid) & (1 << (signal.SIGTERM - 1)):
            assert proc.poll() is None and time.monotonic() < deadline, "the run never began its turn"
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, stderr
    ended = [event for event in map(json.loads, stdout.splitlines()) if event["type"] == "done"]
    if ended:  # the loop took the cancel once the turn had begun: its end is the JSON's `done`, stderr says nothing
        assert [event["status"] for event in ended] == ["cancelled"] and stderr.strip() == "", stderr
    else:
        [line] = stderr.strip().splitlines()
        assert line in ("sunwell: cancelled", "sunwell: stopped by SIGTERM; the turn was busy and did not end")
    assert fake.requests == [], "the signal came after the turn's busy part: the test did not test it"


async def test_sigterm_stops_a_sidecar_busy_with_a_turn(env, workspace, tmp_path, fake):
    """`sunwell serve` keeps SIGTERM's default: it ends at once, whatever its turns are doing."""
    for n in range(2):
        store_huge_api(tmp_path / "data", 5000, name=f"huge{n}")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sunwell", "serve", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=workspace, limit=2**20)
    sidecar = RawSidecar(proc)
    try:
        await sidecar.send(frame({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "processId": None, "rootUri": workspace.as_uri(), "capabilities": {},
            "initializationOptions": {"model": "openai:gpt-4o", "dataDir": str(tmp_path / "data")}}}))
        await sidecar.answer("init")
        await sidecar.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        await sidecar.send(frame({"jsonrpc": "2.0", "id": 1, "method": protocol.CHAT, "params": {"text": "show r17"}}))
        await asyncio.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), HANG_GUARD)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code in (-signal.SIGTERM, 128 + signal.SIGTERM)
    assert fake.requests == [], "the signal came after the turn's busy part: the test did not test it"
