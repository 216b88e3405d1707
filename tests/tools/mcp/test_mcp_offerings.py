"""MCP prompts as `::SERVER:PROMPT` commands and resources as `@SERVER:URI` mentions, against a real server written
with the SDK (tests/mcp_servers/offerings.py), through the session and the CLI as a user drives them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fake_provider import Reply
from mcp_support import write_user_config
from sunwell.agent.chat import UserInput
from sunwell.agent.commands import commands_catalog
from sunwell.agent.engine import Engine
from sunwell.agent.resource_mentions import resource_mention, resources_in
from sunwell.agent.session import Session
from sunwell.commands_spec import parse_command
from sunwell.config import McpServerConfig, Settings
from sunwell.tools.mcp.offerings import prompt_arguments

OFFERINGS = Path(__file__).parents[2] / "mcp_servers" / "offerings.py"


def offerings(**config) -> dict:
    return {"command": sys.executable, "args": [str(OFFERINGS)], "timeout": 10, "sandbox": "off", **config}


@pytest.fixture
async def notes(tmp_path: Path, workspace: Path, fake, monkeypatch: pytest.MonkeyPatch):
    for var in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "SUNWELL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval="auto",
                        mcp_servers={"notes": McpServerConfig.model_validate(offerings())})
    engine = Engine(settings, workspace)
    yield engine
    await engine.aclose()


def user_text(request) -> str:
    return "\n".join(str(m["content"]) for m in request.body["messages"] if m["role"] == "user")


def test_server_prompt_lines_are_commands_and_keep_their_case():
    parsed = parse_command('::notes:Review path=a.py focus="style issues"')
    assert (parsed.name, parsed.args) == ("notes:Review", 'path=a.py focus="style issues"')
    assert parse_command("std::vector<int> v;") is None and parse_command("::save/tmp") is None
    assert parse_command("::HELP").name == "help"
    assert prompt_arguments('path=a.py focus="style issues"') == {"path": "a.py", "focus": "style issues"}
    with pytest.raises(ValueError):
        prompt_arguments("just words")


async def test_a_prompt_command_starts_the_turn_with_its_messages(notes, fake):
    fake.script(Reply(text="reviewed"))
    events: list = []
    result = await Session(notes).submit(UserInput('::notes:review path=src/app.py focus="style issues"'),
                                         events.append)
    assert result.done.status == "completed"
    assert "Review src/app.py and report style issues; quote the lines you mean." in user_text(fake.requests[-1])


async def test_a_prompt_of_several_messages_keeps_who_said_what(notes, fake):
    fake.script(Reply(text="tea"))
    await Session(notes).submit(UserInput("::notes:dialogue topic=tea"), lambda e: None)
    sent = user_text(fake.requests[-1])
    assert "[user]\nTell me about tea." in sent and "[assistant]\nWhich part of it?" in sent


async def test_help_lists_the_prompts_and_a_missing_argument_is_explained(notes, fake):
    events: list = []
    session = Session(notes)
    await session.submit(UserInput("::notes:review"), events.append)
    answer = next(e for e in events if e.type == "commandOutput").output
    assert "needs path" in answer and "::notes:review path=… [focus=…]" in answer
    assert not fake.requests  # no turn
    events.clear()
    await session.submit(UserInput("::help"), events.append)
    listed = next(e for e in events if e.type == "commandOutput").output
    assert "::notes:review path=… [focus=…]" in listed and "MCP prompt of notes" in listed
    assert "notes:dialogue" in [doc.name for doc in commands_catalog(engine=notes)]
    events.clear()
    await session.submit(UserInput("::notes:nothing"), events.append)
    assert "has no prompt nothing" in next(e for e in events if e.type == "commandOutput").output


async def test_a_resource_mention_is_attached_within_the_budget(notes, fake):
    fake.script(Reply(text="noted"))
    mention = resource_mention("notes", "notes://team/readme")
    await Session(notes).submit(UserInput("what day?", [mention]), lambda e: None)
    sent = user_text(fake.requests[-1])
    assert "Deploys happen on Tuesdays." in sent and 'name="notes:notes://team/readme"' in sent


async def test_a_binary_resource_is_named_not_pasted(notes, fake):
    fake.script(Reply(text="ok"))
    await Session(notes).submit(UserInput("logo?", [resource_mention("notes", "notes://team/logo.png")]),
                                lambda e: None)
    sent = user_text(fake.requests[-1])
    assert "binary resource notes://team/logo.png: image/png, 16 bytes, not shown" in sent


def test_resource_words_name_only_configured_servers():
    found = resources_in("see @notes:notes://team/readme, and mail me@example.com or @other:x", ["notes"])
    assert [(m.server, m.uri) for m in found] == [("notes", "notes://team/readme")]


def test_sunwell_run_attaches_a_resource_named_in_the_prompt(sunwell, fake, tmp_path):
    write_user_config(tmp_path / "config", mcp_servers={"notes": offerings()})
    fake.script(Reply(text="Tuesday"))
    run = sunwell("run", "when are deploys? @notes:notes://team/readme", "--model", "openai:gpt-4o", "--json")
    assert run.code == 0, run.stderr
    assert "Deploys happen on Tuesdays." in user_text(fake.requests[-1])
