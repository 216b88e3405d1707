"""Issue 47: what no ported case can cover, generated. Prose with embedded JSON, code fences, XML-ish tags and calls
half-written in every dialect, around the offered tools' names, streamed in any chunking:

- no call unless a dialect's markers (or a call's JSON) came complete: a reply that ends inside a call, or holds
  only a fragment of one, calls nothing;
- when a complete call is read, none of its text is in the answer, and the prose around it is.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dialects.corpus import LEAK_MARKERS
from sunwell.models.base import TextDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CallDetector

TOOLS = {
    "read_file": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
}
ARGUMENTS = {"read_file": {"path": "notes.txt"}, "get_weather": {"city": "Paris", "days": 2}}
HY4, M3 = ":opensource", "]<]minimax[>["  # HY V4's tag suffix, MiniMax-M3's namespace


def calls_in(name: str, arguments: dict) -> list[tuple[str, str]]:
    """One complete call of `name` in each dialect Sunwell reads, with the marker that ends the call itself (the
    call's own end: a reply that ends before it holds a call half-written; one that ends after it, before the
    wrapper closes, has said the whole call)."""
    js = json.dumps(arguments)
    xml = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in arguments.items())
    glm = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in arguments.items())
    py = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    gemma = ",".join(f"{k}:<|\"|>{v}<|\"|>" if isinstance(v, str) else f"{k}:{v}" for k, v in arguments.items())
    ifm_xml = "".join(f"<ifm|arg_key>{k}</ifm|arg_key><ifm|arg_value>{v}</ifm|arg_value>" for k, v in arguments.items())
    dsml = "".join(f'<｜DSML｜parameter name="{k}" string="{str(isinstance(v, str)).lower()}">{v}</｜DSML｜parameter>'
                   for k, v in arguments.items())
    return [
        (f'<tool_call>\n{{"name": "{name}", "arguments": {js}}}\n</tool_call>', "}"),
        (f"<tool_call>\n<function={name}>\n{xml}</function>\n</tool_call>", "</function>"),
        (f"<tool_call>{name}\n{glm}</tool_call>", "</arg_value>"),
        (f"[TOOL_CALLS]{name}[ARGS]{js}", "}"),
        (f"<|python_start|>[{name}({py})]<|python_end|>", ")"),
        (f"<|tool_call_start|>[{name}({py})]<|tool_call_end|>", ")"),
        (f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{js}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "}"),
        ((f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{js}"
          "<|tool_call_end|><|tool_calls_section_end|>"), "}"),
        (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{js}<|call|>", "}"),
        (f'<minimax:tool_call><invoke name="{name}">'
         + "".join(f'<parameter name="{k}">{v}</parameter>' for k, v in arguments.items())
         + "</invoke></minimax:tool_call>", "</invoke>"),  # whole once </invoke> came (vLLM's MiniMax case)
        (f'```json\n{{"name": "{name}", "arguments": {js}}}\n```', "}"),
        (f'functools[{{"name": "{name}", "arguments": {js}}}]', "}"),
        (f"<|tool_call>call:{name}{{" + gemma + "}<tool_call|>", "}"),
        (f"call:{name}{{" + gemma + "}", "}"),  # Gemma 4's bare call, on a line of its own
        (f"<tool_call>{name}{{" + gemma + "}</tool_call>", "}"),
        (f"<ifm|tool_calls><ifm|tool_call>{name}{ifm_xml}</ifm|tool_call></ifm|tool_calls>", "</ifm|tool_calls>"),
        (f'<ifm|tool_calls><ifm|tool_call>{{"name": "{name}", "arguments": {js}}}</ifm|tool_call></ifm|tool_calls>',
         "</ifm|tool_calls>"),  # K2 Horizon: a group that never closed may have held more calls
        (f'<｜DSML｜tool_calls><｜DSML｜invoke name="{name}">{dsml}</｜DSML｜invoke></｜DSML｜tool_calls>', "</｜DSML｜tool_calls>"),
        (f'<tools>{{"name": "{name}", "arguments": {js}}}</tools>', "}"),
        (f"<tool_calls>\n<tool_call>{name}<tool_sep>\n{glm}</tool_call>\n</tool_calls>", "</tool_call>"),
        (f"<tool_calls{HY4}><tool_call{HY4}>{name}" + "".join(f"<arg_key{HY4}>{k}</arg_key{HY4}><arg_value{HY4}>{v}</arg_value{HY4}>"
         for k, v in arguments.items()) + f"</tool_call{HY4}></tool_calls{HY4}>", f"</tool_call{HY4}>"),
        (f'<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="{name}">'
         + "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in arguments.items())
         + "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>", "<｜tool_call_end｜>"),
        (f'<function name="{name}">' + "".join(f'<param name="{k}">{v}</param>' for k, v in arguments.items()) + "</function>",
         "</function>"),
        (f'{M3}<tool_call>\n{M3}<invoke name="{name}">' + "".join(f"{M3}<{k}>{v}{M3}</{k}>" for k, v in arguments.items())
         + f"{M3}</invoke>\n{M3}</tool_call>", f"{M3}</invoke>"),
        (f"<iquestcoder_tool_call>{name}{glm}</iquestcoder_tool_call>", "</iquestcoder_tool_call>"),
    ]


COMPLETE = [(call, end, name) for name, args in ARGUMENTS.items() for call, end in calls_in(name, args)]
"""Each complete call, the marker its own end is, and its tool."""

WORDS = st.sampled_from([
    "Sure,", "I will", "read_file", "get_weather", "the file", "Paris", "then", "answer.", "`read_file`", "{}", "[1, 2]",
    '{"name": "Ada", "age": 3}', "<b>bold</b>", "<tool>", "a < b > c", "```python\nprint(1)\n```", "x = {'k': 1}",
    '"arguments"', "name:", "<function", "functions.", "—", "日本語", "\n", "\n\n", "functools", "functools.partial(f)",
    "functools[0]", "myfunctools[0]",  # an unclosed `[` before `{}` and a tool's name would be a call cut short
])
PROSE = st.lists(WORDS, max_size=8).map(" ".join)


@st.composite
def half_written(draw) -> str:
    """A call cut anywhere before its own end came: what a reply that ended inside it holds."""
    call, end, _ = draw(st.sampled_from(COMPLETE))
    return call[: draw(st.integers(1, call.index(end)))]


def read(text: str, cuts: list[int]) -> tuple[list[str], str]:
    detector = CallDetector(TOOLS)
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        events += detector.feed(text[a:b])
    events += detector.finish()
    return ([e.name for e in events if isinstance(e, ToolCallDone)],
            "".join(e.text for e in events if isinstance(e, TextDelta)))


def chunkings(text: str):
    return st.lists(st.integers(1, max(1, len(text) - 1)), max_size=12).map(
        lambda cuts: sorted({c for c in cuts if 0 < c < len(text)}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_prose_and_half_written_calls_call_nothing(data):
    text = data.draw(PROSE) + " " + data.draw(half_written())
    calls, _ = read(text, data.draw(chunkings(text)))
    assert calls == [], text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_prose_alone_calls_nothing(data):
    text = data.draw(PROSE)
    calls, shown = read(text, data.draw(chunkings(text)))
    assert calls == [], text
    assert "".join(shown.split()) == "".join(text.split()), (text, shown)  # prose stays, all of it


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_complete_call_is_read_and_none_of_its_text_shown(data):
    before, after = data.draw(PROSE), data.draw(PROSE)
    call, _, name = data.draw(st.sampled_from(COMPLETE))
    text = f"{before}\n{call}\n{after}"
    calls, shown = read(text, data.draw(chunkings(text)))
    assert calls == [name], text
    leaked = [m for m in LEAK_MARKERS if m in shown and m not in before + after]
    assert leaked == [], (text, shown)
    assert "".join(shown.split()) == "".join((before + after).split()), (text, shown)
