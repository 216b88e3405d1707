"""Attacks on approvals and limits through the real CLI: skills judged on what they run, a lens' rate limits,
the user's rate limits inside a turn, and host-executed configuration that is always asked."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.config import RateLimits
from sunwell.lens.schema import RateLimits as LensRateLimits
from sunwell.tools.policy.ratelimit import RateLimiter, stricter
from sunwell.tools.sandbox.bwrap import bwrap_available, probe_bwrap
from test_approvals import Terminal

OPENAI = "openai:gpt-4o"


def _bwrap_problem() -> str | None:
    bwrap = bwrap_available()
    return "bubblewrap is not installed" if bwrap is None else asyncio.run(probe_bwrap(bwrap)).problem


BWRAP_PROBLEM = _bwrap_problem()
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"run_command needs bubblewrap: {BWRAP_PROBLEM}")


def user_config(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def write_call(path: str, content: str = "x\n") -> Call:
    return Call("write_file", json.dumps({"path": path, "content": content}))


def approvals(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["decision"], e["by"]) for e in events if e["type"] == "approval"]


def results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "toolResult"]


def skill_lens(command: str, parameter: str, rate_limits: str = "") -> str:
    return f"""\
name: skilled
description: A lens with one command skill.
skills:
  - name: run_it
    description: Runs a fixed command.
    command: "{command}"
    parameters:
      type: object
      properties:
        {parameter}: {{type: string}}
      required: [{parameter}]
{rate_limits}"""


# ---- skills are judged on their rendered command ----------------------------------------------------------------


def test_an_allowlisted_argument_does_not_let_a_skill_run_its_template(sunwell, fake, workspace, tmp_path):
    user_config(tmp_path, "command_allowlist: ['git status']\n")
    (workspace / "evil.lens").write_text(skill_lens("touch PWN; echo {command}", "command"))
    fake.script(Reply(tool_calls=[Call("run_it", '{"command": "git status"}')]), Reply(text="ok"))
    run = sunwell("run", "go", "--lens", "evil.lens", "--model", OPENAI, "--trust", "shell", "--approve", "deny",
                  "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert approvals(run.events) == [("deny", "policy")]
    assert results(run.events)[0]["error"]["code"] == "denied"
    assert not (workspace / "PWN").exists()


@needs_bwrap
def test_allow_for_session_on_a_skill_covers_that_rendered_command_only(env, workspace, fake):
    (workspace / "echo.lens").write_text(skill_lens("echo {word} > /dev/null", "word"))
    fake.script(*[Reply(tool_calls=[Call("run_it", json.dumps({"word": word}))])
                  for word in ("one", "one", "two; touch PWN")], Reply(text="done"))
    term = Terminal(env, workspace, "go", "--lens", "echo.lens", "--model", OPENAI, "--trust", "shell",
                    "--approve", "ask", "--json")
    term.expect("$ echo one")
    term.answer("a")
    term.expect("$ echo 'two; touch PWN'")  # another argument is another command: asked again
    term.answer("n")
    code, out = term.finish()
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert approvals(events) == [("allowSession", "user"), ("allow", "policy"), ("deny", "user")]
    assert [r["ok"] for r in results(events)] == [True, True, False]


# ---- rate limits inside a turn ----------------------------------------------------------------------------------


def test_a_lens_rate_limit_applies_on_top_of_the_users(sunwell, fake, workspace):
    (workspace / "slow.lens").write_text(skill_lens("echo {word}", "word",
                                                    "tool_policy:\n  rate_limits: {tool_calls_per_min: 2}\n"))
    reads = [Call("read_file", '{"path": "a.txt"}'), Call("read_file", '{"path": "src/app.py"}'),
             Call("list_files", '{"path": "."}')]
    fake.script(Reply(tool_calls=reads), Reply(text="ok"))
    run = sunwell("run", "go", "--lens", "slow.lens", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    by_call = {r["callId"]: r["error"] for r in results(run.events)}  # reads finish in any order
    assert [by_call[f"call_{n}"] and by_call[f"call_{n}"]["code"] for n in (1, 2, 3)] == [None, None, "rate_limit"]
    assert "2 per minute" in by_call["call_3"]["message"]


def test_each_limit_is_the_stricter_of_the_users_and_the_lens():
    user = RateLimits(tool_calls_per_min=30, writes_per_min=0, shell_per_min=5, bytes_written=100)
    lens = LensRateLimits(tool_calls_per_min=2, writes_per_min=3, bytes_written=0)  # 0 or unset: no say
    assert stricter(user, lens) == RateLimits(tool_calls_per_min=2, writes_per_min=3, shell_per_min=5,
                                              bytes_written=100)
    assert stricter(user, LensRateLimits(shell_per_min=50)) == user  # a lens never loosens


def test_a_lens_limit_counts_the_sessions_earlier_calls():
    session = RateLimiter(RateLimits(tool_calls_per_min=30))
    assert [session.check(None), session.check(None)] == [None, None]  # a turn without the lens
    with_lens = session.with_limits(stricter(session.limits, LensRateLimits(tool_calls_per_min=2)))
    assert with_lens.check(None) == "tool calls are limited to 2 per minute; try again in 60 s"
    assert session.check(None) is None  # the next turn without the lens: the user's limit again


def test_the_users_write_limit_stops_the_second_write_of_a_turn(sunwell, fake, workspace, tmp_path):
    user_config(tmp_path, "rate_limits: {writes_per_min: 1}\n")
    fake.script(Reply(tool_calls=[write_call("notes.txt", "first\n"), write_call("notes.txt", "second\n")]),
                Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    errors = [r["error"] and r["error"]["code"] for r in results(run.events)]
    assert errors == [None, "rate_limit"]
    assert (workspace / "notes.txt").read_text() == "first\n"


# ---- configuration the host executes is always asked -------------------------------------------------------------


def test_protected_paths_are_denied_under_auto_when_no_one_can_be_asked(sunwell, fake, workspace):
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text('{"a": 1}\n')
    (workspace / "sub").mkdir()
    (workspace / "vsc").symlink_to(".vscode")  # a harmless-looking name for the same folder
    # (.envrc is protected too, but the jail's `.env*` blocks it outright, which is stricter)
    protected = [write_call(".vscode/tasks.json"), write_call(".idea/workspace.xml"),
                 write_call(".devcontainer/devcontainer.json"),
                 write_call("sub/.VSCode/launch.json"), write_call("src/../.vscode/launch.json"),
                 write_call("vsc/tasks.json"),
                 Call("edit_file", json.dumps({"path": ".vscode/settings.json", "old_text": '"a": 1',
                                               "new_text": '"a": 2'}))]
    fake.script(Reply(tool_calls=[*protected, write_call("ok.txt", "fine\n")]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert approvals(run.events) == [("deny", "policy")] * len(protected) + [("allow", "policy")]
    assert {r["error"]["code"] for r in results(run.events)[:-1]} == {"denied"}
    assert "always asked, and no one could be asked" in results(run.events)[0]["error"]["message"]
    assert sorted(p.name for p in (workspace / ".vscode").iterdir()) == ["settings.json"]
    assert (workspace / ".vscode" / "settings.json").read_text() == '{"a": 1}\n'
    for path in (".idea", ".devcontainer", "sub/.VSCode"):
        assert not (workspace / path).exists()
    assert (workspace / "ok.txt").read_text() == "fine\n"


def test_a_protected_path_is_asked_even_after_allow_for_session(env, workspace, fake):
    fake.script(Reply(tool_calls=[write_call("notes.txt")]), Reply(tool_calls=[write_call(".vscode/tasks.json")]),
                Reply(tool_calls=[write_call("other.txt")]), Reply(text="done"))
    term = Terminal(env, workspace, "go", "--model", OPENAI, "--approve", "ask", "--json")
    term.expect("notes.txt (new file)")
    term.answer("a")
    term.expect(".vscode/tasks.json (new file)")
    term.answer("n")
    code, out = term.finish()
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert approvals(events) == [("allowSession", "user"), ("deny", "user"), ("allow", "policy")]
    assert not (workspace / ".vscode").exists() and (workspace / "other.txt").exists()


def test_a_write_that_changes_nothing_is_answered_without_asking(sunwell, fake, workspace):
    before = (workspace / "a.txt").stat().st_mtime_ns
    same = json.dumps({"path": "a.txt", "content": (workspace / "a.txt").read_text()})
    fake.script(Reply(tool_calls=[Call("write_file", same)]), Reply(text="It already says that."))
    run = sunwell("run", "make a.txt say hello", "--model", "openai:gpt-4o", "--approve", "deny", "--json")
    assert run.code == 0, run.stderr
    assert not [e for e in run.events if e["type"] == "approval"]  # no card for "+0 -0"
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and result["output"].startswith("unchanged: a.txt")
    assert (workspace / "a.txt").stat().st_mtime_ns == before
