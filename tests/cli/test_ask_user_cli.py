"""`ask_user` at the terminal: `sunwell run` on a pseudo-terminal asks at the prompt (the question escaped, an option
picked by its number, or the user's own words); headless or with `--approve deny` the call fails `unsupported` at
once, with no one waiting."""

from __future__ import annotations

import json
import time

from conftest import check_stream_rules
from fake_provider import Call, Reply
from test_approvals import Terminal

OPENAI = "openai:gpt-4o"


def ask(question: str, options: list[str] | None = None) -> Reply:
    arguments = {"question": question, **({"options": options} if options else {})}
    return Reply(tool_calls=[Call("ask_user", json.dumps(arguments))])


def results(out: str) -> list[dict]:
    events = [json.loads(line) for line in out.splitlines()]
    check_stream_rules(events)
    return [e for e in events if e["type"] == "toolResult"]


def test_the_terminal_asks_and_an_option_is_picked_by_its_number(env, workspace, fake):
    fake.script(ask("Which \x1b[2Jdatabase?", ["PostgreSQL", "SQLite"]), Reply(text="SQLite it is."))
    term = Terminal(env, workspace, "set up storage", "--model", OPENAI, "--json")
    screen = term.expect("empty to skip: ")
    assert "The model asks: Which \\x1b[2Jdatabase?" in screen and "\x1b[2J" not in screen
    assert "  1. PostgreSQL" in screen and "  2. SQLite" in screen
    term.answer("2")
    code, out = term.finish()
    assert code == 0
    [result] = results(out)
    assert result["ok"] and result["output"] == 'The user answered: "SQLite"'


def test_own_words_and_an_empty_line(env, workspace, fake):
    fake.script(ask("Name of the service?"), ask("Anything else?"), Reply(text="ok"))
    term = Terminal(env, workspace, "go", "--model", OPENAI, "--approve", "auto", "--json")
    term.expect("empty to skip: ")
    term.answer("billing-api")
    term.expect("Anything else?")
    term.answer("")
    code, out = term.finish()
    assert code == 0
    first, second = results(out)
    assert first["output"] == 'The user answered: "billing-api"'
    assert second["ok"] and second["output"].startswith("The user did not answer")


def test_headless_or_deny_fails_unsupported_at_once(sunwell, fake):
    for flags in ([], ["--approve", "deny"]):
        fake.script(ask("Which one?", ["a", "b"]), Reply(text="picked a"))
        started = time.monotonic()
        run = sunwell("run", "choose", "--model", OPENAI, "--json", *flags)
        assert run.code == 0, run.stderr
        [result] = [e for e in run.events if e["type"] == "toolResult"]
        assert result["error"]["code"] == "unsupported"
        assert time.monotonic() - started < 20


def test_an_unanswered_question_times_out_as_no_answer(env, workspace, fake):
    folder = workspace.parent / "config" / "sunwell"  # env's XDG_CONFIG_HOME
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("approval_timeout_sec: 2\n")
    fake.script(ask("Which one?", ["a", "b"]), Reply(text="going on without"))
    term = Terminal(env, workspace, "choose", "--model", OPENAI, "--json")
    term.expect("empty to skip: ")
    started = time.monotonic()
    code, out = term.finish()  # no one answers
    assert code == 0 and time.monotonic() - started < 20
    [result] = results(out)
    assert result["ok"] and result["output"].startswith("The user did not answer"), result
    said = fake.requests[-1].body["messages"][-1]
    assert said["role"] == "tool" and said["content"].startswith("The user did not answer")
