"""Background processes through `sunwell run`, `sunwell chat` and a resumed turn: the model's calls are scripted at
the fake provider, everything else is real (the CLI, bwrap, a real `python3 -m http.server`, real loopback servers).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from web_server import WebServer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap and /proc: Linux")


MODEL = ("--model", "openai:gpt-4o")
AUTO = ("--json", "--approve", "auto", *MODEL, "--trust", "shell")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=[Call(name, json.dumps(arguments))])


def serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except OSError:
        return False


def results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "toolResult"]


def test_the_agent_starts_a_server_fetches_its_own_port_only_and_stops_it(sunwell, fake, workspace):
    port = free_port()
    own = f"http://127.0.0.1:{port}/"
    with WebServer() as other:
        fake.script(
            call("run_command", command=f"python3 -m http.server {port} --bind 127.0.0.1", background=True,
                 wait_for="Serving HTTP"),
            call("web_fetch", url=own),
            call("web_fetch", url=f"http://localhost:{port}/src/"),
            call("web_fetch", url=other.url("/page.html")),
            call("process_list"),
            call("process_stop", process_id=1),
            call("web_fetch", url=own),
            Reply(text="The page loads."))
        run = sunwell("run", "start the server and check the page loads", *AUTO, timeout=120)
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    started, fetched, by_name, refused, listed, stopped, after = results(run.events)
    assert started["ok"] and "background process 1 started" in started["output"]
    assert f"listening on port {port}" in started["output"]
    assert fetched["ok"] and "a.txt" in fetched["output"] and "src/" in fetched["output"]
    assert by_name["ok"] and "app.py" in by_name["output"]
    assert refused["error"]["code"] == "permission" and not other.requests
    assert f"1: running, listening on port {port}" in listed["output"]
    assert stopped["ok"] and "stopped (exit code" in stopped["output"]
    # what the front ends draw from: the process and what was read, never the text written for the model
    assert started["data"]["kind"] == "processOutput" and started["data"]["process"]["processId"] == 1
    assert started["data"]["process"]["state"] == "running" and "Serving HTTP" in started["data"]["output"]
    assert [(p["processId"], p["state"], p["ports"]) for p in listed["data"]["processes"]] == [(1, "running", [port])]
    assert stopped["data"]["process"]["state"] == "stopped" and stopped["data"]["process"]["exitCode"] is not None
    assert after["error"] and after["error"]["code"] == "permission", json.dumps(after)
    states = [(e["state"], e["ports"]) for e in run.events if e["type"] == "process"]
    assert states[0] == ("running", []) and ("running", [port]) in states and states[-1][0] == "stopped"
    assert all(e["processId"] == 1 and "http.server" in e["command"] for e in run.events if e["type"] == "process")
    approvals = [e for e in run.events if e["type"] == "approval"]
    assert [(a["decision"], a["by"]) for a in approvals] == [("allow", "policy")] * 3  # own-port fetches unasked
    assert not serving(port)


def test_a_server_still_running_when_the_run_ends_is_stopped(sunwell, fake, workspace):
    port = free_port()
    fake.script(call("run_command", command=f"python3 -m http.server {port} --bind 127.0.0.1", background=True,
                     wait_for="Serving"),
                Reply(text="Started."))
    run = sunwell("run", "start it", *AUTO, timeout=120)
    assert run.code == 0, run.stderr
    assert results(run.events)[0]["ok"]
    assert not serving(port)


def test_a_background_start_is_asked_for_as_one_that_keeps_running(sunwell, fake, workspace):
    fake.script(call("run_command", command="sleep 300", background=True), Reply(text="Denied."))
    run = sunwell("run", "start it", "--json", "--approve", "deny", *MODEL, "--trust", "shell", timeout=60)
    [denied] = results(run.events)
    assert denied["error"]["code"] == "denied"
    assert not [e for e in run.events if e["type"] == "process"]


def test_below_trust_shell_neither_a_background_start_nor_the_process_tools_are_offered(sunwell, fake, workspace):
    fake.script(call("run_command", command="sleep 300", background=True), call("process_list"), Reply(text="ok"))
    run = sunwell("run", "start it", "--json", "--approve", "auto", *MODEL, "--trust", "read_only", timeout=60)
    refused, listed = results(run.events)
    assert refused["error"]["code"] == "permission" and "shell" in refused["error"]["message"]
    assert listed["error"]["code"] == "permission"
    offered = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
    assert not offered & {"run_command", "process_output", "process_stop", "process_list"}
    fake.script(call("process_list"), Reply(text="none"))
    run = sunwell("run", "list them", "--json", "--approve", "auto", *MODEL, "--trust", "shell", timeout=60)
    [listed] = results(run.events)
    assert listed["ok"] and listed["output"] == "No background processes in this session."


def test_chat_lists_and_stops_the_sessions_processes(env, fake, workspace):
    fake.script(call("run_command", command="echo ready; sleep 300", background=True,
                     wait_for="ready"),
                Reply(text="It runs."))
    lines = "start it\n::ps\n::stop 1\n::ps\n::stop 7\n::exit\n"
    done = subprocess.run([sys.executable, "-m", "sunwell", "chat", "--approve", "auto", *MODEL, "--trust", "shell"],
                          input=lines, capture_output=True, text=True, env=env, cwd=workspace, timeout=120,
                          check=False)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    first_ps, rest = out.split("1: stopped", 1)
    assert "1: running" in first_ps and "echo ready" in first_ps
    assert "Stopped background process 1" in out and "no background process 7" in rest


def test_a_resumed_turn_is_told_its_processes_are_gone(sunwell, env, fake, workspace, tmp_path):
    gate = tmp_path / "go"
    fake.script(call("run_command", command="echo ready; sleep 300", background=True, wait_for="ready"),
                Reply(text="never sent", wait_for=str(gate)))
    proc = subprocess.Popen([sys.executable, "-m", "sunwell", "run", "start it", *AUTO], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=workspace)
    deadline = time.monotonic() + 60
    while len(fake.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()  # mid-turn, the process running
    proc.wait()
    gate.touch()
    fake.script(Reply(text="I will start it again."))
    resumed = sunwell("run", "--resume", *AUTO, timeout=60)
    assert resumed.code == 0, resumed.stderr
    notices = [e["message"] for e in resumed.events if e["type"] == "notice" and e["code"] == "resumed"]
    assert notices and "background process 1" in notices[0] and "no longer running" in notices[0]
    gone = [e for e in resumed.events if e["type"] == "process"]
    assert [(e["processId"], e["state"]) for e in gone] == [(1, "orphaned")]
    told = json.dumps(fake.requests[-1].body)
    assert "background process 1" in told and "no longer running" in told
