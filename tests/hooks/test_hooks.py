"""Hooks (sunwell/hooks/, README "Hooks") with real hook scripts (tests/hook_scripts/) around real turns against
the scripted provider. Attacks first: a workspace's hook before approval, a hook that tries to approve, a hook that
crashes, hangs or prints 10 MB; then what each point does."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from person import Person
from sunwell.agent.engine import Engine
from sunwell.config import load_settings
from sunwell.config.settings import HooksSettings, Settings
from sunwell.hooks import hook_entries
from sunwell.tools.policy.audit import AuditLog

SCRIPTS = Path(__file__).parents[1] / "hook_scripts"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def hook(script: str, match: str = "*", timeout: float = 30, *args: str) -> dict:
    return {"match": match, "command": [sys.executable, str(SCRIPTS / script), *args], "timeout": timeout}


@pytest.fixture
def hook_log(tmp_path: Path, fake, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "SUNWELL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOOK_LOG", str(tmp_path / "hook.log"))
    return tmp_path / "hook.log"


def engine_with(tmp_path: Path, workspace: Path, approval: str = "auto", **hooks: list[dict]) -> Engine:
    settings = Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval=approval,
                        hooks=HooksSettings.model_validate(hooks))
    return Engine(settings, workspace)


async def turn(engine: Engine, fake, *calls: Call, text: str = "go") -> tuple[list, object]:
    fake.script(Reply(tool_calls=list(calls)), Reply(text="finished"))
    events: list = []
    done = await engine.run_turn(text, events.append)
    await engine.aclose()
    return events, done


def results(events: list) -> list:
    return [e for e in events if e.type == "toolResult"]


def notices(events: list) -> list[str]:
    return [e.message for e in events if e.type == "notice" and e.code == "hook"]


def read(path: str = "a.txt") -> Call:
    return Call("read_file", json.dumps({"path": path}))


def write(path: str = "a.txt", content: str = "changed\n") -> Call:
    return Call("write_file", json.dumps({"path": path, "content": content}))


def propose(workspace: Path, **hooks: list[dict]) -> None:
    (workspace / ".sunwell").mkdir(exist_ok=True)
    (workspace / ".sunwell" / "config.yaml").write_text(json.dumps({"hooks": hooks}))


# ---- attacks -------------------------------------------------------------------------------------------------------


async def test_a_workspace_hook_does_not_run_before_the_user_approves_it(tmp_path, workspace, fake, hook_log):
    marker = tmp_path / "pwned"
    propose(workspace, pre_tool=[{"command": [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]}],
            session_start=[{"command": [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]}])
    settings = load_settings(workspace, {"model": "openai:gpt-4o", "data_dir": str(tmp_path / "data"),
                                         "approval": "auto"})
    assert settings.hooks == HooksSettings()  # never merged into the user's
    events, done = await turn(Engine(settings, workspace), fake, read())
    assert done.status == "completed" and results(events)[0].ok
    assert not marker.exists()
    told = notices(events)
    assert len(told) == 2 and all("does not run until you approve it" in m for m in told)
    assert "sunwell hooks approve 1" in told[0]


async def test_a_hook_cannot_approve_what_policy_would_ask(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, approval="deny", pre_tool=[hook("approve.py")])
    events, _ = await turn(engine, fake, write())
    result = results(events)[0]
    assert not result.ok and result.error.code == "denied" and "policy" in result.error.message
    approval = next(e for e in events if e.type == "approval")
    assert (approval.decision, approval.by) == ("deny", "policy")
    assert (workspace / "a.txt").read_text().startswith("hello")


async def test_a_crashing_hook_is_a_warning_and_the_call_goes_through_policy(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, approval="deny", pre_tool=[hook("crash.py")])
    events, _ = await turn(engine, fake, read(), write())
    first, second = results(events)
    assert first.ok and not second.ok and second.error.code == "denied" and "policy" in second.error.message
    told = notices(events)
    assert len(told) == 2 and "exited with 1" in told[0] and "the hook broke" in told[0]


async def test_a_hanging_hook_is_stopped_at_its_timeout(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, pre_tool=[hook("hang.py", "*", 1)])
    started = time.monotonic()
    events, _ = await turn(engine, fake, read())
    assert time.monotonic() - started < 15
    assert results(events)[0].ok
    assert "timed out after 1 s" in notices(events)[0]
    line = next(e for e in AuditLog(tmp_path / "data").recent() if e["tool"] == "hook:pre_tool")
    assert (line["ok"], line["error"], line["decision"]) == (False, "timeout", None)


async def test_ten_megabytes_from_a_hook_are_capped_like_a_tools_output(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, post_tool=[hook("flood.py")])
    events, _ = await turn(engine, fake, read())
    result = results(events)[0]
    assert result.ok and "hello from a" in result.output
    assert len(result.output.encode()) < 2 * engine.settings.max_output_bytes
    assert "bytes omitted" in result.output


@needs_bwrap
async def test_an_approved_workspace_hook_runs_sandboxed_and_cannot_approve_others(tmp_path, sunwell, workspace,
                                                                                    fake, hook_log):
    data = tmp_path / "data"
    approvals = data / "hooks" / "approved.json"
    outside = tmp_path / "outside.txt"
    propose(workspace, pre_tool=[{"match": "read_file", "command": [sys.executable, str(SCRIPTS / "escape.py"),
                                                                     str(approvals), str(outside),
                                                                     str(workspace / "planted.txt")]}],
            post_tool=[{"command": [sys.executable, "-c", "print('second')"]}])
    listed = sunwell("hooks", "list")
    assert listed.code == 0, listed.stderr
    assert "1  pre_tool" in listed.stdout and "not approved" in listed.stdout
    approved = sunwell("hooks", "approve", "1", "--yes")
    assert approved.code == 0, approved.stderr
    before = approvals.read_text()
    settings = load_settings(workspace, {"model": "openai:gpt-4o", "data_dir": str(data), "approval": "auto"})
    events, _ = await turn(Engine(settings, workspace), fake, read())
    result = results(events)[0]
    assert not result.ok and result.error.code == "denied"  # it ran: its report is the reason
    reason = result.error.message
    assert f"refused {approvals}" in reason and f"refused {workspace / 'planted.txt'}" in reason
    # a path outside is the sandbox's own (its /tmp is private), never the host's
    assert approvals.read_text() == before and not outside.exists() and not (workspace / "planted.txt").exists()
    entries = hook_entries(settings, workspace)
    assert [e.approved for e in entries] == [True, False]


@needs_bwrap
@pytest.mark.parametrize("answer", ["allow", "allowSession", "deny"])
async def test_the_user_is_asked_about_a_proposal_when_someone_can_answer(tmp_path, workspace, fake, hook_log,
                                                                          answer):
    stop = "import sys; print('stop', file=sys.stderr); sys.exit(2)"
    propose(workspace, pre_tool=[{"command": [sys.executable, "-c", stop]}])
    asked = []

    async def asker(request):
        asked.append(request)
        return answer

    settings = load_settings(workspace, {"model": "openai:gpt-4o", "data_dir": str(tmp_path / "data"),
                                         "approval": "ask"})
    events, _ = await turn(Engine(settings, workspace, client=Person(approve=asker)), fake, read())
    assert asked[0].name == "pre_tool hook (proposed by the workspace config)"
    assert asked[0].preview.command.startswith(sys.executable)
    result = results(events)[0]
    assert result.ok == (answer == "deny")
    assert hook_entries(settings, workspace)[0].approved == (answer == "allow")


async def test_a_workspace_script_that_changes_after_approval_is_asked_again(tmp_path, workspace, fake, hook_log):
    script = workspace / "check.py"
    script.write_text("print('v1')\n")
    propose(workspace, pre_tool=[{"command": [sys.executable, "check.py"]}])
    settings = load_settings(workspace, {"model": "openai:gpt-4o", "data_dir": str(tmp_path / "data")})
    from sunwell.hooks.catalog import approve

    approve(hook_entries(settings, workspace)[0], workspace, tmp_path / "data")
    assert hook_entries(settings, workspace)[0].approved
    script.write_text("import os; os.system('curl evil')\n")
    assert not hook_entries(settings, workspace)[0].approved


@pytest.mark.parametrize(("command", "files", "changed"), [
    (["hooks/check.py"], {"hooks/check.py": "import helper\n", "hooks/helper.py": "OK = 1\n"}, "hooks/helper.py"),
    (["hooks/check.py"], {"hooks/check.py": "import lib.rules\n", "hooks/lib/rules.py": "OK = 1\n"},
     "hooks/lib/rules.py"),
    (["check.py"], {"check.py": "import helper\n", "helper.py": "OK = 1\n"}, "helper.py"),
    (["-m", "tools.check"], {"tools/__init__.py": "", "tools/check.py": "from . import rules\n",
                             "tools/rules.py": "OK = 1\n"}, "tools/rules.py"),
], ids=["beside-it", "in-a-subfolder", "at-the-root", "a-module"])
def test_a_module_an_approved_hook_loads_that_changes_is_asked_again(tmp_path, workspace, command, files, changed):
    """Approval covers what the hook loads from the workspace, not only the files its argv names (issue 40, item 6):
    the folder of a script it names (its whole tree, or the root's files of the script's kind) and a `-m` module's
    package. An unrelated file of the workspace changing asks nothing."""
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    propose(workspace, pre_tool=[{"command": [sys.executable, *command]}])
    settings = load_settings(workspace, {"model": "openai:gpt-4o", "data_dir": str(tmp_path / "data")})
    from sunwell.hooks.catalog import approve

    approve(hook_entries(settings, workspace)[0], workspace, tmp_path / "data")
    (workspace / "a.txt").write_text("the agent wrote this\n")
    (workspace / "notes.md").write_text("new\n")
    assert hook_entries(settings, workspace)[0].approved
    (workspace / changed).write_text("import os; os.system('curl evil')\n")
    assert not hook_entries(settings, workspace)[0].approved


def test_a_hook_is_an_argv_never_a_shell_line():
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        HooksSettings.model_validate({"pre_tool": [{"command": "rm -rf / ; echo"}]})
    with pytest.raises(ValidationError):
        HooksSettings.model_validate({"pre_tool": [{"command": []}]})


# ---- the points ----------------------------------------------------------------------------------------------------


async def test_pre_tool_exit_2_denies_with_stderr_as_the_reason(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, pre_tool=[hook("deny.py", "write_*")])
    events, done = await turn(engine, fake, read(), write())
    first, second = results(events)
    assert first.ok
    assert not second.ok and second.error.code == "denied"
    assert "no write_file here: the files are frozen" in second.error.message
    assert (workspace / "a.txt").read_text().startswith("hello")
    assert not [e for e in events if e.type == "approval"]  # denied before policy: no one was asked
    told = json.loads(hook_log.read_text())
    assert told["tool"] == "write_file" and told["arguments"] == {"path": "a.txt", "content": "changed\n"}
    assert told["session"] == done.session and told["workspace"] == str(workspace.resolve())
    assert told["trust"] == "workspace" and told["event"] == "pre_tool"
    assert "no write_file here" in notices(events)[0]
    model_saw = [m for m in fake.requests[-1].body["messages"] if m["role"] == "tool"][-1]
    assert "the files are frozen" in str(model_saw["content"])
    audit = AuditLog(tmp_path / "data").recent()
    line = next(e for e in audit if e["tool"] == "hook:pre_tool")
    assert (line["decision"], line["by"], line["arguments"]["tool"]) == ("deny", "hook", "write_file")
    call_line = next(e for e in audit if e["tool"] == "write_file")
    assert (call_line["decision"], call_line["by"]) == ("deny", "hook")


async def test_post_tool_appends_its_output_as_a_note(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, post_tool=[hook("note.py", "read_*")])
    events, _ = await turn(engine, fake, read())
    output = results(events)[0].output
    assert output.startswith("1\thello from a") or "hello from a" in output
    assert output.rstrip().endswith("checked read_file (ok); remember to run the tests")
    assert "[note from the post_tool hook" in output


async def test_turn_end_and_session_start_run_with_the_session(tmp_path, workspace, fake, hook_log):
    engine = engine_with(tmp_path, workspace, turn_end=[hook("record.py")], session_start=[hook("record.py")])
    events, done = await turn(engine, fake, read())
    started, ended = [json.loads(line) for line in hook_log.read_text().splitlines()]
    assert started["event"] == "session_start" and started["session"] == done.session
    assert ended["event"] == "turn_end" and ended["status"] == "completed" and ended["turn"] == done.turn
    assert events[-1].type == "done"
    fake.script(Reply(text="again"))
    await engine.run_turn("more", lambda e: None, session=done.session)
    assert [json.loads(line)["event"] for line in hook_log.read_text().splitlines()] == [
        "session_start", "turn_end", "turn_end"]  # session_start once, for the new session
