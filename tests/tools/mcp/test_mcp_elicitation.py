"""An MCP server asking the user (elicitation), changing its tools (list_changed) and asking for the model
(sampling), against a real server written with the SDK (tests/mcp_servers/offerings.py), through the hub and the
executor as in a turn, and the terminal's prompts."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from person import Person
from sunwell.cli.client import TerminalClient
from sunwell.config import McpServerConfig
from sunwell.tools.base import ToolContext, Trust
from sunwell.tools.executor import execute
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.messages import ToolCall

OFFERINGS = Path(__file__).parents[2] / "mcp_servers" / "offerings.py"


@pytest.fixture
async def hub(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hub = McpHub(Surroundings(workspace, tmp_path / "data"))
    hub.configure({"asker": McpServerConfig.model_validate(
        {"command": sys.executable, "args": [str(OFFERINGS)], "timeout": 10, "sandbox": "off"})}, {})
    await hub.start(Trust.full, None, lambda *said: None, session="s_1")
    hub.ctx = ToolContext(jail=Jail(workspace))
    yield hub
    await hub.close()


async def call(hub: McpHub, name: str, **arguments):
    tool = next(t for t in hub.tools() if t.name == f"asker__{name}")
    return await execute(tool, ToolCall(id="c1", name=tool.name, arguments=arguments), arguments, hub.ctx)


def answering(*answers: dict, asked: list | None = None):
    replies = list(answers)

    async def elicit(request):
        if asked is not None:
            asked.append((request.session, request.server, request.message, request.schema_))
        return replies.pop(0)

    return Person(elicit=elicit)


async def test_an_accepted_form_reaches_the_server(hub):
    asked: list = []
    hub.client = answering({"action": "accept", "content": {"name": "Ada", "age": 36}}, asked=asked)
    result = await call(hub, "greet")
    assert result.ok and result.output.strip() == "Hello Ada (36)"
    session, server, message, schema = asked[0]
    assert (session, server, message) == ("s_1", "asker", "What is your name?")
    assert schema["properties"]["name"]["type"] == "string"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_are_honoured(hub, action):
    hub.client = answering({"action": action})
    assert (await call(hub, "greet")).output.strip() == f"no name: {action}"


async def test_with_no_one_to_ask_it_is_declined(hub):
    assert (await call(hub, "greet")).output.strip() == "no name: decline"


async def test_an_answer_the_schema_refuses_is_not_sent(hub):
    hub.client = answering({"action": "accept", "content": {"name": 7}})
    assert (await call(hub, "greet")).output.strip() == "no name: decline"


async def test_a_request_for_a_secret_names_its_server_and_is_never_prefilled(hub):
    out = io.StringIO()
    hub.client = TerminalClient(stdin=io.StringIO("n\n"), out=out, answering={"elicit"})
    assert (await call(hub, "steal")).output.strip() == "refused: decline"
    shown = out.getvalue()
    assert "The MCP server asker asks (its own words, not Sunwell's)" in shown
    assert "Sunwell needs your GitHub token" in shown and "prefilled-by-the-server" not in shown


async def test_the_terminal_fills_a_form_field_by_field(hub):
    out = io.StringIO()
    hub.client = TerminalClient(stdin=io.StringIO("y\nGrace\nold\n85\n"), out=out, answering={"elicit"})
    assert (await call(hub, "greet")).output.strip() == "Hello Grace (85)"
    assert "not a integer; try again" in out.getvalue()


async def test_sampling_is_refused_with_a_clear_error(hub):
    assert "sampling refused: Sampling not supported" in (await call(hub, "sample")).output


async def test_a_tool_that_changed_after_it_was_allowed_is_asked_again(hub):
    import asyncio

    def rule() -> tuple:
        tool = next(t for t in hub.tools() if t.name == "asker__shapeshift")
        preview = tool.preview({"target": "/"}, hub.ctx)
        return ApprovalRequest(session="s_1", turn="t", call_id="c", name=tool.name, arguments={"target": "/"},
                               risk="mcp", preview=preview).session_rule()

    before = rule()
    assert (await call(hub, "shapeshift")).output.strip() == "changed"
    for _ in range(100):  # the listing comes back on the server's notification
        if "deletes" in next(t for t in hub.tools() if t.name == "asker__shapeshift").description:
            break
        await asyncio.sleep(0.05)
    assert "deletes everything" in next(t for t in hub.tools() if t.name == "asker__shapeshift").description
    assert rule() != before
