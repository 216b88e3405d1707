"""Durable turns (docs/events.md "Durable turns"): a real `sunwell run` killed with SIGKILL at a step boundary, then
`sunwell run --resume`. The scripted provider holds an answer until a file appears (`Reply.wait_for`), so the kill
lands exactly where the test wants it; a side-effect counter shows what ran how often."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Fail, Reply
from mcp_support import toolbox, write_user_config
from test_durable_support import (
    COUNT,
    KILLED_AT_RENAME,
    OPENAI,
    WAITS,
    Crashing,
    counted,
    files_of,
    killed_opening,
    log_rows,
    requested,
    resumed_turn,
    tool_messages,
    uncrashed,
    without_cache_key,
)

pytest_plugins = ["test_durable_support"]  # the `user_config` fixture


def test_killed_after_a_model_reply_the_turn_goes_on_with_the_same_request(sunwell, fake, env, workspace):
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": COUNT})),
                                  Call("write_file", json.dumps({"path": "a.txt", "content": "changed\n"}))]),
                Reply(text="never seen", wait_for=workspace / "never"))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    before = run.kill_when(requested(fake, 2))  # both calls ran, their results are in; the next request waits
    assert counted(workspace) == 1 and (workspace / "a.txt").read_text() == "changed\n"

    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "x = 1\n"}))]),
                Reply(text="all done"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    assert fake.requests[2].body == fake.requests[1].body  # exactly the request the dead process was waiting on
    assert counted(workspace) == 1  # the command ran once
    after = resumed.events
    resumed_turn(before, after)
    assert after[-1]["status"] == "completed" and after[-1]["toolCalls"] == 3
    assert [e["code"] for e in after if e["type"] == "notice"][:1] == ["resumed"]

    undone = sunwell("undo")  # the whole turn, before and after the crash
    assert undone.code == 0, undone.stderr
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 42\n"

    listed = sunwell("sessions", "show", after[0]["session"])
    assert listed.stdout.count(" done ") == 1


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_killed_while_a_read_runs_it_runs_again(sunwell, fake, env, workspace, tmp_path):
    """A read-only call cut off mid-run changed nothing: it is run again, and the model never hears of the crash."""
    (workspace / "notes.txt").write_text("the notes\n")
    read = Reply(tool_calls=[Call("read_file", json.dumps({"path": "notes.txt"}))])
    expected = uncrashed(tmp_path, env, workspace, [read, Reply(text="read")], "read", "--json", "--model", OPENAI)
    fake.script(read)
    run = Crashing(env, workspace, "read", "--json", "--model", OPENAI, under=killed_opening(workspace / "notes.txt"))
    before = run.kill_when(lambda: run.proc.poll() is not None)
    if not before and "ptrace" in "".join(run.stderr):
        pytest.skip("strace cannot trace here")
    rows = log_rows(env)
    assert any(kind == "step" and content.startswith("run") for kind, content in rows)  # it was running
    assert not any(kind == "toolResult" for kind, _ in rows)

    fake.script(Reply(text="read"))
    resumed = sunwell("run", "--resume", "--json")
    assert resumed.code == 0, resumed.stderr
    after = resumed.events
    resumed_turn(before, after)
    [result] = [e for e in after if e["type"] == "toolResult"]
    assert (result["callId"], result["ok"]) == ("call_1", True) and "the notes" in result["output"]  # ran again
    assert "call_interrupted" not in [e["code"] for e in after if e["type"] == "notice"]
    assert without_cache_key([r.body for r in fake.requests]) == expected  # what a run without the kill sends
    assert after[-1]["status"] == "completed" and after[-1]["toolCalls"] == 1


def test_killed_after_the_reply_is_logged_before_its_call_starts_the_call_runs_once(sunwell, fake, env, workspace,
                                                                                   tmp_path, user_config):
    """The boundary between the reply's row and its call's first step: a user's pre_tool hook runs there, and this
    one holds the process until `go` exists (it marks its start in the run's data dir)."""
    held = ("import os, pathlib, time\n"
            "pathlib.Path(os.environ['SUNWELL_DATA_DIR'], 'hooked').touch()\n"
            "while not os.path.exists('go'): time.sleep(0.05)\n")
    user_config(json.dumps({"hooks": {"pre_tool": [{"match": "run_command", "command": [sys.executable, "-c", held]}]}}))
    command = Reply(tool_calls=[Call("run_command", json.dumps({"command": COUNT}))])
    args = ("count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    expected = uncrashed(tmp_path, env, workspace, [command, Reply(text="counted")], *args, touched=["go"])
    fake.script(command)
    run = Crashing(env, workspace, *args)
    before = run.kill_when(lambda: (Path(env["SUNWELL_DATA_DIR"]) / "hooked").exists())
    rows = log_rows(env)
    assert any(kind == "message" and "run_command" in content for kind, content in rows)  # the reply is in
    assert not any(kind in ("step", "toolResult") for kind, _ in rows)  # nothing of its call
    (workspace / "go").touch()
    time.sleep(0.2)
    assert counted(workspace) == 0

    fake.script(Reply(text="counted"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    assert counted(workspace) == 1
    after = resumed.events
    resumed_turn(before, after)
    [result] = [e for e in after if e["type"] == "toolResult"]
    assert (result["callId"], result["ok"]) == ("call_1", True)
    assert "call_interrupted" not in [e["code"] for e in after if e["type"] == "notice"]
    assert without_cache_key([r.body for r in fake.requests]) == expected  # what a run without the kill sends


def test_killed_while_a_command_runs_it_is_answered_interrupted_not_run_again(sunwell, fake, env, workspace,
                                                                            user_config):
    user_config("sandbox: off\n")  # the command runs for real, not staged
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": WAITS}))]))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    before = run.kill_when(lambda: counted(workspace) == 1)
    (workspace / "go").touch()  # the orphaned command may end now

    listed = sunwell("sessions", "list")
    assert "interrupted" in listed.stdout
    shown = sunwell("sessions", "show", before[0]["session"])
    assert "step" in shown.stdout and "run call_1" in shown.stdout

    fake.script(Reply(text="I will check the counter first"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    time.sleep(0.2)
    assert counted(workspace) == 1  # never run again
    after = resumed.events
    resumed_turn(before, after)
    result = next(e for e in after if e["type"] == "toolResult")
    assert result["callId"] == "call_1" and result["error"]["code"] == "interrupted"
    notices = [e for e in after if e["type"] == "notice" and e["code"] == "call_interrupted"]
    assert len(notices) == 1 and "run_command" in notices[0]["message"]
    [answer] = tool_messages(fake.requests[-1])
    assert answer["tool_call_id"] == "call_1" and "interrupted" in answer["content"]
    assert after[-1]["status"] == "completed"



def test_undo_after_an_unstaged_command_cut_off_puts_back_what_it_did(sunwell, fake, env, workspace, user_config):
    """The snapshot taken before it outlives the kill: the resumed turn records from it what the command did."""
    user_config("sandbox: off\n")
    untouched = files_of(workspace)
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": WAITS}))]))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    run.kill_when(lambda: counted(workspace) == 1)
    try:  # `go` only once undo is checked: made before the resume, it would count as the command's change
        fake.script(Reply(text="I will check the counter first"))
        resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
        assert resumed.code == 0, resumed.stderr
        [notice] = [e for e in resumed.events if e["type"] == "notice" and e["code"] == "call_interrupted"]
        assert "undo puts back the 1 workspace file(s) changed since it started (counter.txt)" in notice["message"]
        [answer] = tool_messages(fake.requests[-1])
        assert "undo puts back" in answer["content"] and "outside the workspace" in answer["content"]
        undone = sunwell("undo")
        assert undone.code == 0, undone.stderr
        assert files_of(workspace) == untouched
    finally:
        (workspace / "go").touch()  # the orphaned command may end now


def test_the_snapshot_of_an_unstaged_command_cut_off_is_gone_once_resumed(sunwell, fake, env, workspace,
                                                                          user_config):
    user_config("sandbox: off\n")
    staging = Path(env["SUNWELL_DATA_DIR"]) / "staging"
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": WAITS}))]))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    run.kill_when(lambda: counted(workspace) == 1)
    (workspace / "go").touch()
    [kept] = staging.glob("snapshot-*")  # written down before the command started
    assert (kept / "manifest.json").is_file()
    fake.script(Reply(text="I will check the counter first"))
    assert sunwell("run", "--resume", "--json", "--yes", "--trust", "shell").code == 0
    assert not list(staging.glob("snapshot-*"))


def test_killed_while_an_mcp_call_runs_it_is_answered_interrupted_not_called_again(sunwell, fake, env, workspace):
    """The reply's first call (a write) had its result before the crash, its second (the MCP call) was running."""
    write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={"box": toolbox(sandbox="off")})
    tally = Call("box__tally", json.dumps({"counter": str(workspace / "counter.txt"), "until": str(workspace / "go")}))
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "a.txt", "content": "changed\n"})), tally]))
    run = Crashing(env, workspace, "tally", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    before = run.kill_when(lambda: counted(workspace) == 1)
    (workspace / "go").touch()  # the orphaned server may answer now, to no one
    assert (workspace / "a.txt").read_text() == "changed\n"
    shown = sunwell("sessions", "show", before[0]["session"])
    assert "run call_2" in shown.stdout

    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "x = 1\n"}))]),
                Reply(text="I will look at the counter before tallying again"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    time.sleep(0.2)
    assert counted(workspace) == 1  # called once, never again
    after = resumed.events
    resumed_turn(before, after)
    result = next(e for e in after if e["type"] == "toolResult")
    assert (result["callId"], result["name"], result["error"]["code"]) == ("call_2", "box__tally", "interrupted")
    notices = [e for e in after if e["type"] == "notice" and e["code"] == "call_interrupted"]
    assert len(notices) == 1 and "box__tally" in notices[0]["message"]
    answers = tool_messages(fake.requests[1])
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2"] and "interrupted" in answers[1]["content"]
    assert "interrupted" not in answers[0]["content"]  # the write's result, had before the crash
    assert after[-1]["status"] == "completed" and after[-1]["toolCalls"] == 3

    undone = sunwell("undo")  # the whole turn, before and after the crash
    assert undone.code == 0, undone.stderr
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 42\n"
    assert counted(workspace) == 1


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_killed_between_a_writes_temp_file_and_its_rename_the_file_is_whole_and_the_write_not_repeated(
        sunwell, fake, env, workspace):
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "a.txt", "content": "changed\n" * 5000}))]))
    run = Crashing(env, workspace, "write", "--json", "--yes", "--model", OPENAI, under=KILLED_AT_RENAME)
    before = run.kill_when(lambda: run.proc.poll() is not None)
    if not before and "ptrace" in "".join(run.stderr):
        pytest.skip("strace cannot trace here")
    [temp] = workspace.glob(".sunwell-*.tmp")  # killed between the two: the temp file written whole, not renamed
    assert temp.read_text() == "changed\n" * 5000
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert any(kind == "step" and content.startswith("run") for kind, content in log_rows(env))

    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "x = 1\n"}))]),
                Reply(text="I will look at a.txt before writing it again"))
    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"  # the old content, not written again
    assert not list(workspace.rglob(".sunwell-*.tmp"))  # the dead writer's temp file is gone
    after = resumed.events
    resumed_turn(before, after)
    result = next(e for e in after if e["type"] == "toolResult")
    assert (result["callId"], result["error"]["code"]) == ("call_1", "interrupted")
    notices = [e for e in after if e["type"] == "notice" and e["code"] == "call_interrupted"]
    assert len(notices) == 1 and "write_file" in notices[0]["message"]
    assert after[-1]["status"] == "completed" and (workspace / "src" / "app.py").read_text() == "x = 1\n"

    undone = sunwell("undo")  # the whole turn: the write after the crash, and nothing of the one cut
    assert undone.code == 0, undone.stderr
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 42\n"
    assert not list(workspace.rglob(".sunwell-*.tmp"))

@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
def test_killed_while_a_staged_command_runs_it_runs_again_staged_and_applies_once(sunwell, fake, env, workspace,
                                                                                  tmp_path):
    untouched = files_of(workspace)
    command = Reply(tool_calls=[Call("run_command", json.dumps({"command": WAITS}))])
    args = ("count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    expected = uncrashed(tmp_path, env, workspace, [command, Reply(text="counted")], *args, touched=["go"])
    fake.script(command)
    run = Crashing(env, workspace, *args)
    run.kill_when(lambda: any(kind == "step" and content.startswith("staged") for kind, content in log_rows(env)))
    if any(kind == "notice" and "effects_unavailable" in content for kind, content in log_rows(env)):
        pytest.skip("commands cannot be staged here")
    time.sleep(0.3)
    assert counted(workspace) == 0  # whatever it did stayed in its staging copy
    (workspace / "go").touch()

    fake.script(Reply(text="counted"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    assert counted(workspace) == 1
    result = next(e for e in resumed.events if e["type"] == "toolResult")
    assert result["ok"], result
    assert without_cache_key([r.body for r in fake.requests]) == expected  # what a run without the kill sends

    undone = sunwell("undo")  # the whole turn: the command's changes applied after the crash
    assert undone.code == 0, undone.stderr
    (workspace / "go").unlink()  # the test's, not the turn's
    assert files_of(workspace) == untouched


def test_killed_while_an_approval_waits_it_is_asked_again(sunwell, fake, env, workspace, tmp_path):
    untouched = files_of(workspace)
    write = Reply(tool_calls=[Call("write_file", json.dumps({"path": "a.txt", "content": "once\n"}))])
    args = ("write", "--json", "--approve", "ask", "--model", OPENAI)
    expected = uncrashed(tmp_path, env, workspace, [write, Reply(text="written")], *args, input="y\n")
    fake.script(write)
    run = Crashing(env, workspace, *args)
    before = run.kill_when(lambda: "Allow?" in "".join(run.stderr))
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"

    fake.script(Reply(text="written"))
    resumed = sunwell("run", "--resume", "--json", "--approve", "ask", input="y\n")
    assert resumed.code == 0, resumed.stderr
    assert "Allow?" in resumed.stderr  # asked again
    assert (workspace / "a.txt").read_text() == "once\n"
    after = resumed.events
    resumed_turn(before, after)
    assert [(e["decision"], e["by"]) for e in after if e["type"] == "approval"] == [("allow", "user")]
    [answer] = tool_messages(fake.requests[-1])
    assert answer["tool_call_id"] == "call_1" and "interrupted" not in answer["content"]
    assert without_cache_key([r.body for r in fake.requests]) == expected  # what a run without the kill sends

    undone = sunwell("undo")
    assert undone.code == 0, undone.stderr
    assert files_of(workspace) == untouched


def test_a_turn_that_ended_in_a_provider_error_resends_only_the_failed_request(sunwell, fake, workspace,
                                                                               user_config):
    user_config("provider_attempts: 1\n")
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": COUNT}))]),
                Fail(500, "the server fell over"))
    failed = sunwell("run", "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    assert failed.code == 1 and failed.events[-1]["status"] == "error"
    assert "interrupted" not in sunwell("sessions", "list").stdout
    assert "[error]" in sunwell("sessions", "list").stdout

    fake.script(Reply(text="counted once"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    assert len(fake.requests) == 3 and fake.requests[2].body == fake.requests[1].body
    assert counted(workspace) == 1
    resumed_turn(failed.events, resumed.events)
    assert resumed.events[0]["seq"] == failed.events[-1]["seq"] + 1
    # the history shows one turn with one `done`, the last
    shown = sunwell("sessions", "export", failed.events[0]["session"])
    assert [e["data"]["status"] for e in json.loads(shown.stdout)["events"] if e["kind"] == "done"] == [
        "error", "completed"]


def test_a_finished_turn_is_not_resumed_and_another_workspace_is_refused(sunwell, fake, workspace, tmp_path):
    fake.script(Reply(text="hi"))
    done = sunwell("run", "hello", "--json", "--model", OPENAI)
    assert done.code == 0
    again = sunwell("run", "--resume")
    assert again.code == 2 and "nothing to resume" in again.stderr
    other = tmp_path / "other"
    other.mkdir()
    refused = sunwell("run", "--resume", "--session", done.events[0]["session"], cwd=other)
    assert refused.code == 2 and "belongs to the workspace" in refused.stderr
    assert sunwell("run", "--resume", "a prompt").code == 2


def test_a_reply_cut_by_the_crash_is_asked_again_and_its_calls_answered(sunwell, fake, env, workspace):
    """The process died while the reply streamed: its calls were shown, never recorded nor run."""
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": COUNT}))], delay=0.5, chunk=4))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    before = run.kill_when(lambda: any(kind == "toolCall" for kind, _ in log_rows(env)))
    assert not any(kind == "message" and "run_command" in content for kind, content in log_rows(env))

    fake.script(Reply(text="nothing to run after all"))
    resumed = sunwell("run", "--resume", "--json", "--yes", "--trust", "shell")
    assert resumed.code == 0, resumed.stderr
    assert fake.requests[1].body == fake.requests[0].body
    assert counted(workspace) == 0
    events = [e for e in before if e["type"] != "toolCallDelta"] + resumed.events
    broken = [e for e in resumed.events if e["type"] == "toolResult"]
    assert [(e["callId"], e["error"]["code"]) for e in broken] == [("call_1", "interrupted")]
    assert events[-1]["status"] == "completed"


def test_the_resumed_session_reads_back_as_one_turn(sunwell, fake, env, workspace):
    fake.script(Reply(tool_calls=[Call("read_file", json.dumps({"path": "a.txt"}))]),
                Reply(text="x", wait_for=workspace / "never"))
    run = Crashing(env, workspace, "read", "--json", "--yes", "--model", OPENAI)
    run.kill_when(requested(fake, 2))
    fake.script(Reply(text="read it"))
    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr

    from sunwell.agent.replay import replay
    from sunwell.agent.sessions import SessionStore

    with SessionStore(Path(env["SUNWELL_DATA_DIR"]) / "sessions.db") as store:
        events = [e.wire() for e in replay(store.events(resumed.events[0]["session"]))]
    events = [e for e in events if e["type"] != "userMessage"]
    assert [e["type"] for e in events].count("done") == 1
    check_stream_rules([{**e, "seq": i} for i, e in enumerate(events)])
    assert os.environ.get("SUNWELL_DATA_DIR") != env["SUNWELL_DATA_DIR"]
