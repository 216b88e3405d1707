"""Issue 16 through the streaming path the engine uses: the scripted server (tests/fake_provider.py, OpenAI SSE on
127.0.0.1) streams each family's call as text, the real `openai` SDK reads it in `OpenAIChat`, and the
`RecoveringProvider` a local model's requests go through finds the call. One case per format of the corpus, then
one whole turn through the CLI, where the call runs and its text is never in the answer."""

from __future__ import annotations

import json

import pytest

from conftest import check_stream_rules
from dialects.corpus import cases, collapsed, leaks, tools
from fake_provider import FakeProvider, Reply
from sunwell.models.base import ModelRequest, Notice, TextDelta, ThinkingDelta, ToolCallDone
from sunwell.models.emulation.provider import RecoveringProvider
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.wire.messages import ToolSpec, UserMessage

SPECS = [ToolSpec(name=name, description=name, parameters=schema) for name, schema in tools().items()]
FIRST_OF_EACH = {case.format: case for case in reversed(cases()) if case.calls and not case.cut_off}


async def recovered(fake: FakeProvider, reply: Reply) -> list:
    fake.script(reply)
    provider = RecoveringProvider(
        OpenAIChat(name="openai-compatible", base_url=f"{fake.url}/v1", api_key="k")
    )
    request = ModelRequest(
        model="local-model", system="You are Sunwell.", messages=[UserMessage(text="go")], tools=SPECS
    )
    return [event async for event in provider.stream(request)]


@pytest.mark.parametrize(
    "case", sorted(FIRST_OF_EACH.values(), key=lambda c: c.format), ids=lambda c: c.format
)
async def test_each_format_streamed_by_a_server_becomes_its_calls(fake, case):
    events = await recovered(fake, Reply(text=case.text, chunk=3))
    calls = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallDone)]
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert calls == case.calls
    assert collapsed(shown) == collapsed(case.shown) and leaks(case, shown) == []
    assert collapsed("".join(e.text for e in events if isinstance(e, ThinkingDelta))) == collapsed(
        case.thinking
    )
    assert any(isinstance(e, Notice) and e.code == "tool_call_from_text" for e in events)


async def test_a_reply_cut_off_by_length_runs_no_call(fake):
    text = '[TOOL_CALLS]write_file[ARGS]{"path": "b.txt", "content": "HEL'
    events = await recovered(fake, Reply(text=text, chunk=4, truncated=True))
    assert [e for e in events if isinstance(e, ToolCallDone)] == []
    assert "[TOOL_CALLS]" not in "".join(e.text for e in events if isinstance(e, TextDelta))


QWEN3_CODER_CALL = (
    "I'll read it.\n<tool_call>\n<function=read_file>\n<parameter=path>\na.txt\n</parameter>\n"
    "<parameter=limit>\n1\n</parameter>\n</function>\n</tool_call>"
)


@pytest.mark.parametrize(
    ("model", "text"),
    [
        ("qwen3-coder-30b-a3b", QWEN3_CODER_CALL),
        ("qwen3-coder-30b-a3b", QWEN3_CODER_CALL.replace("<parameter=limit>\n1\n</parameter>\n", "")),
        ("devstral-small-2507", '[TOOL_CALLS]read_file[ARGS]{"path": "a.txt", "limit": 1}'),
        (
            "gpt-oss-20b",
            (
                "<|channel|>analysis<|message|>Read a.txt.<|end|><|start|>assistant<|channel|>commentary "
                'to=functions.read_file <|constrain|>json<|message|>{"path": "a.txt", "limit": 1}<|call|>'
            ),
        ),
    ],
)
def test_a_turn_runs_the_call_a_local_model_wrote_in_its_own_format(sunwell, fake, model, text):
    fake.script(Reply(text=text, chunk=5), Reply(text="It says hello from a."))
    run = sunwell(
        "run", "Read a.txt", "--model", f"openai-compatible:{model}", "--base-url", f"{fake.url}/v1", "--json"
    )
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    [call] = [e for e in run.events if e["type"] == "toolCall"]
    expected = {"path": "a.txt", "limit": 1} if "limit" in text else {"path": "a.txt"}
    assert (call["name"], call["arguments"]) == ("read_file", expected)
    [result] = [e for e in run.events if e["type"] == "toolResult"]
    assert result["ok"] and "hello from a" in result["output"]
    shown = "".join(e["delta"] for e in run.events if e["type"] == "text")
    assert not any(
        m in shown for m in ("<tool_call>", "<function", "[TOOL_CALLS]", "<|channel|>", "<|message|>")
    )
    assert shown.endswith("It says hello from a.")
