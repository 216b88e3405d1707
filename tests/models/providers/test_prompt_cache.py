"""Prompt caching (issue 42): Anthropic's breakpoints, OpenAI's stable prefix and session key, and usage that tells
cached from new tokens. Through `sunwell run --json` (a real subprocess) and the real `anthropic` and `openai` SDKs
against the fake provider, which bills each request as the service's prompt cache would (fake_cache.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_cache import breakpoints
from fake_provider import Call, FakeProvider, Reply
from sunwell.agent.usage import DEFAULT_PRICES, cost, price_for, usage_line
from sunwell.config import Price, load_settings
from sunwell.models.base import ModelRequest
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.wire import protocol
from sunwell.wire.messages import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from sunwell.wire.usage import SessionUsage, TurnUsage

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` fixture

SONNET = "anthropic:claude-sonnet-4-6"
SMALL = "openai-compatible:qwen2.5-coder-0.5b"  # emulated tool calls, held to a reply schema
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def fake():
    with FakeProvider(cache=True) as server:
        yield server


@pytest.fixture
def files(workspace: Path) -> list[str]:
    names = []
    for n in range(3):
        (workspace / f"f{n}.py").write_text("".join(f"def f{n}_{i}(x):\n    return x * {i}\n" for i in range(60)))
        names.append(f"f{n}.py")
    return names


def script_reads(fake: FakeProvider, names: list[str], answer: str = "Read them all.") -> None:
    fake.script(*(Reply(tool_calls=[Call("read_file", json.dumps({"path": name}))]) for name in names),
                Reply(text=answer))


def marks(body: dict) -> list[str]:
    """Where a request's breakpoints are: `tool N`, `system N`, `message N block M`."""
    out = [f"tool {i}" for i, tool in enumerate(body.get("tools") or []) if "cache_control" in tool]
    system = body.get("system")
    out += [f"system {i}" for i, block in enumerate(system if isinstance(system, list) else [])
            if "cache_control" in block]
    for m, message in enumerate(body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        out += [f"message {m} block {b}" for b, block in enumerate(content) if "cache_control" in block]
    return out


def stripped(value):
    """`value` without its breakpoints."""
    if isinstance(value, dict):
        return {k: stripped(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [stripped(v) for v in value]
    return value


# ---- Anthropic ---------------------------------------------------------------------------------------------------


def test_anthropic_requests_carry_four_breakpoints_and_each_round_reads_the_last_one_whole(sunwell, fake, files):
    script_reads(fake, files)
    run = sunwell("run", "--json", "--model", SONNET, "Read f0.py, f1.py and f2.py")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    bodies = [r.body for r in fake.requests]
    assert len(bodies) == 4
    last_tool = f"tool {len(bodies[0]['tools']) - 1}"
    assert marks(bodies[0]) == [last_tool, "system 0", "message 0 block 0"]
    for body in bodies[1:]:
        users = [m for m, message in enumerate(body["messages"]) if message["role"] == "user"]
        # the last tool, the system, where the last request ended (the previous user turn) and the end of this one
        assert marks(body) == [last_tool, "system 0", f"message {users[-2]} block 0",
                               f"message {users[-1]} block {len(body['messages'][-1]['content']) - 1}"]
        assert len(breakpoints(body)) <= 4
    billed = [r.billed for r in fake.requests]
    assert billed[0].cache_read == 0 and billed[0].cache_write == billed[0].total  # all of it written
    for before, after in itertools.pairwise(billed):
        assert after.cache_read == before.total  # the whole last request read back
        assert after.cache_write == after.total - before.total and after.uncached == 0
    usage = run.events[-1]["usage"]
    assert usage == {"inputTokens": sum(b.total for b in billed), "outputTokens": sum(5 for _ in billed),
                     "cacheReadTokens": sum(b.cache_read for b in billed),
                     "cacheWriteTokens": sum(b.cache_write for b in billed)}


def test_the_next_turn_reads_the_last_turn_from_the_cache(sunwell, fake, files):
    script_reads(fake, files[:1])
    first = sunwell("run", "--json", "--model", SONNET, "Read f0.py")
    fake.script(Reply(text="You are welcome."))
    second = sunwell("run", "--json", "--model", SONNET, "--session", first.events[0]["session"], "Thanks")
    assert second.code == 0, second.stderr
    before, after = fake.requests[-2].billed, fake.requests[-1].billed
    assert after.cache_read == before.total and after.uncached == 0
    assert second.events[-1]["usage"]["cacheReadTokens"] == before.total


def test_breakpoints_change_nothing_else_in_the_request(fake):
    """What the SDK sends, its breakpoints taken out, is the conversation exactly as it was mapped before them."""
    call = ToolCall(id="toolu_1", name="read_file", arguments={"path": "a.txt"})
    request = ModelRequest(
        model="claude-sonnet-4-6", system="Be brief.", max_tokens=100, cache_key="session-1",
        tools=[ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object"}),
               ToolSpec(name="grep", description="Search.", parameters={"type": "object"})],
        messages=[UserMessage(text="What does a.txt say?"), AssistantMessage(parts=[TextPart(text="Reading."),
                                                                                     ToolCallPart(call=call)]),
                  ToolResultMessage(call_id="toolu_1", name="read_file", ok=True, output="hello"),
                  AssistantMessage(parts=[TextPart(text="It says hello.")]), UserMessage(text="Thanks")])
    fake.script(Reply(text="ok"), Reply(text="ok"))

    async def send(request: ModelRequest) -> None:
        provider = AnthropicMessages(base_url=fake.url, api_key="sk-ant-test")
        async for _ in provider.stream(request):
            pass

    asyncio.run(send(request))
    # a request of no session (a summary's, a skill's) is not repeated: writing it would cost 1.25x for nothing
    asyncio.run(send(dataclasses.replace(request, cache_key="")))
    assert marks(fake.requests[1].body) == [] and fake.requests[1].body["system"] == "Be brief."
    body = fake.requests[0].body
    assert marks(body) == ["tool 1", "system 0", "message 2 block 0", "message 4 block 0"]
    assert stripped(body) == {
        "model": "claude-sonnet-4-6", "max_tokens": 100, "stream": True,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What does a.txt say?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                               "input": {"path": "a.txt"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                          "content": "hello"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "It says hello."}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}],
        "tools": [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
                  {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "auto"}}
    assert all(block == EPHEMERAL for block in _cache_controls(body))


def _cache_controls(value) -> list:
    if isinstance(value, dict):
        return ([value["cache_control"]] if "cache_control" in value else []) + [
            c for v in value.values() for c in _cache_controls(v)]
    if isinstance(value, list):
        return [c for v in value for c in _cache_controls(v)]
    return []


# ---- OpenAI ------------------------------------------------------------------------------------------------------


def test_openai_rounds_share_a_byte_identical_prefix_and_one_cache_key(sunwell, fake, files):
    script_reads(fake, files)
    run = sunwell("run", "--json", "--model", "openai:gpt-4o", "Read f0.py, f1.py and f2.py")
    assert run.code == 0, run.stderr
    session = run.events[0]["session"]
    script_reads(fake, [])
    again = sunwell("run", "--json", "--model", "openai:gpt-4o", "--session", session, "Once more")
    script_reads(fake, [])
    other = sunwell("run", "--json", "--model", "openai:gpt-4o", "Another session")
    assert again.code == other.code == 0
    bodies = [r.body for r in fake.requests]
    for before, after in itertools.pairwise(bodies[:5]):  # every request of the session, across its two turns
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
        shared = after["messages"][:len(before["messages"])]
        assert json.dumps(shared) == json.dumps(before["messages"])  # byte for byte, in the order sent
    keys = [body.get("prompt_cache_key") for body in bodies]
    assert keys[0] and len(set(keys[:5])) == 1 and keys[5] != keys[0]
    assert session not in keys[0]  # a key derived from the session, not its id
    billed = [r.billed for r in fake.requests]
    for before, after in itertools.pairwise(billed[:4]):
        assert after.cache_read > before.total - 128  # all of the last request but what is under a 128-token step
    usage = run.events[-1]["usage"]
    assert usage["cacheReadTokens"] == sum(b.cache_read for b in billed[:4]) > 0
    assert usage["inputTokens"] == sum(b.total for b in billed[:4]) and usage["cacheWriteTokens"] == 0


def test_a_compatible_server_is_sent_no_cache_key(sunwell, fake):
    fake.script(Reply(text="hi"))
    run = sunwell("run", "--json", "--model", "openai-compatible:qwen", "--base-url", f"{fake.url}/v1", "hello")
    assert run.code == 0, run.stderr
    assert "prompt_cache_key" not in fake.requests[0].body


# ---- usage and cost ----------------------------------------------------------------------------------------------


def test_cache_prices_default_per_model_and_come_from_the_config(tmp_path):
    assert price_for("anthropic:claude-sonnet-4-6") == Price(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert price_for("openai:gpt-4o").cache_read == 1.25 and price_for("openai:gpt-4.1").cache_read == 0.5
    assert price_for("openai:gpt-5-mini").cache_read == 0.025
    assert all(p.cache_read is not None and p.cache_read < p.input for p in DEFAULT_PRICES.values())
    # read and written tokens are part of the input; each at its own price
    assert cost(Price(input=3, output=15, cache_read=0.3, cache_write=3.75), 10_000, 100,
                cache_read=6_000, cache_write=2_000) == pytest.approx((2000 * 3 + 6000 * 0.3 + 2000 * 3.75 + 1500) / 1e6)
    assert cost(Price(input=2, output=8), 10_000, 0, cache_read=8_000) == pytest.approx(10_000 * 2 / 1e6)  # no price
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text('prices:\n  "openai:gpt-4o": {input: 2, output: 8, cache_read: 0.2, cache_write: 2.5}\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert load_settings(None, {}, env).prices["openai:gpt-4o"] == Price(input=2, output=8, cache_read=0.2,
                                                                         cache_write=2.5)
    config.write_text('prices:\n  "openai:gpt-4o": {input: 2, output: 8, cache_read: -1}\n')
    with pytest.raises(Exception, match=r"prices.*cache_read"):
        load_settings(None, {}, env)


async def test_chat_results_and_the_session_usage_tell_cached_tokens_apart(sidecar, fake):
    fake.caches = None  # scripted figures: 10,000 in, 8,000 of them read from the cache
    fake.script(Reply(text="one", usage=(10_000, 100), cache=(8_000, 0)), Reply(text="two", usage=(4_000, 10)))
    result, events = await sidecar.chat("first")
    assert result["usage"] == {"inputTokens": 10_000, "outputTokens": 100, "cacheReadTokens": 8_000,
                               "cacheWriteTokens": 0}
    assert events[-1]["usage"] == result["usage"]
    await sidecar.chat("second", session=result["session"])
    usage = await sidecar.request(protocol.USAGE, {"session": result["session"]})
    assert [(t["inputTokens"], t["cacheReadTokens"]) for t in usage["turns"]] == [(10_000, 8_000), (4_000, 0)]
    assert (usage["inputTokens"], usage["cacheReadTokens"], usage["cacheWriteTokens"]) == (14_000, 8_000, 0)
    assert usage["turns"][0]["cost"] == pytest.approx((2_000 * 2.5 + 8_000 * 1.25 + 100 * 10) / 1e6)
    _, shown = await sidecar.chat("::context", session=result["session"])
    output = next(e for e in shown if e["type"] == "commandOutput")["output"]
    assert "usage: 14,000 in (8,000 read from cache) · 110 out · $0.0261 over 2 turns" in output
    context = [e for e in events if e["type"] == "contextUsage"][-1]
    assert context["usedTokens"] == 10_100  # the meter counts every token the request carried


def test_usage_line_names_what_was_read_and_written():
    turn = TurnUsage(turn="t", input_tokens=12_000, output_tokens=30, estimated=False, cache_read_tokens=9_000,
                     cache_write_tokens=2_000, cost=0.01)
    usage = SessionUsage(model=SONNET, turns=[turn], input_tokens=12_000, output_tokens=30, cache_read_tokens=9_000,
                         cache_write_tokens=2_000, cost=0.01)
    assert usage_line(usage) == ("12,000 in (9,000 read from cache, 2,000 written to it) · 30 out · $0.0100 "
                                 "over 1 turn")


def test_sunwell_run_and_sessions_show_the_cached_share(env, fake, workspace):
    fake.caches = None
    fake.script(Reply(text="hi there", usage=(10_000, 100), cache=(6_000, 2_000)))
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "sunwell", "run", "hello", "--model", SONNET]
    shown = subprocess.run(command, env=env, cwd=workspace, stdout=subprocess.PIPE, stderr=slave, timeout=60,
                           check=False)
    os.close(slave)
    err = os.read(master, 4096).decode()
    os.close(master)
    assert shown.returncode == 0
    # 2,000 new at $3, 6,000 read at $0.30, 2,000 written at $3.75, 100 out at $15 (per million)
    assert "10,000 in (6,000 read from cache, 2,000 written to it) · 100 out · $0.0168" in err
    listed = subprocess.run([sys.executable, "-m", "sunwell", "sessions", "list"], env=env, cwd=workspace,
                            capture_output=True, text=True, check=True).stdout
    session = listed.split()[0]
    text = subprocess.run([sys.executable, "-m", "sunwell", "sessions", "show", session], env=env, cwd=workspace,
                          capture_output=True, text=True, check=True).stdout
    assert "usage: 10,000 in (6,000 read from cache, 2,000 written to it) · 100 out · $0.0168 over 1 turn" in text
    data = json.loads(subprocess.run([sys.executable, "-m", "sunwell", "sessions", "show", session, "--json"],
                                     env=env, cwd=workspace, capture_output=True, text=True, check=True).stdout)
    assert data["usage"]["cacheReadTokens"] == 6_000 and data["usage"]["cacheWriteTokens"] == 2_000
    done = next(e for e in data["events"] if e["kind"] == "done")
    assert done["data"]["usage"] == {"inputTokens": 10_000, "outputTokens": 100, "cacheReadTokens": 6_000,
                                     "cacheWriteTokens": 2_000}


# ---- local servers: the emulated and constrained path -------------------------------------------------------------


def rendered(body: dict) -> str:
    """A Chat Completions prompt as a chat template lays it out, role by role: what a server's KV cache holds."""
    return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in body["messages"])


def test_each_emulated_round_repeats_the_last_ones_prompt_up_to_its_reminder(tmp_path, workspace):
    from test_constrained import answer, call, called, engine, kind, run_turn

    with FakeProvider() as fake:
        fake.script(*called(call("read_file", path="a.txt")), *called(call("read_file", path="src/app.py")),
                    Reply(text=answer("a.txt says hello; app.py returns 42.")))
        run_turn(engine(tmp_path, workspace, fake), "What do my notes and my app say?")
        bodies = [r.body for r in fake.requests]
    assert [kind(b) for b in bodies] == [None, "json_schema", None, "json_schema", None]
    for free, held in ((bodies[0], bodies[1]), (bodies[2], bodies[3])):
        assert json.dumps(free["messages"]) == json.dumps(held["messages"])  # the schema request: the same prompt
    assert rendered(bodies[2]).startswith(rendered(bodies[1]))  # the first round's prompt whole
    prompt = rendered(bodies[3])
    reminder = prompt.rindex("\n\nThe request was: ")  # said after the newest result only
    assert rendered(bodies[4]).startswith(prompt[:reminder]) and len(prompt) - reminder < 150 < reminder


def test_a_small_models_session_repeats_its_prompt_from_turn_to_turn_and_after_a_held_first_call(sunwell, fake):
    """What only one request says goes after the newest message, never into the system prompt: the files the line
    names (for a small model) and that the first reply must be a call (`plan.read_first`). So every request repeats
    the one before up to that request's own end, and a local server reads only what is new (BENCHMARKS.md,
    "Local servers"). Before, both were in the system prompt, and a turn naming other files, or the round after a
    held first call, had the server read the whole conversation again."""
    from test_constrained import call, kind

    def small(prompt: str, *flags: str) -> str:
        run = sunwell("run", prompt, "--model", SMALL, "--base-url", f"{fake.url}/v1", "--json", *flags)
        assert run.code == 0, run.stderr
        return run.events[0]["session"]

    fake.script(Reply(text="A mapping of keys to values."))
    session = small("What is a Python dictionary?")
    fake.script(Reply(text=call("read_file", path="a.txt")), Reply(text="It says hello from a."))
    small("Read a.txt and tell me what it says", "--session", session)
    fake.script(Reply(text="Bonjour."))
    small("Say hello in French.", "--session", session)
    bodies = [r.body for r in fake.requests]
    assert [kind(b) for b in bodies] == [None, "json_schema", None, None]
    held = bodies[1]["messages"][-1]["content"]
    assert held.startswith("Read a.txt and tell me what it says\n\n")
    assert "a.txt, which exists: read it with read_file" in held and "You must call a tool" in held
    for before, after in itertools.pairwise(bodies):
        old, new = before["messages"], after["messages"]
        assert new[:len(old) - 1] == old[:-1]  # the system prompt and every message but the last
        kept = new[len(old) - 1]["content"]
        assert old[-1]["content"].startswith(kept) and len(old[-1]["content"]) - len(kept) < 250


# ---- room made in the window: the only places the prefix breaks ---------------------------------------------------


def test_the_prefix_breaks_only_where_room_is_made_and_tools_and_system_stay_cached(sunwell, fake, workspace):
    from sunwell.agent.prompts import COMPACT_SYSTEM

    rounds = 14
    for n in range(rounds):
        (workspace / f"m{n:02d}.py").write_text("".join(f"def m{n}_{i}(x):\n    return x + {i}\n" for i in range(170)))
    config = workspace.parent / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text('models:\n  "anthropic:claude-sonnet-4-6": {context_window: 24000}\n')
    said = iter(range(rounds + 1))

    def model(body: dict) -> Reply:
        if COMPACT_SYSTEM in json.dumps(body.get("system")):
            return Reply(text="The user had the modules read one by one; each adds a number to its argument.")
        n = next(said)
        return Reply(text="All read.") if n == rounds else Reply(
            tool_calls=[Call("read_file", json.dumps({"path": f"m{n:02d}.py"}))])

    fake.script(*[model] * (rounds + 10))
    run = sunwell("run", "--json", "--model", SONNET, "Read every module, one at a time")
    assert run.code == 0, run.stderr
    shown = json.loads(sunwell("sessions", "show", run.events[0]["session"], "--json").stdout)
    made_room = [row for row in shown["events"] if row["kind"] in ("elision", "compaction")]
    turn = [(r.body, r.billed) for r in fake.requests if COMPACT_SYSTEM not in json.dumps(r.body.get("system"))]
    breaks = [after for (_, before), (_, after) in itertools.pairwise(turn) if after.cache_read < before.total]
    assert made_room and len(breaks) == len(made_room)
    fixed = len(turn[0][0]["tools"]) + 1  # the tools' and the system's blocks
    for body, billed in turn:
        assert billed.cache_read == 0 or billed.cache_read >= _prefix_tokens(body, fixed)
    assert all(after.cache_read >= _prefix_tokens(turn[0][0], fixed) for after in breaks)


def _prefix_tokens(body: dict, blocks: int) -> int:
    from fake_cache import anthropic_pieces, tokens

    return sum(tokens(text) for text, _ in anthropic_pieces(body)[:blocks])


async def test_tools_fitted_to_a_small_window_stay_the_same_turn_after_turn(sidecar_factory, fake, workspace):
    """Fitted to a window, the tools change with the request's words; a session keeps them while its requests are
    about none the fitting cut, so its prefix holds from one turn to the next (a local server's KV cache too)."""
    config = workspace.parent / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text('models:\n  "openai:gpt-4o": {context_window: 9000}\n')
    sidecar = await sidecar_factory()
    fake.script(Reply(text="Hello."), Reply(text="Sure."), Reply(text="It is noon."))
    first, events = await sidecar.chat("Read a.txt and search for TODO notes")
    assert any(e["type"] == "notice" and e["code"] == "tools_fitted" for e in events)
    await sidecar.chat("Thanks, go on", session=first["session"])
    await sidecar.chat("What time is it?", session=first["session"])
    tools = [json.dumps(r.body["tools"]) for r in fake.requests]
    names = [[t["function"]["name"] for t in r.body["tools"]] for r in fake.requests]
    assert tools[1] == tools[0]  # a request about nothing the fitting cut: the same tools, byte for byte
    assert "get_time" not in names[0] and "get_time" in names[2]  # one about a tool it left out: fitted again
