"""Emulated tool calling: the prompt, the history, the streaming detector, and the two wrapping providers.

The providers wrap a scripted in-test provider: the model's answer is the edge of the world.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sunwell.models.base import (
    Finished,
    ModelRequest,
    Notice,
    ProviderError,
    TextDelta,
    ThinkingDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.emulation.call_detector import CallDetector, next_emulated_id
from sunwell.models.emulation.prompt import render_history_for_emulation, tool_prompt
from sunwell.models.emulation.provider import EmulatedProvider, RecoveringProvider, rejects_tools
from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec, Usage, UserMessage
from text_calls import extract_tool_calls

TOOLS = [
    ToolSpec(name="read_file", description="Read a text file. Lines are numbered.", parameters={
        "type": "object", "required": ["path"], "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "offset": {"type": "integer", "description": "First line, 1-based."},
            "limit": {"type": "integer"}}}),
    ToolSpec(name="write_file", description="Write a file.", parameters={
        "type": "object", "required": ["path", "content"], "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}}}),
    ToolSpec(name="run_command", description="Run a shell command.", parameters={
        "type": "object", "required": ["command"], "properties": {
            "command": {"type": "string"}, "timeout": {"type": "integer", "default": 30},
            "mode": {"enum": ["fast", "safe"]}}}),
]
NAMES = [t.name for t in TOOLS]

CALL_JSON = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
STREAMS = [
    f"Let me read it.\n```json\n{CALL_JSON}\n```\n",
    f"I'll check {CALL_JSON} and then {{not a call}} [1] [x](y) <b>b</b> a < b `x` ``",
    f"```python\nprint({{'a': 1}})\n```\nNow <tool_call>{CALL_JSON}</tool_call> done",
    "{'name': 'read_file', 'arguments': {'path': 'a.txt',}}",  # broken: single quotes, trailing comma
    ('[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.txt"}}] '
     '<|python_tag|>{"name": "run_command", "parameters": {"command": "ls"}} '
     "<write_file><path>b</path><content>x\ny\n</content></write_file>"),
    "Just prose, no calls at all, with a { brace and a ```fence that never closes",
    # A fence and JSON inside a string argument.
    '{"name": "write_file", "arguments": {"path": "R", "content": "```sh\\nls\\n```\\n{\\"x\\": [1]}"}}',
    "x" * 20 + "{" + "y" * 300 + "} " + CALL_JSON,
]


def run_detector(chunks):
    detector = CallDetector(NAMES)
    events = []
    for chunk in chunks:
        events += detector.feed(chunk)
    return events + detector.finish()


def summary(events):
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    calls = [(e.call_id, e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallDone)]
    return text, calls


def expected(text):
    out = extract_tool_calls(text, NAMES)
    return out.remaining_text, [(f"emu_{i}", c.name, c.arguments) for i, c in enumerate(out.calls, 1)]


@pytest.mark.parametrize("text", STREAMS)
def test_detector_one_character_at_a_time_matches_the_one_shot_normalizer(text):
    events = run_detector(list(text))
    assert summary(events) == expected(text)
    assert summary(run_detector([text])) == expected(text)


@pytest.mark.parametrize("text", STREAMS)
def test_call_text_never_appears_in_text_events(text):
    events = run_detector(list(text))
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    for marker in ('"arguments"', "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<path>"):
        assert marker not in shown


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_chunking_gives_the_same_calls_and_text(data):
    text = data.draw(st.sampled_from(STREAMS))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=25)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert summary(run_detector(chunks)) == expected(text)


def test_call_events_come_in_order_with_emulated_ids():
    events = run_detector([f"{CALL_JSON}\n{CALL_JSON}"])
    kinds = [(type(e).__name__, getattr(e, "call_id", None)) for e in events if not isinstance(e, TextDelta)]
    assert kinds == [("ToolCallStarted", "emu_1"), ("ToolCallArgs", "emu_1"), ("ToolCallDone", "emu_1"),
                     ("ToolCallStarted", "emu_2"), ("ToolCallArgs", "emu_2"), ("ToolCallDone", "emu_2")]
    args = next(e for e in events if isinstance(e, ToolCallArgs))
    assert json.loads(args.delta) == {"path": "a.txt"}


def test_repairs_become_notices_before_the_call():
    events = run_detector(list("{'name': 'read_file', 'arguments': {'path': 'a.txt',}}"))
    assert isinstance(events[0], Notice) and events[0].code == "tool_call_repaired"
    assert "read_file" in events[0].message
    assert isinstance(events[1], ToolCallStarted)


def test_prose_flows_out_at_once_and_a_possible_call_is_held():
    detector = CallDetector(NAMES)
    assert detector.feed("Hello world. ") == [TextDelta("Hello world. ")]
    assert detector.feed("Now {") == [TextDelta("Now ")]
    assert detector.feed('"name": "read_') == []
    held = detector.feed('file", "arguments": {}} ok')
    assert [type(e) for e in held] == [ToolCallStarted, ToolCallArgs, ToolCallDone, TextDelta]
    assert held[-1] == TextDelta(" ok")


def test_held_text_that_is_not_a_call_is_released():
    detector = CallDetector(NAMES)
    assert detector.feed("<") == []
    assert detector.feed("b>bold") == [TextDelta("<b>bold")]
    assert detector.feed('{"a": 1') == []
    assert detector.feed("}") == [TextDelta('{"a": 1}')]
    assert detector.feed("``") == []
    assert detector.finish() == [TextDelta("``")]


def test_code_blocks_in_other_languages_stream_on():
    detector = CallDetector(NAMES)
    assert detector.feed("```pyth") == []
    assert detector.feed("on\n") == [TextDelta("```python\n")]
    assert detector.feed('print({"name": "read_file"})\n`') == [TextDelta('print({"name": "read_file"})\n')]
    assert detector.feed("``\nAfter {") == [TextDelta("```\nAfter ")]


# --- the prompt ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("style", ["json", "xml"])
@pytest.mark.parametrize("compact", [False, True])
def test_prompt_names_every_tool_and_required_parameter(style, compact):
    prompt = tool_prompt(TOOLS, style, compact=compact, parallel=False)
    for tool in TOOLS:
        assert tool.name in prompt
        for param in tool.parameters["required"]:
            assert param in prompt
    assert '"fast" | "safe"' in prompt


def test_compact_prompt_has_one_line_per_tool():
    prompt = tool_prompt(TOOLS, "json", compact=True)
    assert prompt.count("\n- ") == len(TOOLS)
    assert "- read_file(path: string, offset?: integer, limit?: integer): Read a text file." in prompt
    assert len(prompt) < len(tool_prompt(TOOLS, "json", compact=False))
    assert "Lines are numbered" not in prompt  # only the first sentence


def test_full_prompt_lists_parameter_details():
    prompt = tool_prompt(TOOLS, "json")
    assert "- path (string, required): Path relative to the workspace." in prompt
    assert "- timeout (integer, optional, default 30)" in prompt


def test_parallel_variant():
    assert "one tool per reply" in tool_prompt(TOOLS, "json", parallel=False)
    assert "several tools at once" in tool_prompt(TOOLS, "json", parallel=True)


@pytest.mark.parametrize("style", ["json", "xml"])
def test_the_prompt_example_is_read_back_as_a_call(style):
    prompt = tool_prompt(TOOLS, style, compact=True)
    example = prompt[prompt.index("For example:"):]
    out = extract_tool_calls(example, NAMES)
    assert [c.name for c in out.calls] == ["read_file"]
    assert set(out.calls[0].arguments) == {"path"}


# --- the history --------------------------------------------------------------------------------------------

HISTORY = [
    UserMessage(text="Read a.txt and b.txt"),
    AssistantMessage(text="Reading.", tool_calls=[
        ToolCall(id="emu_1", name="read_file", arguments={"path": "a.txt"}),
        ToolCall(id="emu_2", name="read_file", arguments={"path": "b.txt"})]),
    ToolResultMessage(call_id="emu_1", name="read_file", output="hello"),
    ToolResultMessage(call_id="emu_2", name="read_file", output="", ok=False,
                      error={"code": "not_found", "message": "b.txt does not exist"}),
]


@pytest.mark.parametrize("style", ["json", "xml"])
def test_history_has_no_tool_roles_and_alternates(style):
    rendered = render_history_for_emulation(HISTORY, style)
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[1].tool_calls == []
    assert rendered[1].text.startswith("Reading.\n")
    assert extract_tool_calls(rendered[1].text, NAMES).calls == [
        ("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})]
    assert rendered[2].text == (
        'Result of read_file(path="a.txt"):\nhello\n\n'
        'Result of read_file(path="b.txt"):\nError [not_found]: b.txt does not exist')


def test_next_emulated_id_skips_ids_in_the_history():
    assert next_emulated_id([]) == 1
    assert next_emulated_id(HISTORY) == 3


# --- the providers ------------------------------------------------------------------------------------------

class ScriptedModel:
    """The model's side of the wire: replays a scripted answer and keeps what it was sent."""

    name = "scripted"

    def __init__(self, *events):
        self.events = events
        self.requests: list[ModelRequest] = []

    async def stream(self, request):
        self.requests.append(request)
        self.delivered = 0
        for event in self.events:
            self.delivered += 1
            yield event


async def collect(provider, request):
    return [event async for event in provider.stream(request)]


def request(tools=TOOLS, choice="auto", messages=HISTORY):
    return ModelRequest(model="qwen2.5-coder-0.5b", system="You are Sunwell.", messages=list(messages),
                        tools=list(tools), tool_choice=choice)


def deltas(text, size=3):
    return [TextDelta(text[i:i + size]) for i in range(0, len(text), size)]


async def test_emulated_provider_sends_no_tools_and_finds_the_call():
    model = ScriptedModel(*deltas(f"Sure.\n```json\n{CALL_JSON}\n```"), Finished(stop_reason="stop"))
    events = await collect(EmulatedProvider(model, style="json", compact=True), request())
    sent = model.requests[0]
    assert sent.tools == [] and sent.system.startswith("You are Sunwell.\n\n# Tools")
    assert all(t.name in sent.system for t in TOOLS)
    assert not any(isinstance(m, ToolResultMessage) for m in sent.messages)
    text, calls = summary(events)
    assert text == "Sure.\n"
    assert calls == [("emu_3", "read_file", {"path": "a.txt"})]  # ids continue after the history's
    assert isinstance(events[-1], Finished)


async def test_emulated_reply_ends_at_its_first_call():
    script = [*deltas(f"Ok.\n{CALL_JSON}\nThe file says: hello (made up)\n{CALL_JSON}"), Finished()]
    model = ScriptedModel(*script)
    events = await collect(EmulatedProvider(model), request())
    text, calls = summary(events)
    assert (text, [c[1] for c in calls]) == ("Ok.\n", ["read_file"])
    assert events[-1] == Finished(stop_reason="tool_calls")
    assert model.delivered < len(script)  # the rest was not even read


async def test_parallel_emulation_keeps_every_call_and_the_text_around_them():
    model = ScriptedModel(*deltas(f"Ok.\n{CALL_JSON}\nand\n{CALL_JSON}"), Finished(stop_reason="stop"))
    events = await collect(EmulatedProvider(model, parallel=True), request())
    text, calls = summary(events)
    assert (text, len(calls)) == ("Ok.\n\nand\n", 2)
    assert events[-1] == Finished(stop_reason="stop")


async def test_a_call_completed_by_the_end_of_the_stream_keeps_the_inner_finish():
    usage = Usage(input_tokens=5, output_tokens=7)
    # the closing tag never comes, so the call is whole only when the stream ends
    model = ScriptedModel(*deltas('<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}'), Finished(usage=usage))
    events = await collect(EmulatedProvider(model), request())
    assert summary(events)[1] == [("emu_3", "read_file", {"path": "a.txt"})]
    assert events[-1] == Finished(usage=usage)


@pytest.mark.parametrize("constrained", [False, True])
async def test_emulated_provider_tool_choice_is_said_last_and_leaves_the_system_prompt_alone(constrained):
    # The system prompt is the same bytes whatever the choice: a server's prompt cache keeps it, and the history
    # after it, from a request that must call to the next one, which may answer (issue 42).
    model = ScriptedModel(Finished())
    for choice in ("auto", "required", "read_file"):
        await collect(EmulatedProvider(model, constrained=constrained), request(choice=choice))
    auto, required, named = model.requests
    assert auto.system == required.system == named.system
    assert required.messages[:-1] == named.messages[:-1] == auto.messages[:-1]
    required_said = required.messages[-1].text.removesuffix("\nYou must call a tool in this reply.")
    named_said = named.messages[-1].text.removesuffix("\nYou must call read_file in this reply.")
    assert required_said == named_said != required.messages[-1].text
    assert not auto.messages[-1].text.endswith("in this reply.")


async def test_emulated_provider_without_tools_detects_nothing():
    model = ScriptedModel(TextDelta(CALL_JSON), Finished())
    events = await collect(EmulatedProvider(model), request(choice="none"))
    assert model.requests[0].system == "You are Sunwell."
    assert events == [TextDelta(CALL_JSON), Finished()]
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "user"]


async def test_emulated_provider_flushes_held_text_when_the_stream_just_ends():
    model = ScriptedModel(TextDelta("a {b"))
    assert await collect(EmulatedProvider(model), request()) == [TextDelta("a "), TextDelta("{b")]


async def test_recovering_provider_recovers_a_call_written_as_text():
    model = ScriptedModel(ThinkingDelta("hm"), *deltas(f"Ok. {CALL_JSON} then"), Finished())
    events = await collect(RecoveringProvider(model), request(messages=[UserMessage(text="hi")]))
    assert model.requests[0].tools == TOOLS  # offered natively
    assert summary(events) == ("Ok.  then", [("emu_1", "read_file", {"path": "a.txt"})])
    notice = next(e for e in events if isinstance(e, Notice))
    assert notice.code == "tool_call_from_text"
    assert isinstance(events[0], ThinkingDelta) and isinstance(events[-1], Finished)


async def test_recovering_provider_releases_held_text_when_a_native_call_arrives():
    native = [ToolCallStarted("call_9", "read_file"), ToolCallArgs("call_9", '{"path": "b"}'),
              ToolCallDone("call_9", "read_file", '{"path": "b"}')]
    model = ScriptedModel(*deltas(f"Ok. {CALL_JSON} and {{x"), *native, TextDelta(" {y"), Finished())
    events = await collect(RecoveringProvider(model), request())
    text, calls = summary(events)
    assert text == f"Ok. {CALL_JSON} and {{x {{y"
    assert calls == [("call_9", "read_file", {"path": "b"})]
    assert not any(isinstance(e, Notice) for e in events)


async def test_recovering_provider_passes_everything_through_without_tools():
    script = [TextDelta(CALL_JSON), Finished()]
    assert await collect(RecoveringProvider(ScriptedModel(*script)), request(tools=[])) == script


@pytest.mark.parametrize(("message", "status", "rejected"), [
    ("registry.ollama.ai/library/gemma:2b does not support tools", 400, True),
    ("Tools are not supported by this model", 400, True),
    ("Unrecognized request argument supplied: tools", 400, True),
    ('"auto" tool choice requires --enable-auto-tool-choice; tool_choice is not supported', 400, True),
    ("Rate limit exceeded", 429, False),
    ("context length exceeded", 400, False),
])
def test_rejects_tools(message, status, rejected):
    assert rejects_tools(ProviderError(message, status=status)) is rejected
