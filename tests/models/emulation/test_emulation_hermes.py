"""The `hermes` emulation style: Qwen's trained tool format, chosen by the registry for small Qwen2.5-Coder."""

from __future__ import annotations

import json
import re

from sunwell.models.base import Finished, ModelRequest, TextDelta, ToolCallDone
from sunwell.models.capabilities import capabilities_for
from sunwell.models.emulation.prompt import render_call, render_history_for_emulation, tool_prompt
from sunwell.models.emulation.provider import EmulatedProvider
from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec, UserMessage
from text_calls import extract_tool_calls

TOOLS = [
    ToolSpec(name="read_file", description="Read a text file. Lines are numbered.", parameters={
        "type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
    ToolSpec(name="list_files", description="List files.", parameters={"type": "object", "properties": {}}),
]
NAMES = [t.name for t in TOOLS]


def signatures(prompt: str) -> list[dict]:
    block = re.search(r"<tools>\n(.*)\n</tools>", prompt, re.DOTALL).group(1)
    return [json.loads(line) for line in block.splitlines()]


def test_the_prompt_lists_each_tool_as_a_json_signature():
    prompt = tool_prompt(TOOLS, "hermes")
    assert [s["function"]["name"] for s in signatures(prompt)] == NAMES
    assert signatures(prompt)[0] == {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file. Lines are numbered.",
        "parameters": TOOLS[0].parameters}}
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in prompt


def test_compact_keeps_the_first_sentence_and_every_parameter():
    prompt = tool_prompt(TOOLS, "hermes", compact=True)
    assert signatures(prompt)[0]["function"]["description"] == "Read a text file."
    assert signatures(prompt)[0]["function"]["parameters"] == TOOLS[0].parameters
    assert len(prompt) < len(tool_prompt(TOOLS, "hermes"))


def test_one_call_per_reply_unless_parallel():
    assert "Call one function per reply" in tool_prompt(TOOLS, "hermes")
    assert "Call one function per reply" not in tool_prompt(TOOLS, "hermes", parallel=True)


def test_past_calls_and_results_render_as_qwen_renders_them():
    history = [
        UserMessage(text="Read a.txt"),
        AssistantMessage(text="", tool_calls=[ToolCall(id="emu_1", name="read_file", arguments={"path": "a.txt"})]),
        ToolResultMessage(call_id="emu_1", name="read_file", output="hello"),
    ]
    rendered = render_history_for_emulation(history, "hermes")
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[1].text == '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'
    assert rendered[2].text == "<tool_response>\nhello\n</tool_response>"
    assert extract_tool_calls(render_call("read_file", {"path": "a.txt"}, "hermes"), NAMES).calls == [
        ("read_file", {"path": "a.txt"})]


class ScriptedModel:
    name = "scripted"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[ModelRequest] = []

    async def stream(self, request):
        self.requests.append(request)
        for i in range(0, len(self.text), 2):
            yield TextDelta(self.text[i:i + 2])
        yield Finished(stop_reason="stop")


async def test_a_tagged_call_is_found_and_its_text_never_shown():
    model = ScriptedModel('<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>')
    provider = EmulatedProvider(model, style="hermes", compact=True)
    request = ModelRequest(model="qwen2.5-coder-0.5b", system="You are Sunwell.",
                           messages=[UserMessage(text="Read a.txt")], tools=TOOLS)
    events = [event async for event in provider.stream(request)]
    assert [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallDone)] == [
        ("read_file", {"path": "a.txt"})]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip() == ""
    assert "<tools>" in model.requests[0].system and model.requests[0].tools == []


def test_the_registry_picks_hermes_for_small_qwen_coder_only():
    small = capabilities_for("qwen2.5-coder-0.5b", "openai-compatible")
    assert (small.native_tools, small.emulation) == (False, "hermes")
    assert capabilities_for("qwen2.5-coder:7b", "ollama").native_tools
    assert capabilities_for("qwen3", "ollama").emulation == "hermes"  # issue 16: every Qwen falls back to hermes
