"""Durable turns (PROTOCOL.md "Durable turns"): a real `sunwell run` killed with SIGKILL at a step boundary, then
`sunwell run --resume`. The scripted provider holds an answer until a file appears (`Reply.wait_for`), so the kill
lands exactly where the test wants it; a side-effect counter shows what ran how often."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Fail, FakeProvider, Reply
from mcp_support import toolbox, write_user_config

OPENAI = "openai:gpt-4o"
COUNT = "echo ran >> counter.txt"
WAITS = f"{COUNT}; for i in $(seq 400); do [ -e go ] && break; sleep 0.05; done; echo finished"
"""Counts itself, then runs until a file `go` appears (20 s at most)."""
KILLED_AT_RENAME = ["strace", "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=renameat,renameat2",
                    "-e", "inject=renameat,renameat2:error=EINTR:signal=SIGKILL:when=1"]
"""Runs a process under strace, killed on entering its first rename by directory descriptor (the rename never
happens): the safe writer's, from its temp file to the target (checkpoints and the rest rename by path)."""


def killed_opening(path: Path) -> list[str]:
    """Runs a process under strace, killed on entering its first open of `path` (the open never happens)."""
    # no --seccomp-bpf: with it strace does not filter by path and the inject never fires
    return ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(path), "-e", "trace=openat",
            "-e", "inject=openat:error=EINTR:signal=SIGKILL:when=1"]


class Crashing:
    """A `sunwell run` in a subprocess, killed with SIGKILL once `ready()` holds."""

    def __init__(self, env: dict[str, str], workspace: Path, *args: str, under: Sequence[str] = ()) -> None:
        self.proc = subprocess.Popen([*under, sys.executable, "-m", "sunwell", "run", *args], env=env, cwd=workspace,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        self.stdout: list[str] = []  # read as it comes: a full pipe would stop the process before its step
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr, 1), daemon=True).start()
        self._reading = threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout, 65536), daemon=True)
        self._reading.start()

    @staticmethod
    def _read(stream, into: list[str], size: int) -> None:
        while chunk := stream.read1(size) if hasattr(stream, "read1") else stream.read(size):
            into.append(chunk)

    def kill_when(self, ready: Callable[[], bool], timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"ended before the step: {''.join(self.stderr)}"
            assert time.monotonic() < deadline, f"the step never came: {''.join(self.stderr)}"
            time.sleep(0.02)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        assert self.proc.returncode == -signal.SIGKILL, "".join(self.stderr) + "".join(self.stdout)
        self._reading.join(timeout=10)
        return [json.loads(line) for line in "".join(self.stdout).splitlines() if line.startswith("{")]


@pytest.fixture
def user_config(tmp_path: Path) -> Callable[[str], None]:
    def write(text: str) -> None:
        folder = tmp_path / "config" / "sunwell"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(text)

    return write


def log_rows(env: dict[str, str]) -> list[tuple[str, str]]:
    """(kind, content) of every row of the session log, read as another process would."""
    path = Path(env["SUNWELL_DATA_DIR"]) / "sessions.db"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT kind, content FROM events ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # not made yet
        return []


def requested(fake: FakeProvider, n: int) -> Callable[[], bool]:
    return lambda: len(fake.requests) >= n


def counted(workspace: Path) -> int:
    counter = workspace / "counter.txt"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def resumed_turn(before: list[dict], after: list[dict]) -> None:
    """The resumed run goes on with the killed one's turn id and `seq` (no gap after what the log kept)."""
    assert {e["turn"] for e in after} == {before[0]["turn"]}
    seqs = [e["seq"] for e in after]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and seqs[0] <= before[-1]["seq"] + 1


def uncrashed(tmp_path: Path, env: dict[str, str], workspace: Path, replies: Sequence[Reply], *args: str,
              input: str | None = None, touched: Sequence[str] = ()) -> list[dict]:
    """The request bodies `sunwell run ARGS` sends when nothing kills it: the same script from a provider of its own,
    in a copy of `workspace` as it is now (its path put back in the bodies) with a data dir of its own. `touched`:
    files made in the copy first (`go`, so that a command waiting for it does not)."""
    other = tmp_path / "uncrashed"
    shutil.copytree(workspace, other / "ws", symlinks=True)
    for name in touched:
        (other / "ws" / name).touch()
    with FakeProvider() as provider:
        provider.script(*replies)
        done = subprocess.run([sys.executable, "-m", "sunwell", "run", *args], input=input, check=False,
                              capture_output=True, text=True, cwd=other / "ws", timeout=60, env={
                                  **env, "SUNWELL_DATA_DIR": str(other / "data"),
                                  "OPENAI_BASE_URL": f"{provider.url}/v1"})
        assert done.returncode == 0, done.stderr
        assert provider.remaining == 0
        return [json.loads(json.dumps(r.body).replace(str(other / "ws"), str(workspace))) for r in provider.requests]


def files_of(workspace: Path) -> dict[str, bytes]:
    """Every file of the workspace with its content, to compare its state before a turn with after an undo."""
    return {str(p.relative_to(workspace)): p.read_bytes() for p in sorted(workspace.rglob("*")) if p.is_file()}


def tool_messages(request) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def test_killed_after_a_model_reply_the_turn_goes_on_with_the_same_request(sunwell, fake, env, workspace):
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": COUNT})),
                                  Call("write_file", json.dumps({"path": "a.txt", "content": "changed\n"}))]),
                Reply(text="never seen", wait_for=workspace / "never"))
    run = Crashing(env, workspace, "count", "--json", "--yes", "--trust", "shell", "--model", OPENAI)
    before = run.kill_when(requested(fake, 2))  # both calls ran, their results are in; the next request waits
    assert counted(workspace) == 1 and (workspace / "a.txt").read_text() == "changed\n"

    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "x = 1\n"}))]),
                Reply(text="all done"))
    resumed = sunwell("run", "--resume", "--json", "--yes")
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
    assert [r.body for r in fake.requests] == expected  # what a run without the kill sends
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
    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr
    assert counted(workspace) == 1
    after = resumed.events
    resumed_turn(before, after)
    [result] = [e for e in after if e["type"] == "toolResult"]
    assert (result["callId"], result["ok"]) == ("call_1", True)
    assert "call_interrupted" not in [e["code"] for e in after if e["type"] == "notice"]
    assert [r.body for r in fake.requests] == expected  # what a run without the kill sends


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
    resumed = sunwell("run", "--resume", "--json", "--yes")
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
    resumed = sunwell("run", "--resume", "--json", "--yes")
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
    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr
    assert counted(workspace) == 1
    result = next(e for e in resumed.events if e["type"] == "toolResult")
    assert result["ok"], result
    assert [r.body for r in fake.requests] == expected  # what a run without the kill sends

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
    assert [r.body for r in fake.requests] == expected  # what a run without the kill sends

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
    resumed = sunwell("run", "--resume", "--json", "--yes")
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
    resumed = sunwell("run", "--resume", "--json", "--yes")
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


def test_killed_during_compaction_it_is_made_again_before_the_same_request(sunwell, fake, env, workspace,
                                                                           user_config):
    from sunwell.agent.prompts import COMPACT_SYSTEM

    user_config('models:\n  "openai:gpt-4o": {context_window: 8192}\n')
    fake.context_limit = 8192
    for n in range(8):
        (workspace / f"f{n}.py").write_text("".join(f"def func_{n}_{i}(value):  # helper {i} of file {n}\n"
                                                    f"    return value * {i} + {n}\n" for i in range(100)))
    untouched = files_of(workspace)
    summaries: list[dict] = []
    reads = [f"f{n % 8}.py" for n in range(16)]
    writes = [Call("write_file", json.dumps({"path": "notes.md", "content": "before the compaction\n"})),
              Call("write_file", json.dumps({"path": "f0.py", "content": "after it\n"}))]

    def model(body: dict) -> Reply:
        if COMPACT_SYSTEM in json.dumps(body["messages"][0]):
            summaries.append(body)
            held = workspace / "never" if len(summaries) == 1 else None
            return Reply(text=f"Summary {len(summaries)}: files were read.", wait_for=held)
        if reads:
            first = [writes.pop(0)] if len(reads) == 16 else []
            return Reply(text="Reading the next one to compare the helpers. " * 25,  # text is never elided
                         tool_calls=[*first, Call("read_file", json.dumps({"path": reads.pop(0)}))])
        if writes:
            return Reply(tool_calls=[writes.pop(0)])
        return Reply(text="Read them all.")

    fake.script(*[model] * 100)
    run = Crashing(env, workspace, "read them", "--json", "--yes", "--model", OPENAI)
    run.kill_when(lambda: len(summaries) == 1, timeout=60)
    assert not any(kind == "compaction" for kind, _ in log_rows(env))
    assert (workspace / "notes.md").exists()  # the turn wrote before the crash
    asked_before = [r.body for r in fake.requests if COMPACT_SYSTEM not in json.dumps(r.body["messages"][0])]

    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr
    assert summaries[1] == summaries[0]  # the same compaction, made again
    assert [e["code"] for e in resumed.events if e["type"] == "notice"].count("compacted") >= 1
    assert [kind for kind, _ in log_rows(env)].count("compaction") >= 1
    asked_after = [r.body for r in fake.requests if COMPACT_SYSTEM not in json.dumps(r.body["messages"][0])]
    assert asked_after[: len(asked_before)] == asked_before and not reads and not writes
    assert resumed.events[-1]["status"] == "completed"
    assert (workspace / "notes.md").exists() and (workspace / "f0.py").read_text() == "after it\n"

    undone = sunwell("undo")  # the whole turn, before and after the crash
    assert undone.code == 0, undone.stderr
    assert files_of(workspace) == untouched
