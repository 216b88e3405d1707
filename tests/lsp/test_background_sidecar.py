"""Background processes through the sidecar over real stdio: `sunwell/processes`, `sunwell/processStop`, the
`process` events of a turn and those between turns, a sidecar shut down, and one killed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from fake_provider import Call, Reply
from test_background_attacks import hold, marked, until
from test_sidecar_support import OPENAI, check_turn, start_sidecar, stop_sidecar

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap and /proc: Linux")
PROCESSES, PROCESS_STOP = "sunwell/processes", "sunwell/processStop"


def options(tmp_path) -> dict:
    return {"dataDir": str(tmp_path / "data"), "model": OPENAI, "trust": "shell", "approval": "auto"}


def start(command: str, **more: object) -> Reply:
    return Reply(tool_calls=[Call("run_command", json.dumps({"command": command, "background": True, **more}))])


async def test_the_strip_lists_a_sessions_processes_hears_them_end_between_turns_and_stops_them(
        sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory(options(tmp_path))
    fake.script(start("echo ready; sleep 1; echo bye", wait_for="ready"), Reply(text="started"))
    result, events = await sidecar.chat("start the short one")
    check_turn(events, result)
    session = result["session"]
    assert [(e["processId"], e["state"]) for e in events if e["type"] == "process"] == [(1, "running")]
    [row] = (await sidecar.request(PROCESSES, {"session": session}))["processes"]
    assert (row["processId"], row["state"], row["exitCode"]) == (1, "running", None)
    assert row["command"] == "echo ready; sleep 1; echo bye" and row["started"].endswith("Z")

    ended = await sidecar.wait_for(lambda: [e for e in sidecar.events if e["type"] == "process" and e["turn"] == ""])
    assert [(e["session"], e["processId"], e["state"], e["exitCode"], e["seq"]) for e in ended] == [
        (session, 1, "exited", 0, 0)]
    [row] = (await sidecar.request(PROCESSES, {"session": session}))["processes"]
    assert (row["state"], row["exitCode"]) == ("exited", 0)

    fake.script(start(hold("marker-strip")), Reply(text="started again"))
    await sidecar.chat("start the long one", session=session)
    assert marked("marker-strip")
    stopped = await sidecar.request(PROCESS_STOP, {"session": session, "processId": 2})
    assert stopped["process"]["state"] == "stopped" and not marked("marker-strip")
    with pytest.raises(JsonRpcInvalidParams, match="no background process 9"):
        await sidecar.request(PROCESS_STOP, {"session": session, "processId": 9})
    assert (await sidecar.request(PROCESSES, {"session": "nobody"}))["processes"] == []


def unsandboxed(tmp_path) -> None:
    """The user's config says `sandbox: off`: then nothing but Sunwell itself stops a process (no bwrap to die with
    its parent)."""
    (tmp_path / "config" / "sunwell").mkdir(parents=True)
    (tmp_path / "config" / "sunwell" / "config.yaml").write_text("sandbox: off\n")


async def test_a_sidecar_shut_down_stops_its_processes(fake, env, workspace, tmp_path):
    unsandboxed(tmp_path)
    sidecar = await start_sidecar(env, workspace, options(tmp_path))
    fake.script(start(hold("marker-shutdown")), Reply(text="started"))
    await sidecar.chat("start it")
    assert marked("marker-shutdown")
    await stop_sidecar(sidecar)
    assert not marked("marker-shutdown")


async def test_a_killed_sidecars_processes_are_stopped_and_shown_orphaned_by_the_next(
        sidecar_factory, fake, env, workspace, tmp_path):
    unsandboxed(tmp_path)
    first = await start_sidecar(env, workspace, options(tmp_path))
    fake.script(start(hold("marker-killed")), Reply(text="started"))
    result, _ = await first.chat("start it")
    os.kill(first.client._server.pid, signal.SIGKILL)
    await asyncio.sleep(0.5)
    assert marked("marker-killed")  # outlived its sidecar...

    again = await sidecar_factory(options(tmp_path))
    heard = await again.wait_for(lambda: [e for e in again.events if e["type"] == "process"])
    assert [(e["session"], e["processId"], e["state"]) for e in heard] == [(result["session"], 1, "orphaned")]
    assert await until(lambda: not marked("marker-killed"))  # ...not the next one's start
    [row] = (await again.request(PROCESSES, {"session": result["session"]}))["processes"]
    assert row["state"] == "orphaned"


async def test_the_strips_tail_is_each_processs_last_whole_lines_and_says_a_browser_here_cannot_reach_it(
        sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory(options(tmp_path))
    lines = "; ".join(f"echo line-{n}" for n in range(1, 41))
    fake.script(start(f"{lines}; echo ready; sleep 30", wait_for="ready"), Reply(text="started"))
    result, _ = await sidecar.chat("start it")
    session = result["session"]
    [bare] = (await sidecar.request(PROCESSES, {"session": session}))["processes"]
    assert bare.get("tail") is None  # only when asked: the list stays small
    [row] = (await sidecar.request(PROCESSES, {"session": session, "tail": 26}))["processes"]
    assert row["tail"] == "line-39\nline-40\nready\n"  # 26 bytes reach into line-38: only whole lines
    assert row["isolated"] is True  # trust shell: no network, its ports live in a namespace of its own
    [row] = (await sidecar.request(PROCESSES, {"session": session, "tail": 4000}))["processes"]
    assert row["tail"].startswith("line-1\n") and row["tail"].endswith("line-40\nready\n")
    with pytest.raises(JsonRpcInvalidParams, match="tail"):
        await sidecar.request(PROCESSES, {"session": session, "tail": -1})
    await sidecar.request(PROCESS_STOP, {"session": session, "processId": 1})
