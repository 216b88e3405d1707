"""The agent's own tools end to end: get_time, math_eval, kv_set/kv_get, update_plan and its `plan` event, `::plan`,
and `--dry-run=risky`. The CLI runs as a real subprocess against the scripted provider; the session-scoped state is
checked through a real engine and its sessions (only the model's answers are scripted)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.agent.chat import UserInput
from sunwell.agent.engine import Engine
from sunwell.agent.session import Session
from sunwell.tools.scratch import MAX_BYTES

OPENAI = "openai:gpt-4o"


def call(name: str, **arguments) -> Call:
    return Call(name, json.dumps(arguments))


def results(events: list[dict]) -> dict[str, dict]:
    calls = {e["callId"]: e["name"] for e in events if e["type"] == "toolCall"}
    return {f"{calls[e['callId']]}#{i}": e for i, e in enumerate(e for e in events if e["type"] == "toolResult")}


def outcome(events: list[dict]) -> list[tuple[str, str | None]]:
    return [(e["name"], e["error"]["code"] if e["error"] else None) for e in events if e["type"] == "toolResult"]


PLAN = [{"step": "Read the failing test", "status": "done"}, {"step": "Fix the parser", "status": "in_progress"},
        {"step": "Run the tests", "status": "pending"}]


# ---- through `sunwell run` -------------------------------------------------------------------------------------


def test_the_built_ins_answer_in_one_turn(sunwell, fake):
    fake.script(Reply(tool_calls=[call("get_time", format="unix"), call("get_time", timezone="Asia/Tokyo"),
                                  call("math_eval", expression="round(1200 * (1 + 0.035) ** 10, 2)"),
                                  call("kv_set", key="base", value="https://example.com/v2"),
                                  call("kv_get", key="base"), call("kv_get", key="nope"),
                                  call("get_time", timezone="Mars/Olympus_Mons")]),
                Reply(text="done"))
    before = int(time.time())
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "discovery", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    shown = [e for e in run.events if e["type"] == "toolResult"]
    assert before <= int(shown[0]["output"]) <= int(time.time())
    tokyo = dt.datetime.fromisoformat(shown[1]["output"])
    assert tokyo.utcoffset() == dt.timedelta(hours=9) and abs(tokyo.timestamp() - time.time()) < 60
    assert shown[2]["output"] == "1692.72"
    assert shown[3]["ok"] and shown[4]["output"] == "https://example.com/v2"
    assert shown[5]["error"]["code"] == "not_found" and "'base'" in shown[5]["error"]["message"]
    assert shown[6]["error"]["code"] == "validation" and "Mars/Olympus_Mons" in shown[6]["error"]["message"]
    # every one of them is offered at the lowest trust level
    offered = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
    assert {"update_plan", "get_time", "math_eval", "kv_set", "kv_get"} <= offered


def test_update_plan_streams_a_plan_event_and_the_terminal_prints_the_checklist_when_it_changes(sunwell, fake):
    changed = [*PLAN[:1], {"step": "Fix the parser", "status": "done"}, {"step": "Run the tests",
                                                                          "status": "in_progress"}]
    script = [Reply(tool_calls=[call("update_plan", items=PLAN, explanation="the parser drops commas")]),
              Reply(tool_calls=[call("update_plan", items=PLAN, explanation="the parser drops commas")]),
              Reply(tool_calls=[call("update_plan", items=changed)]), Reply(text="fixed")]
    fake.script(*script)
    run = sunwell("run", "go", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    plans = [e for e in run.events if e["type"] == "plan"]
    assert [p["items"] for p in plans] == [PLAN, PLAN, changed]
    assert plans[0]["explanation"] == "the parser drops commas" and plans[2]["explanation"] is None
    first_result = next(e for e in run.events if e["type"] == "toolResult")
    assert plans[0]["seq"] < first_result["seq"] and first_result["ok"]
    assert first_result["output"] == "Plan updated: 1 of 3 steps done; now: Fix the parser."

    fake.script(*script)
    text = sunwell("run", "go", "--model", OPENAI)
    assert text.code == 0, text.stderr
    assert text.stdout.count("Plan 1/3") == 1 and text.stdout.count("Plan 2/3") == 1  # the repeat is not printed
    assert "  ✔ Read the failing test\n  ▶ Fix the parser\n  ○ Run the tests\n  the parser drops commas" in text.stdout


def test_an_invalid_plan_is_refused_with_what_to_fix(sunwell, fake):
    two = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    fake.script(Reply(tool_calls=[call("update_plan", items=two), call("update_plan", items=[{"step": "a",
                                                                                                "status": "doing"}])]),
                Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--json")
    errors = [e["error"] for e in run.events if e["type"] == "toolResult"]
    assert [e["code"] for e in errors] == ["validation", "validation"]
    assert "at most one step may be in_progress" in errors[0]["message"] and "status" in errors[1]["message"]
    assert not [e for e in run.events if e["type"] == "plan"]


WRITE = call("write_file", path="notes.txt", content="hi")
MIXED = [WRITE, call("read_file", path="a.txt"), call("list_files"), call("search_files", pattern="hello"),
         call("update_plan", items=PLAN), call("get_time"), call("math_eval", expression="6 * 7"),
         call("kv_set", key="k", value="v"), call("kv_get", key="k"), call("run_command", command="touch x")]


def test_dry_run_risky_runs_the_read_only_tools_and_answers_every_other_call_dry_run(sunwell, fake, workspace):
    fake.script(Reply(tool_calls=MIXED), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--yes", "--dry-run=risky", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert outcome(run.events) == [
        ("write_file", "dry_run"), ("read_file", None), ("list_files", None), ("search_files", None),
        ("update_plan", None), ("get_time", None), ("math_eval", None), ("kv_set", "dry_run"),
        ("kv_get", "not_found"),  # kv_set did not run: the store is empty
        ("run_command", "dry_run")]
    assert [e["type"] for e in run.events].count("plan") == 1
    assert not (workspace / "notes.txt").exists() and not (workspace / "x").exists()
    assert run.events[-1]["toolCalls"] == len(MIXED)


@pytest.mark.parametrize("flag", ["--dry-run", "--dry-run=all"])
def test_bare_dry_run_is_dry_run_all_and_a_prompt_after_it_stays_the_prompt(sunwell, fake, flag):
    fake.script(Reply(tool_calls=MIXED[:5]), Reply(text="ok"))
    run = sunwell("run", flag, "go on", "--model", OPENAI, "--yes", "--json")
    assert run.code == 0, run.stderr
    assert {code for _, code in outcome(run.events)} == {"dry_run"}
    assert fake.requests[0].body["messages"][-1]["content"] == "go on"


def test_an_unknown_dry_run_mode_is_a_usage_error(sunwell):
    run = sunwell("run", "go", "--model", OPENAI, "--dry-run=some")
    assert run.code == 2 and "--dry-run" in run.stderr


# ---- the session's scratch state -------------------------------------------------------------------------------


async def test_the_store_lasts_the_session_holds_64_kb_and_is_forgotten_on_clear(engine, fake):
    big = "x" * (MAX_BYTES // 2)
    fake.script(Reply(tool_calls=[call("kv_set", key="a", value=big), call("kv_set", key="b", value=big)]),
                Reply(text="stored"),
                Reply(tool_calls=[call("kv_get", key="a"), call("kv_set", key="a", value="short"),
                                  call("kv_set", key="b", value=big)]),
                Reply(text="read"), Reply(tool_calls=[call("kv_get", key="a")]), Reply(text="gone"))
    session, events = Session(engine), []
    await session.submit(UserInput("store"), events.append)
    [first, second] = [e for e in events if e.type == "toolResult"]
    assert first.ok and second.error.code == "execution"
    assert "full" in second.error.message and f"{MAX_BYTES:,}" in second.error.message
    events.clear()
    await session.submit(UserInput("again"), events.append)  # the next turn of the same session
    got, replaced, fits_now = [e for e in events if e.type == "toolResult"]
    assert got.output == big and replaced.ok and fits_now.ok
    await session.submit(UserInput("::clear"), lambda e: None)
    events.clear()
    await session.submit(UserInput("and now"), events.append)
    [missing] = [e for e in events if e.type == "toolResult"]
    assert missing.error.code == "not_found" and "empty" in missing.error.message


async def test_plan_shows_the_live_plan_and_a_reopened_sessions_last_plan(engine, fake, tmp_path, workspace):
    later = [{**step, "status": "done"} for step in PLAN]
    fake.script(Reply(tool_calls=[call("update_plan", items=PLAN)]), Reply(tool_calls=[call("update_plan",
                                                                                             items=later)]),
                Reply(text="done"))
    session, shown = Session(engine), []
    await session.submit(UserInput("::plan"), shown.append)
    assert "No plan yet" in shown[0].output
    await session.submit(UserInput("fix it"), lambda e: None)
    shown.clear()
    await session.submit(UserInput("::plan"), shown.append)
    assert shown[0].output == ("**Plan** (3/3 done)\n\n- [x] Read the failing test\n- [x] Fix the parser\n"
                               "- [x] Run the tests")

    reopened = Engine(engine.settings, workspace)  # another process: no live state, the log only
    assert session.id not in reopened.live
    shown.clear()
    await Session(reopened, session.id).submit(UserInput("::plan"), shown.append)
    assert shown[0].output.startswith("**Plan** (3/3 done)")
    replayed = [e for e in Session(reopened, session.id).replay() if e.type == "plan"]
    assert [[item.status for item in e.items] for e in replayed] == [["done", "in_progress", "pending"],
                                                                      ["done"] * 3]


async def test_the_plan_in_progress_is_marked(engine, fake):
    fake.script(Reply(tool_calls=[call("update_plan", items=PLAN, explanation="why")]), Reply(text="ok"))
    session, shown = Session(engine), []
    await session.submit(UserInput("go"), lambda e: None)
    await session.submit(UserInput("::plan"), shown.append)
    assert shown[0].output == ("**Plan** (1/3 done)\n\n- [x] Read the failing test\n- [ ] **Fix the parser** "
                               "(in progress)\n- [ ] Run the tests\n\nwhy")


def test_the_tools_list_at_discovery_and_the_dry_run_note(sunwell, workspace, tmp_path):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("dry_run: risky\n")
    run = sunwell("chat", "--model", OPENAI, "--trust", "discovery", input="::tools\n::exit\n")
    assert run.code == 0, run.stderr
    for name in ("update_plan", "get_time", "math_eval", "kv_set", "kv_get"):
        assert f"`{name}` — core · trust discovery · auto" in run.stdout or f"{name} — core" in run.stdout
    assert "only read-only calls run" in run.stdout


def test_a_workspace_may_make_the_dry_run_stricter_never_looser(tmp_path: Path):
    from sunwell.config import load_settings

    ws = tmp_path / "ws"
    (ws / ".sunwell").mkdir(parents=True)
    user = tmp_path / "config" / "sunwell" / "config.yaml"
    user.parent.mkdir(parents=True)
    for mine, theirs, expected in [("false", "risky", "risky"), ("risky", "false", "risky"), ("risky", "all", True),
                                   ("true", "risky", True)]:
        user.write_text(f"dry_run: {mine}\n")
        (ws / ".sunwell" / "config.yaml").write_text(f"dry_run: {theirs}\n")
        assert load_settings(ws, {}, env={"XDG_CONFIG_HOME": str(tmp_path / "config")}).dry_run == expected, (mine, theirs)


def test_the_sidecar_takes_dry_run_risky_from_its_client(tmp_path: Path):
    from sunwell.lsp.configuration import read_options, resolve_settings

    for given, expected in [({"dryRun": "risky"}, "risky"), ({"dryRun": True}, True), ({}, False)]:
        options, problems = read_options(given, "initializationOptions")
        settings, more = resolve_settings(tmp_path, options, env={"XDG_CONFIG_HOME": str(tmp_path / "none")})
        assert settings.dry_run == expected and problems == more == []
    options, problems = read_options({"dryRun": "sometimes"}, "initializationOptions")
    assert options.dry_run is None and len(problems) == 1 and "invalid setting 'dryRun'" in problems[0]


def test_a_plan_step_cannot_drive_the_terminal():
    import io

    from sunwell.cli.rendering import Transcript
    from sunwell.wire.events import PlanEvent, PlanItem

    out = io.StringIO()
    Transcript(out)(PlanEvent(items=[PlanItem(step="\x1b[2J\x1b[Hall good\u202e", status="in_progress")]))
    assert out.getvalue() == "Plan 0/1\n  ▶ \\x1b[2J\\x1b[Hall good\\u202e\n"
