"""Issue 16: the call formats of today's open models, read from a complete reply and from a stream (any chunking),
with the call's text never in the answer, and no call where there was none.

The corpus (tests/dialects/) holds model outputs written from each family's documented format with the calls they
hold; the streaming tests feed the same outputs through `CallDetector`, the detector the providers use.
"""

from __future__ import annotations

import random

import pytest

from dialects.corpus import Case, cases, collapsed, leaks, tools
from sunwell.models.arguments import load_json, parse_arguments, typed_value
from sunwell.models.base import Notice, TextDelta, ThinkingDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CUT_OFF_NOTICE, UNKNOWN_NOTICE, CallDetector
from sunwell.wire.messages import ToolSpec
from text_calls import extract_tool_calls

TOOLS = tools()
CASES = cases()
FORMATS = sorted({case.format for case in CASES})


def by_id(case: Case) -> str:
    return f"{case.format}: {case.name}"


def stream(text: str, cuts: list[int], *, cut_off: bool = False, tools=TOOLS) -> tuple[list, str, str, list]:
    """The calls, the text shown, the thinking and every event, for `text` fed in pieces cut at `cuts`."""
    detector = CallDetector(tools)
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        events += detector.feed(text[a:b])
    events += detector.finish(cut_off=cut_off)
    calls = [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)]
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    return calls, shown, thinking, events


def test_the_corpus_covers_every_format_of_the_issue():
    assert {
        "mistral",
        "llama4",
        "qwen3_coder",
        "harmony",
        "deepseek",
        "glm45",
        "kimi_k2",
        "lfm2",
        "minimax",
        "granite",
        "function_tag",
        "name_key",
        "no_false_calls",
    } <= set(FORMATS)
    assert all(sum(c.format == f for c in CASES) >= 3 for f in FORMATS)


@pytest.mark.parametrize("case", CASES, ids=by_id)
def test_a_complete_reply_gives_exactly_the_calls_and_shows_no_call_text(case):
    out = extract_tool_calls(case.text, TOOLS, cut_off=case.cut_off)
    assert [(c.name, c.arguments) for c in out.calls] == case.calls
    assert collapsed(out.remaining_text) == collapsed(case.shown)
    assert collapsed(out.thinking) == collapsed(case.thinking)
    assert leaks(case, out.remaining_text) == []


@pytest.mark.parametrize("case", CASES, ids=by_id)
@pytest.mark.parametrize("size", [1, 3, 11])
def test_a_streamed_reply_gives_the_same_calls_and_text(case, size):
    calls, shown, thinking, _ = stream(
        case.text, list(range(size, len(case.text), size)), cut_off=case.cut_off
    )
    assert calls == case.calls
    assert collapsed(shown) == collapsed(case.shown)
    assert collapsed(thinking) == collapsed(case.thinking)
    assert leaks(case, shown) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_chunkings_agree_with_the_complete_reply(fmt):
    rng = random.Random(fmt)
    for case in (c for c in CASES if c.format == fmt):
        whole = extract_tool_calls(case.text, TOOLS, cut_off=case.cut_off)
        for _ in range(8):
            cuts = sorted(rng.sample(range(1, len(case.text)), min(len(case.text) - 1, rng.randint(1, 30))))
            calls, shown, thinking, _ = stream(case.text, cuts, cut_off=case.cut_off)
            assert calls == [(c.name, c.arguments) for c in whole.calls], (case.name, cuts)
            assert (shown, thinking) == (whole.remaining_text, whole.thinking), (case.name, cuts)


# --------------------------------------------------------------------------- streamed text is held, then released


def test_a_marker_prefix_is_held_and_released_when_it_turns_out_to_be_prose():
    detector = CallDetector(TOOLS)
    assert detector.feed("See the list below:\n") == [TextDelta("See the list below:\n")]
    assert detector.feed("[TOOL") == []  # may become [TOOL_CALLS]
    assert detector.feed("S] are") == [TextDelta("[TOOLS] are")]
    assert detector.feed(" <|chan") == [TextDelta(" ")]
    assert detector.feed("ge|> x") == [TextDelta("<|change|> x")]
    assert detector.feed("\nget_wea") == [TextDelta("\n")]  # a line may become get_weather(...)
    assert detector.feed("ther is a tool.") == [TextDelta("get_weather is a tool.")]


def test_harmony_thinking_and_answer_come_as_their_own_events():
    _, shown, thinking, events = stream(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
        list(range(2, 100, 2)),
    )
    assert (thinking, shown) == ("Think.", "Done.")
    kinds = [type(e) for e in events]
    assert kinds.index(ThinkingDelta) < kinds.index(TextDelta)


# --------------------------------------------------------------------------- no false calls


def test_a_call_the_reply_was_cut_off_in_is_never_run_and_the_user_is_told():
    text = 'I will write it.\n[TOOL_CALLS]write_file[ARGS]{"path": "b.txt", "content": "HEL'
    calls, shown, _, events = stream(text, [5, 30, 60], cut_off=True)
    assert calls == [] and shown == "I will write it.\n"
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert notice.code == CUT_OFF_NOTICE and "write_file" in notice.message and notice.level == "warning"
    assert extract_tool_calls(text, TOOLS, cut_off=True).cut_off == ["write_file"]


def test_a_call_whose_json_never_closed_is_no_call_however_the_reply_ended():
    """Issue 47 (vLLM's Hermes test): a closing brace left out at the end of a reply is a call cut short, not a slip
    to mend; the user gets a notice that quotes it, and nothing runs."""
    text = '{"name": "read_file", "arguments": {"path": "a.txt"}'
    for cut_off in (False, True):
        calls, shown, _, events = stream(text, [9], cut_off=cut_off)
        assert (calls, shown) == ([], "")
        [notice] = [e for e in events if isinstance(e, Notice)]
        assert notice.code == CUT_OFF_NOTICE and text in notice.message


def test_a_truncated_name_never_becomes_the_longer_tool():
    for text in (
        '<tool_call>{"name": "read_fi", "arguments": {"path": "a"}}</tool_call>',
        '[TOOL_CALLS]read_fi[ARGS]{"path": "a"}',
        "<|tool_call_start|>[read_fi(path='a')]<|tool_call_end|>",
        '<|channel|>commentary to=functions.read_fi <|constrain|>json<|message|>{"path": "a"}<|call|>',
    ):
        detector = CallDetector(TOOLS)
        events = detector.feed(text) + detector.finish()
        assert not [e for e in events if isinstance(e, ToolCallDone)], text  # issue 47: not offered, no call
        assert [e.code for e in events if isinstance(e, Notice)][-1:] == [UNKNOWN_NOTICE], text
        # Emulating, the loop still gets it, runs nothing and answers unknown_tool (the model can correct itself)
        detector = CallDetector(TOOLS, unknown_as_calls=True)
        assert [e.name for e in detector.feed(text) + detector.finish() if isinstance(e, ToolCallDone)] == ["read_fi"]
    assert extract_tool_calls('read_fi(path="a")', TOOLS).calls == []  # bare Python: only offered tools


def test_a_repair_never_invents_a_value():
    assert parse_arguments('{"path": "a.txt", "content":')[0] == {"path": "a.txt"}
    assert parse_arguments('{"path": "a.txt", "content": }')[0] == {"path": "a.txt"}
    assert parse_arguments('{"path": "a.txt", "content": ""')[0] == {"path": "a.txt", "content": ""}
    value, repair = load_json('{"a": {"b": 1, "c": ')
    assert value == {"a": {"b": 1}} and "dropped 'c'" in repair


# --------------------------------------------------------------------------- values written as text


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("\n42\n", {"type": "integer"}, 42),
        ("4.5", {"type": "number"}, 4.5),
        ("3", {"type": "number"}, 3),
        (" True ", {"type": "boolean"}, True),
        ("yes", {"type": "boolean"}, "yes"),  # not a boolean: left for the schema check to report
        ("12a", {"type": "integer"}, "12a"),
        ("null", {"type": ["string", "null"]}, None),
        ("null", {"type": "string"}, None),  # null whatever the type: Ollama; vLLM's Qwen3 shared test keeps the text
        ("42.5", {"type": ["string", "number"]}, 42.5),  # a union: the most specific type the text is
        ("hello", {"type": ["number", "string"]}, "hello"),
        ("   ", {"type": "string"}, "   "),
        ("{'a': (1, 2)}", {"type": "object"}, {"a": [1, 2]}),
        ("\"{'key': 'value'}\"", {"type": "object"}, {"key": "value"}),  # an object as a JSON string of it (vLLM)
        ('"[1, 2]"', {"type": "array"}, [1, 2]),
        ("42", {"type": "uint32"}, 42),  # a sized type name (vLLM's HY V4 test)
        ("2.5", {"type": "float32"}, 2.5),
        ('"plain"', {"type": "object"}, '"plain"'),
        ('["x"]', {"anyOf": [{"type": "array"}, {"type": "null"}]}, ["x"]),
        (
            "__import__('os').system('x')",
            {"type": "object"},
            "__import__('os').system('x')",
        ),  # never evaluated
        ("\n  line one\n  line two\n", {"type": "string"}, "  line one\n  line two"),
        ("  a.txt  ", {"type": "string"}, "a.txt"),
        # one line of code between the template's line breaks keeps its indent (llama.cpp's Qwen3.5 test); a value
        # whose closing tag is indented like it was laid out with the XML and is trimmed whole (sglang's)
        ('\n    print("hi")\n', {"type": "string"}, '    print("hi")'),
        ("\n        Dallas\n        ", {"type": "string"}, "Dallas"),
        # a block written right after the tag (no template line break) ends as written (llama.cpp's Seed-OSS test)
        ('def f():\n    return "x"\n', {"type": "string"}, 'def f():\n    return "x"\n'),
        ('{"k": 1}', None, {"k": 1}),
    ],
)
def test_typed_values(text, schema, value):
    assert typed_value(text, schema) == value


def test_tool_specs_give_the_schemas_that_type_the_values():
    spec = ToolSpec(name="search", description="", parameters=TOOLS["search"])
    text = (
        "<tool_call>\n<function=search>\n<parameter=query>\nx\n</parameter>\n<parameter=max_results>\n7\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    assert extract_tool_calls(text, [spec]).calls == [("search", {"query": "x", "max_results": 7})]
    assert extract_tool_calls(text, ["search"]).calls == [("search", {"query": "x", "max_results": "7"})]


@pytest.mark.parametrize("cuts", [[], [9], [20, 21, 22], list(range(1, 60))])
def test_a_strikethrough_the_answer_opened_keeps_its_closing_tag_while_a_turn_end_token_goes(cuts):
    """`</s>` ends some models' turns (GigaChat's); in prose after `<s>` it is HTML's strikethrough closing."""
    def shown(text: str) -> str:
        detector, events = CallDetector(tools()), []
        for a, b in zip([0, *cuts], [*[c for c in cuts if c < len(text)], len(text)], strict=False):
            events += detector.feed(text[a:b])
        events += detector.finish()
        return "".join(e.text for e in events if isinstance(e, TextDelta))

    assert shown("Write <s>old</s> new, then <s>this</s> too.") == "Write <s>old</s> new, then <s>this</s> too."
    assert shown("All done.</s>") == "All done."
