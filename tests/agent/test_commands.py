"""The `::command` parser and registry, against a real engine (workspace, session store, fake provider server)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from sunwell.agent.chat import ChatState, UserInput
from sunwell.agent.commands import _HANDLERS, commands_catalog, run_command
from sunwell.agent.lens_commands import LensCommandError, parse_skill_arguments
from sunwell.agent.session import Session
from sunwell.commands_spec import COMMAND_DOCS, Command, parse_command
from sunwell.lens import vocabulary

OPENAI = "openai:gpt-4o"
EXAMPLE_LENS = Path(__file__).resolve().parents[2] / "examples" / "code-review.lens"


# ---- the parser ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "expected"), [
    ("::help", Command("help", "")),
    ("::HELP", Command("help", "")),
    ("  ::Lens review  ", Command("lens", "review")),
    ("\t::save   notes/today.md\n", Command("save", "notes/today.md")),
    ("::help-me", Command("help-me", "")),
    ("::run_tests x", Command("run_tests", "x")),
    ('::run review_file {"path": "a.py"}', Command("run", 'review_file {"path": "a.py"}')),
    ("::focus\nsrc/**", Command("focus", "src/**")),
    ("::x", Command("x", "")),
    ("::help:x", Command("help:x", "")),  # `::SERVER:PROMPT`: an MCP prompt (docs/cli.md "Chat commands")
    ('::Docs:Review path="a b.py"', Command("Docs:Review", 'path="a b.py"')),  # its name keeps its case
])
def test_a_command_is_a_name_first_on_the_line(line, expected):
    assert parse_command(line) == expected


@pytest.mark.parametrize("line", [
    "a::b", "std::vector", "std::vector<int> is a template", "Foo::Bar::baz", "::", "::  help", "::9x", "::-x",
    "::_x", "x ::help", "see ::help", ":::note", "::save/tmp", "::help:", "::close(fd)", "::héllo", "", "   ",
    "hello", ": :help", "::\thelp",
])
def test_no_false_positives(line):
    assert parse_command(line) is None


# ---- the registry ----------------------------------------------------------------------------------------------


def test_every_documented_command_has_a_handler_and_the_catalogs_agree():
    assert set(_HANDLERS) == {doc.name for doc in COMMAND_DOCS}
    names = [doc.name for doc in commands_catalog()]
    assert names == ["help", "skills", "lens", "focus", "context", "compact", "save", "clear", "tools", "model",
                     "trust", "undo", "run", "mcp", "plan"]
    assert [doc.name for doc in commands_catalog(terminal=True)] == [*names, "exit"]
    assert vocabulary.CHAT_COMMANDS == tuple(commands_catalog())  # what lens completion offers
    assert all(doc.usage.startswith(f"::{doc.name}") and doc.description for doc in COMMAND_DOCS)


@pytest.fixture
def session(engine):
    return Session(engine)


@pytest.fixture
def state(session):
    """What the commands change: the session's own, so that its turns see it."""
    return session.state


async def say(engine, state, line) -> str:
    return (await run_command(engine, state, parse_command(line))).output


async def test_unknown_commands_and_terminal_only_ones(engine, state):
    assert await say(engine, state, "::nope") == "Unknown command: ::nope. Try ::help"
    assert await say(engine, state, "::HELP-ME now") == "Unknown command: ::help-me. Try ::help"
    assert "terminal" in await say(engine, state, "::exit")  # the sidecar's chat has no ::exit
    assert not (await run_command(engine, state, parse_command("::exit"))).exit
    assert (await run_command(engine, ChatState(terminal=True), parse_command("::exit"))).exit
    assert parse_command("std::vector") is None  # not a command: a line for the model


async def test_help_lists_the_commands_and_explains_one(engine, state):
    listing = await say(engine, state, "::help")
    assert "`::save <path>`" in listing and "`::exit`" not in listing
    assert "`::exit`" in await say(engine, ChatState(terminal=True), "::help")
    assert (await say(engine, state, "::help ::trust")).startswith("`::trust [level]`")
    assert await say(engine, state, "::help nope") == "Unknown command: ::nope. Try ::help"


async def test_a_command_is_answered_as_command_output_and_done(engine, session, fake):
    events = []
    result = await session.submit(UserInput("::model"), events.append)
    assert [(e.type, e.seq) for e in events] == [("commandOutput", 0), ("done", 1)]
    assert events[0].command == "model" and "openai:gpt-4o" in events[0].output
    assert events[1].status == "completed" and events[1].tool_calls == 0 and not result.exit
    assert len({e.turn for e in events}) == 1 and fake.requests == []  # no model call
    done = (await Session(engine, "s1").command(parse_command("::help"), events.append)).done
    assert done.session == "s1" and events[-1].wire()["type"] == "done" and events[-2].command == "help"


async def test_turns_context_save_and_clear(engine, session, state, fake, workspace):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]), Reply(text="It says hello."))
    events = []
    result = await session.submit(UserInput("what is in a.txt?"), events.append)
    assert result.done.status == "completed" and state.session == result.done.session
    context = await say(engine, state, "::context")
    assert f"session: `{state.session}`" in context and "messages: 4" in context and "gpt-4o" in context
    assert "tokens: about" in context

    assert await say(engine, state, "::save notes/chat.md") == "Saved 4 messages to `notes/chat.md`."
    saved = (workspace / "notes" / "chat.md").read_text()
    assert "## You\n\nwhat is in a.txt?" in saved and "It says hello." in saved
    assert '- ↪ `read_file(path="a.txt")` ✔ 2 lines' in saved

    (workspace.parent / "outside.md").write_text("keep")
    (workspace / "out.md").symlink_to(workspace.parent / "outside.md")
    (workspace / "in.md").symlink_to(workspace / "a.txt")
    for path, why in [("../x.md", "escapes the workspace"), (".env", "blocked"), ("out.md", "escapes"),
                      ("in.md", "symbolic link"), ("src", "directory"), ("/tmp/x.md", "")]:
        answer = await say(engine, state, f"::save {path}")
        assert answer.startswith(f"Cannot save to `{path}`:") and why in answer, answer
    assert not (workspace.parent / "x.md").exists() and (workspace.parent / "outside.md").read_text() == "keep"
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert (workspace / ".env").read_text().startswith("SECRET_TOKEN")
    assert await say(engine, state, "::save") == "Usage: `::save <path>`"

    old = state.session
    assert old in await say(engine, state, "::clear")
    assert state.session is None
    assert await say(engine, state, "::save later.md") == "Nothing to save yet: the conversation is empty."
    fake.script(Reply(text="fresh"))
    await session.submit(UserInput("again"), events.append)
    assert state.session not in (None, old)
    assert [m["role"] for m in fake.requests[-1].body["messages"]] == ["system", "user"]


async def test_focus_reaches_the_model_until_cleared(engine, session, state, fake):
    assert "src/**" in await say(engine, state, "::focus src/**")
    fake.script(Reply(text="ok"), Reply(text="ok"))
    await session.submit(UserInput("what is here?"), lambda event: None)
    assert "focus on: src/**" in json.dumps(fake.requests[-1].body)
    assert "`src/**`" in await say(engine, state, "::context")
    assert await say(engine, state, "::focus") == "Focus cleared."
    await session.submit(UserInput("and now?"), lambda event: None)
    assert "focus on: src/**" not in json.dumps(fake.requests[-1].body["messages"][-1])


async def test_model_shows_and_switches_only_to_valid_models(engine, session, state, fake):
    assert await say(engine, state, "::model nowhere:thing") == (
        "unknown provider 'nowhere': use one of openai, anthropic, ollama, openai-compatible")
    assert state.model is None
    assert "gpt-4o-mini" in await say(engine, state, "::model gpt-4o-mini")
    assert state.model == "openai:gpt-4o-mini"
    fake.script(Reply(text="small"))
    await session.submit(UserInput("hi"), lambda event: None)
    assert fake.requests[-1].body["model"] == "gpt-4o-mini"


async def test_trust_and_tools(engine, state):
    tools = await say(engine, state, "::tools")
    assert "`write_file` — core · trust workspace · auto" in tools and "`run_command` (shell)" in tools
    assert (await say(engine, state, "::trust")).startswith("Trust: **workspace**")
    assert "Unknown trust level `root`" in await say(engine, state, "::trust root")
    await say(engine, state, "::trust shell")
    assert state.trust == "shell" and "`run_command` — core · trust shell" in await say(engine, state, "::tools")
    engine.settings.dry_run = True
    assert "Dry run" in await say(engine, state, "::tools")


async def test_undo_puts_back_what_the_last_turn_wrote(engine, session, state, fake, workspace):
    assert "Nothing to undo" in await say(engine, state, "::undo")
    write = Call("write_file", json.dumps({"path": "a.txt", "content": "changed\n"}))
    fake.script(Reply(tool_calls=[write, Call("write_file", '{"path": "new.txt", "content": "n"}')]),
                Reply(text="done"))
    await session.submit(UserInput("change things"), lambda event: None)
    assert (workspace / "a.txt").read_text() == "changed\n" and (workspace / "new.txt").exists()
    undone = await say(engine, state, "::undo")
    assert "- restored `a.txt`" in undone and "- deleted `new.txt` (the turn created it)" in undone
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n" and not (workspace / "new.txt").exists()
    assert "Nothing to undo" in await say(engine, state, "::undo")
    assert await say(engine, state, "::undo everything") == "Usage: `::undo [--force]`"


async def test_lenses_skills_and_run(engine, session, state, fake, workspace):
    shutil.copy(EXAMPLE_LENS, workspace / "review.lens")
    assert "No lens is active" in await say(engine, state, "::skills")
    overview = await say(engine, state, "::lens")
    assert overview.startswith("No lens is active.") and "**code-review**" in overview
    assert "Lens **code-review** is active" in await say(engine, state, "::lens code-review")
    assert state.lens == str(workspace / "review.lens")
    skills = await say(engine, state, "::skills")
    assert "`review_file`" in skills and "runs `python -m pytest -q {target}`" in skills
    assert "(the lens caps it at **shell**)" not in await say(engine, state, "::trust")

    assert "needs trust shell" in await say(engine, state, "::run run_tests target=tests/test_x.py")
    assert "Skills of code-review: `review_file`, `run_tests`" in await say(engine, state, "::run nope")
    assert "'path' is a required property" in await say(engine, state, "::run review_file focus=bugs")
    assert "is not one of" in await say(engine, state, "::run review_file path=a.py focus=looks")

    result = await run_command(engine, state, parse_command('::run review_file {"path": "src/app.py"}'))
    assert result.output == "" and "`review_file`" in result.prompt and '{"path": "src/app.py"}' in result.prompt
    await say(engine, state, "::trust full")
    assert "(the lens caps it at **shell**)" in await say(engine, state, "::trust")
    fake.script(Reply(text="I would run the tests now."))
    done = (await session.submit(UserInput("::run run_tests target=tests/test_x.py"), lambda e: None)).done
    assert done.status == "completed"
    body = fake.requests[-1].body
    assert '{"target": "tests/test_x.py"}' in body["messages"][-1]["content"]
    assert "run_tests" in {tool["function"]["name"] for tool in body["tools"]}
    assert "careful code reviewer" in body["messages"][0]["content"]  # the lens' instructions

    assert await say(engine, state, "::lens off") == "No lens is active now."
    assert state.lens is None


async def test_a_skill_with_only_instructions_becomes_the_request(engine, state, workspace):
    (workspace / "notes.lens").write_text(
        "name: notes\ndescription: Note taking.\nskills:\n"
        "  - name: summarize\n    description: Summarize the chat.\n    instructions: Write three bullet points.\n")
    await say(engine, state, "::lens notes.lens")
    result = await run_command(engine, state, parse_command("::run summarize topic=today"))
    assert "Write three bullet points." in result.prompt and '"topic": "today"' in result.prompt


async def test_a_lens_with_errors_is_refused_with_its_diagnostics(engine, state, workspace):
    (workspace / "bad.lens").write_text("name: bad\ndescription: 3\nskills:\n  - name: 9x\n    description: d\n"
                                        "tool_policy:\n  trust_level: root\n")
    answer = await say(engine, state, "::lens bad.lens")
    assert "not activated" in answer and "bad.lens:4:" in answer and "bad.lens:7:" in answer
    assert state.lens is None
    assert "`bad.lens` has errors" in await say(engine, state, "::lens")
    assert "no lens 'ghost'" in await say(engine, state, "::lens ghost")


def test_skill_arguments_as_json_or_key_value_pairs():
    schema = {"type": "object", "properties": {"count": {"type": "integer"}, "name": {"type": "string"},
                                               "tags": {"type": "array"}}, "required": ["count"]}
    assert parse_skill_arguments('{"count": 2}', schema) == {"count": 2}
    assert parse_skill_arguments("count=3 name=007 tags='[\"a\", \"b\"]'", schema) == {
        "count": 3, "name": "007", "tags": ["a", "b"]}
    assert parse_skill_arguments('count=1 name="two words"', schema)["name"] == "two words"
    assert parse_skill_arguments("", None) == {}
    for text, message in [("count", "key=value"), ("{nope", "not valid JSON"), ("[1]", "key=value"),
                          ('{"count": "x"}', "'x' is not of type 'integer'"), ("name=x", "required"),
                          ("count='1", "Cannot read")]:
        with pytest.raises(LensCommandError, match=message):
            parse_skill_arguments(text, schema)
