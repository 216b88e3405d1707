"""`::context` shows what the next request sends: its figures for the system prompt and the tool definitions are
those of the request the scripted server then receives, for a native model and for a small emulated one (whose
prompt carries the small-model hints and the workspace's files, not the root).

Both read one turn plan (agent/plan.py); before it, `::context` built its own prompt without the small-model hints.
"""

from __future__ import annotations

import json
import re

import pytest

from fake_provider import Reply
from sunwell.agent.chat import UserInput
from sunwell.agent.commands import run_command
from sunwell.agent.context import Budget, SessionContext
from sunwell.agent.engine import Engine
from sunwell.agent.session import Session
from sunwell.commands_spec import parse_command
from sunwell.config import Settings
from sunwell.models.tokens import text_tokens, tools_tokens
from sunwell.wire.messages import ToolSpec

NATIVE = "openai:gpt-4o"
SMALL = "openai-compatible:qwen2.5-coder-0.5b"  # emulated, hermes, constrained: its tools are in the prompt


@pytest.fixture
def make_engine(tmp_path, fake, monkeypatch):
    for var in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "SUNWELL_MODEL", "SUNWELL_BASE_URL", "SUNWELL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def make(workspace, model):
        return Engine(Settings(model=model, base_url=f"{fake.url}/v1", data_dir=tmp_path / "data",
                               approval="auto"), workspace)

    return make


def figures(context: str) -> tuple[int, int, int]:
    """(instructions tokens, tool definitions, their tokens) as `::context` states them."""
    instructions = re.search(r"- instructions: ~([\d,]+) tokens", context)
    tools = re.search(r"- tool definitions: (\d+) \(~([\d,]+) tokens\)", context)
    assert instructions and tools, context
    return (int(instructions[1].replace(",", "")), int(tools[1]), int(tools[2].replace(",", "")))


def as_counted(raw: int) -> int:
    """A raw estimate as `::context` counts it before any response calibrated the session's estimate."""
    return Budget(128_000, 4096, 0.8, SessionContext()).tokens(raw)


async def context_then_turn(engine: Engine, fake, line: str) -> tuple[str, dict]:
    session = Session(engine)
    shown = (await run_command(engine, session.state, parse_command("::context"))).output
    fake.script(Reply(text="Hello."))
    done = (await session.submit(UserInput(line), lambda event: None)).done
    assert done.status == "completed", done.error
    [request] = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    return shown, request.body


@pytest.mark.parametrize("with_agents_md", [False, True])
async def test_context_shows_the_native_request_the_next_turn_sends(fake, workspace, make_engine, with_agents_md):
    if with_agents_md:
        (workspace / "AGENTS.md").write_text("Answer in French.\n")
    shown, body = await context_then_turn(make_engine(workspace, NATIVE), fake, "hello")
    system = body["messages"][0]["content"]
    sent = [ToolSpec(name=t["function"]["name"], description=t["function"]["description"],
                     parameters=t["function"]["parameters"]) for t in body["tools"]]
    assert figures(shown) == (as_counted(text_tokens(system)), len(sent), as_counted(tools_tokens(sent)))
    assert ("Answer in French." in system) == with_agents_md


async def test_context_shows_the_small_models_prompt_the_next_turn_sends(fake, workspace, make_engine):
    (workspace / "AGENTS.md").write_text("Answer in French.\n")
    shown, body = await context_then_turn(make_engine(workspace, SMALL), fake, "hello")
    assert "tools" not in body  # emulated: the tools are described in the system prompt, after Sunwell's own
    system = body["messages"][0]["content"]
    own, tool_section = system.split("\n\n# Tools\n", 1)
    assert "Files in the workspace: " in own and "src/app.py" in own and str(workspace) not in own
    signatures = [json.loads(line)["function"]["name"] for line in tool_section.splitlines()
                  if line.startswith('{"type": "function"')]
    offered = [name for name in signatures if name != "final_answer"]  # the constrained reply's answer
    instructions, count, _ = figures(shown)
    assert instructions == as_counted(text_tokens(own))
    assert count == len(offered)
    listed = re.search(r"- tools: (.*)", shown)
    assert listed and listed[1] == ", ".join(f"`{name}`" for name in offered)
