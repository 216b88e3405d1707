"""The normalizer: every way small models write a tool call, broken JSON, and prose that must stay prose."""

from __future__ import annotations

import json

import pytest

from sunwell.models.base import Notice, TextDelta, ThinkingDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CallDetector
from sunwell.models.emulation.normalize import FoundCall
from text_calls import extract_tool_calls

TOOLS = {"read_file", "list_files", "write_file", "calculator"}
READ_A = FoundCall("read_file", {"path": "a.txt"})


def _read_in_chunks(text: str, size: int, tools=TOOLS) -> list:
    """What a detector offered `tools` gives for `text` streamed `size` characters at a time."""
    detector = CallDetector(tools)
    return [e for i in range(0, len(text), size) for e in detector.feed(text[i : i + size])] + detector.finish()


def _reads_as(text: str, calls: list, shown: str) -> None:
    """`text`, offered read_file, gives `calls` and shows `shown` whole, and shows `shown` streamed in small chunks."""
    out = extract_tool_calls(text, {"read_file": {"type": "object", "properties": {"path": {"type": "string"}}}})
    assert [(c.name, c.arguments) for c in out.calls] == calls
    assert out.remaining_text == shown
    for size in (1, 3):
        events = _read_in_chunks(text, size, {"read_file": {}})
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == shown, size


# Each text holds exactly one call, read_file(path="a.txt"), and nothing else.
ONE_CALL_FORMS = {
    "fenced json": '```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```',
    "fenced tool_call": '```tool_call\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```',
    "plain fence": '```\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```',
    "bare object": '{"name": "read_file", "arguments": {"path": "a.txt"}}',
    "tool/args keys": '{"tool": "read_file", "args": {"path": "a.txt"}}',
    "function/parameters keys": '{"function": "read_file", "parameters": {"path": "a.txt"}}',
    "tool_name/input keys": '{"tool_name": "read_file", "input": {"path": "a.txt"}}',
    "params key": '{"name": "read_file", "params": {"path": "a.txt"}}',
    "openai function object": '{"type": "function", "function": {"name": "read_file", '
                              '"arguments": {"path": "a.txt"}}}',
    "openai tool_calls list": '{"tool_calls": [{"id": "1", "function": {"name": "read_file", '
                              '"arguments": {"path": "a.txt"}}}]}',
    "hermes": '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
    "hermes unclosed": '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}',
    "llama python_tag": '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.txt"}}',
    "llama function tag": '<function=read_file>{"path": "a.txt"}</function>',
    "mistral": '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.txt"}}]',
    "json list": '[{"name": "read_file", "arguments": {"path": "a.txt"}}]',
    "xml tool element": '<tool name="read_file"><path>a.txt</path></tool>',
    "xml named element": "<read_file>\n<path>a.txt</path>\n</read_file>",
    "qwen3-coder xml": "<tool_call>\n<function=read_file>\n<parameter=path>\na.txt\n</parameter>\n"
                       "</function>\n</tool_call>",
    "fenced xml": "```xml\n<read_file>\n  <path>a.txt</path>\n</read_file>\n```",
}


@pytest.mark.parametrize("form", ONE_CALL_FORMS)
def test_each_form_gives_the_call(form):
    out = extract_tool_calls(ONE_CALL_FORMS[form], TOOLS)
    assert out.calls == [READ_A]
    assert out.remaining_text.strip() == ""


@pytest.mark.parametrize(("text", "repair"), [
    ('{"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}', "decoded arguments given as a JSON"),
    ('{"name": "read_file", "arguments": {"arguments": {"path": "a.txt"}}}', "unwrapped doubly wrapped"),
    ('{"name": "read_file", "args": {"parameters": {"path": "a.txt"}}}', "unwrapped doubly wrapped"),
    ('{"name": "read_file", "path": "a.txt"}', "took the arguments from the top level"),
    ('{"read_file": {"path": "a.txt"}}', "read the tool name from the object's key"),
])
def test_shape_repairs_are_listed(text, repair):
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [READ_A]
    assert any(repair in r for r in out.repairs), out.repairs


BROKEN = {
    "trailing commas": '{"name": "read_file", "arguments": {"path": "a.txt",},}',
    "single quotes": "{'name': 'read_file', 'arguments': {'path': 'a.txt'}}",
    "unquoted keys": '{name: "read_file", arguments: {path: "a.txt"}}',
    "missing closing brace in its markers": '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}</tool_call>',
    "missing both braces in a fence": '```json\n{"name": "read_file", "arguments": {"path": "a.txt"\n```',
    "broken arguments string": '{"name": "read_file", "arguments": "{\'path\': \'a.txt\'"}',
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_json_is_repaired_and_the_repair_listed(case):
    out = extract_tool_calls(BROKEN[case], TOOLS)
    assert out.calls == [READ_A]
    assert any("repaired malformed JSON" in r for r in out.repairs), out.repairs
    assert all(r.startswith("read_file: ") for r in out.repairs)


def test_python_literals_are_repaired():
    text = '{"name": "list_files", "arguments": {"path": ".", "recursive": True, "x": None}}'
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [FoundCall("list_files", {"path": ".", "recursive": True, "x": None})]
    assert out.repairs


def test_well_formed_calls_list_no_repairs():
    assert extract_tool_calls(ONE_CALL_FORMS["fenced json"], TOOLS).repairs == []


def test_several_calls_in_one_message_keep_their_order():
    text = (
        "First I'll look around.\n"
        '```json\n{"name": "list_files", "arguments": {"path": "src"}}\n```\n'
        'Then: {"name": "read_file", "arguments": {"path": "a.txt"}}\n'
        '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>\n'
        '```json\n{"name": "write_file", "arguments": {"path": "b"}}\n'
        '{"name": "read_file", "arguments": {"path": "b"}}\n```'
    )
    out = extract_tool_calls(text, TOOLS)
    assert [c.name for c in out.calls] == ["list_files", "read_file", "calculator", "write_file", "read_file"]
    assert out.remaining_text == "First I'll look around.\n\nThen: \n\n"


def test_text_around_a_call_is_kept_exactly():
    text = 'Let me check. {"name": "read_file", "arguments": {"path": "a.txt"}} Then answer.'
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [READ_A]
    assert out.remaining_text == "Let me check.  Then answer."


PROSE = [
    'A user record looks like {"name": "Ada", "age": 36}, with "name" first.',
    'The schema: {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {}}}}',
    '```json\n{"name": "my-package", "version": "1.0.0", "scripts": {"test": "pytest"}}\n```',
    '```python\nprint({"name": "read_file", "arguments": {"path": "a.txt"}})\n```',
    "function f(x) { return x + 1 } and arrays [1, 2] and [a link](http://x) and <b>bold</b>, 1 < 2",
    "Use the `read_file` tool to read files and list_files for directories.",
    '{"name": "unknown", "arguments": {}, "description": "an example, not a call"}',
    "A lone brace { that never closes, and ``` a fence that never closes",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_with_json_stays_text(text):
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == []
    assert out.remaining_text == text
    assert out.repairs == []


def near_misses(text: str) -> tuple[list, list[FoundCall]]:
    """The calls a reply holds, and those the emulating loop is still given for its `unknown_tool` answer."""
    loop = CallDetector(TOOLS, unknown_as_calls=True)
    given = [FoundCall(e.name, e.parsed) for e in loop.feed(text) + loop.finish() if isinstance(e, ToolCallDone)]
    return extract_tool_calls(text, TOOLS).calls, given


def test_near_miss_with_a_file_name_as_tool_name_is_answered_unknown_tool():
    """Qwen's typical failure: a call shape, but the name is no tool. No call of the reply (issue 47: the parsers'
    tests say so, nothing runs); emulating, the loop answers unknown_tool so the model can correct itself."""
    calls, given = near_misses('{"name": "a.txt", "arguments": {"path": "a.txt"}}')
    assert (calls, given) == ([], [FoundCall("a.txt", {"path": "a.txt"})])


def test_near_miss_needs_a_call_shape():
    assert near_misses('{"name": "a.txt"}') == ([], [])
    assert near_misses('{"name": "x", "arguments": {}, "note": "y"}') == ([], [])
    # Inside an explicit call marker, extra keys do not matter.
    assert near_misses('<tool_call>{"name": "x", "arguments": {}, "note": "y"}</tool_call>') == ([], [FoundCall("x", {})])


def test_calls_are_name_and_arguments_pairs():
    [(name, arguments)] = extract_tool_calls(ONE_CALL_FORMS["bare object"], TOOLS).calls
    assert (name, arguments) == ("read_file", {"path": "a.txt"})
    assert READ_A.raw is None


def test_arguments_given_as_null_or_empty_are_an_empty_object():
    for text in ('{"name": "list_files", "arguments": null}', '{"name": "list_files", "arguments": {}}'):
        assert extract_tool_calls(text, TOOLS).calls == [FoundCall("list_files", {})]


@pytest.mark.parametrize("text", ['{"name": "list_files"}', '{"name": "read_file", "arguments": "a.txt"}',
                                  '[{"name": "read_file", "arguments": 3}]',
                                  'functools[{"name": "read_file", "arguments": "a.txt"}]'])
def test_a_call_object_without_arguments_that_are_an_object_is_text_and_a_notice(text):
    """vLLM's Granite, Phi-4-mini and InternLM2 tests call it malformed: no call, the text stays, the user is told."""
    detector = CallDetector(TOOLS)
    events = detector.feed(text) + detector.finish()
    assert not [e for e in events if isinstance(e, ToolCallDone)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert [e.code for e in events if isinstance(e, Notice)] == ["tool_call_unreadable"]


def test_hermes_arguments_that_are_not_an_object_are_kept_raw():
    """vLLM's Hermes tests pass a string as arguments on as a call: the loop answers it with a validation error."""
    out = extract_tool_calls('<tool_call>{"name": "read_file", "arguments": "a.txt"}</tool_call>', TOOLS)
    assert out.calls == [("read_file", {})]
    assert out.calls[0].raw == "a.txt"
    assert "not a JSON object" in out.repairs[0]


def test_a_list_keeps_its_whole_calls_and_tells_of_the_malformed_one():
    text = '[{"name": "read_file", "arguments": {"path": "a.txt"}}, {"name": "list_files"}]'
    detector = CallDetector(TOOLS)
    events = detector.feed(text) + detector.finish()
    assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [("read_file", {"path": "a.txt"})]
    assert [e.code for e in events if isinstance(e, Notice)] == ["tool_call_unreadable"]


PHI4 = 'functools[{"name": "read_file", "arguments": {"path": "a.txt"}}]'


@pytest.mark.parametrize(("text", "calls", "shown"), [
    (f"Reading.\n{PHI4}\nDone.", [READ_A], "Reading.\n\nDone."),
    (f"Reading. {PHI4}", [READ_A], "Reading. "),
    (f"my{PHI4}", [READ_A], "myfunctools"),  # inside a word no marker: the bare list is a call of its own
    ("Use functools.partial(f, 1) or functools[0].", [], "Use functools.partial(f, 1) or functools[0]."),
    ("functools[] is empty; functools[ x ] too", [], "functools[] is empty; functools[ x ] too"),
])
def test_phi4_functools_is_a_marker_only_as_a_word_before_a_list_of_objects(text, calls, shown):
    """Phi-4-mini's marker is a word, found by the scanner wherever a word may begin, in any chunking."""
    for size in (1, 2, 5, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == calls, size
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == shown, size


def test_xml_values_keep_block_content_and_trim_scalars():
    text = "<write_file>\n<path> notes.md </path>\n<content>\n# Title\n\n  indented\n</content>\n"
    text += "</write_file>"
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [FoundCall("write_file", {"path": "notes.md", "content": "# Title\n\n  indented"})]


def test_a_fence_inside_a_json_string_does_not_end_the_block():
    content = "# Readme\n```sh\nmake\n```\n"
    arguments = json.dumps({"path": "README.md", "content": content})
    text = f'```json\n{{"name": "write_file", "arguments": {arguments}}}\n```'
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [FoundCall("write_file", {"path": "README.md", "content": content})]
    assert out.remaining_text == ""


def test_unknown_xml_elements_are_text():
    text = "<div><path>a.txt</path></div>"
    assert extract_tool_calls(text, TOOLS).remaining_text == text


def test_seed_oss_thinking_is_thinking_and_a_call_shown_in_it_no_call():
    call = "<seed:tool_call>\n<function=read_file>\n<parameter=path>a.txt</parameter>\n</function>\n</seed:tool_call>"
    text = f"<seed:think>The format is {call.replace('a.txt', 'b.txt')}. Fine.</seed:think>{call}"
    for size in (1, 7, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], size
        assert "b.txt" in "".join(e.text for e in events if isinstance(e, ThinkingDelta)), size
        assert not [e for e in events if isinstance(e, TextDelta | Notice)], size


def test_mistral_think_block_is_thinking_and_a_call_shown_in_it_no_call():
    call = '[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}'
    text = f"[THINK]Maybe {call.replace('a.txt', 'b.txt')} or not[/THINK]{call}"
    for size in (1, 5, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], size
        assert "b.txt" in "".join(e.text for e in events if isinstance(e, ThinkingDelta)), size
        assert not [e for e in events if isinstance(e, TextDelta | Notice)], size


@pytest.mark.parametrize(
    ("text", "calls", "shown"),
    [
        ('Action:\n```json\n[{"tool_name": "read_file", "parameters": {"path": "a.txt"}}]\n```', [READ_A], ""),
        ("Action:\n```python\nprint(1)\n```", [], "Action:\n```python\nprint(1)\n```"),
        ("Action: none needed.", [], "Action: none needed."),
    ],
)
def test_command_r_plus_action_header_goes_with_its_call_fence(text, calls, shown):
    for size in (1, 3, len(text)):
        events = _read_in_chunks(text, size)
        assert [FoundCall(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == calls, size
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == shown, size


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("</think>\n\nHello", "\n\nHello"),  # thinking the template opened, closed empty
        ("\n</think>Hello", "Hello"),
        ("<|END_THINKING|><|START_TEXT|>Hello<|END_TEXT|>", "Hello"),
        ("Hello </think> there", "Hello </think> there"),  # only at the reply's start
        ("</thinking is fun", "</thinking is fun"),
    ],
)
def test_a_reply_that_begins_by_closing_empty_thinking_drops_the_tag(text, shown):
    for size in (1, 2, len(text)):
        events = _read_in_chunks(text, size)
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == shown, size


def test_gemma_thought_channel_opened_twice_is_opened_once():
    text = "<|channel><|channel>thought\n<channel|>Hello"
    for size in (1, 4, len(text)):
        events = _read_in_chunks(text, size)
        assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "", size
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello", size


def test_a_reply_that_ends_in_seed_oss_thinking_is_thinking_not_a_call_cut_off():
    detector = CallDetector(TOOLS)
    events = detector.feed("<seed:think>Let me see") + detector.finish()
    assert [type(e).__name__ for e in events] == ["ThinkingDelta"]


def test_gemma4_thought_channel_is_thinking_and_a_bare_call_after_it_a_call():
    text = '<|channel>thought\nI should read it.\n<channel|>call:read_file{path:<|"|>a.txt<|"|>}'
    for size in (1, 5, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], size
        assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)).strip() == "I should read it.", size
        assert not "".join(e.text for e in events if isinstance(e, TextDelta)).strip(), size


@pytest.mark.parametrize("text", [
    'Then run call:read_file{path:<|"|>a.txt<|"|>} yourself.',  # inside a sentence: a mention
    'call:read_file{path:<|"|>a.txt<|"|>} reads it.',  # prose after it on its line: a mention too
    'call:delete_all{path:<|"|>a.txt<|"|>}',  # not an offered tool
    "call:read_file{path:",  # never closed
])
def test_a_bare_gemma_call_is_read_only_at_a_line_start_for_an_offered_tool_whole(text):
    for size in (1, 4, len(text)):
        events = _read_in_chunks(text, size)
        assert not [e for e in events if isinstance(e, ToolCallDone)], (text, size)
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text, (text, size)


def test_a_gemma_key_in_string_delimiters_is_the_key():
    text = '<|tool_call>call:read_file{<|"|>path<|"|>:<|"|>a.txt<|"|>}<tool_call|>'
    assert extract_tool_calls(text, TOOLS).calls == [READ_A]


@pytest.mark.parametrize("text", ['<tool_call>read_file{path:<|"|>a.txt<|"|>}</tool_call>',
                                  '<tool_call>call:read_file{path:<|"|>a.txt<|"|>}</tool_call>'])
def test_gemma4_call_in_plain_tool_call_tags_is_read(text):
    """The fallback vLLM's Gemma 4 parser reads when the model regresses to `<tool_call>` (its module docstring)."""
    for size in (1, 6, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], size
        assert not "".join(e.text for e in events if isinstance(e, TextDelta)), size


def test_gemma4_end_of_turn_after_a_bare_call_is_no_text():
    text = 'call:read_file{path:<|"|>a.txt<|"|>}<turn|>'
    for size in (1, 5, len(text)):
        events = _read_in_chunks(text, size)
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], size
        assert not "".join(e.text for e in events if isinstance(e, TextDelta)), size


@pytest.mark.parametrize(
    ("text", "calls", "shown"),
    [
        ('Done: <tools>{"name": "read_file", "arguments": {"path": "a.txt"}}</tools>', [("read_file", {"path": "a.txt"})],
         "Done: "),
        ("Open the <tools> section of the config.", [], "Open the <tools> section of the config."),
        ("The file lists <tools>hammer, saw</tools> and more.", [], "The file lists <tools>hammer, saw</tools> and more."),
    ],
)
def test_qwen25_coder_tools_is_a_call_marker_only_around_a_call(text, calls, shown):
    """`<tools>` (Qwen2.5-Coder) is also a word a reply may use: what it encloses that is no call, or prose after it
    that never closes it, stays the answer, whole, however the text streams."""
    _reads_as(text, calls, shown)


def test_minimax_m3_namespace_after_a_word_is_a_marker_in_any_chunking():
    """MiniMax-M3's namespace begins with `]`: a marker even where it runs on from a word, wherever a chunk ends."""
    ns = "]<]minimax[>["
    text = f'Done{ns}<tool_call>\n{ns}<invoke name="read_file">{ns}<path>a.txt{ns}</path>{ns}</invoke>\n{ns}</tool_call>'
    for cut in range(1, len(text)):
        detector = CallDetector(TOOLS)
        events = detector.feed(text[:cut]) + detector.feed(text[cut:]) + detector.finish()
        assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [READ_A], cut
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Done", cut


def test_minimax_m3_union_alternatives_with_a_list_of_types_are_read():
    """A union's alternative may name several types (`["string", "null"]`, as MCP servers' schemas do): the string
    among them makes the union a string; a boolean schema is no object to read types from; none breaks the read."""
    ns = "]<]minimax[>["
    numbers = {"type": "array", "items": {"type": "integer"}}
    schema = {"type": "object", "properties": {"q": {"anyOf": [{"type": ["string", "null"]}, {"type": "object"}]},
                                               "n": {"oneOf": [{"type": ["integer", "null"]}, numbers]},
                                               "any": True}}  # JSON Schema's "anything"
    text = (f'{ns}<tool_call>\n{ns}<invoke name="find">{ns}<q>{ns}<b>hi{ns}</b>{ns}</q>{ns}<n>{ns}<item>1{ns}</item>'
            f"{ns}</n>{ns}<any>{ns}<k>v{ns}</k>{ns}</any>{ns}</invoke>\n{ns}</tool_call>")
    [call] = extract_tool_calls(text, {"find": schema}).calls
    assert call.arguments == {"q": f"{ns}<b>hi{ns}</b>", "n": [1], "any": {"k": "v"}}


def test_a_minicpm5_cdata_value_whose_closing_tag_was_left_out_is_unwrapped():
    """MiniCPM5 wraps markup in CDATA; a value whose `</param>` the model left out is read by the shared XML reader,
    which unwraps it as MiniCPM5's own reader does."""
    text = '<function name="read_file"><param name="path"><![CDATA[a.txt]]></function>'
    assert extract_tool_calls(text, TOOLS).calls == [READ_A]


def test_a_hunyuan_block_with_text_between_its_pairs_is_no_call():
    """Hunyuan's block is read strictly (vLLM's HY V4 reader): stray text between two arguments makes it unreadable,
    however far a value could stretch to reach a later closing tag."""
    text = ("<tool_calls><tool_call>read_file<arg_key>path</arg_key><arg_value>a.txt</arg_value>JUNK"
            "<arg_key>mode</arg_key><arg_value>r</arg_value></tool_call></tool_calls>")
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [] and out.remaining_text == ""
    good = text.replace("JUNK", "")
    assert [(c.name, c.arguments) for c in extract_tool_calls(good, TOOLS).calls] == [("read_file", {"path": "a.txt", "mode": "r"})]


@pytest.mark.parametrize(
    ("text", "calls", "shown"),
    [
        ("Reading it.\n<user>read_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n</user>",
         [("read_file", {"path": "a.txt"})], "Reading it.\n"),
        ('<user>{"name": "read_file", "arguments": {"path": "a.txt"}}</user>', [("read_file", {"path": "a.txt"})], ""),
        ("Greet the <user> by name.", [], "Greet the <user> by name."),
        ("The field <user>bob</user> is set.", [], "The field <user>bob</user> is set."),
        ("<user>write_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n</user>", [], ""),
    ],
)
def test_laguna_user_tag_is_a_call_marker_only_around_a_call_of_an_offered_tool(text, calls, shown):
    """Laguna sometimes writes `<user>` where `<tool_call>` belongs (Ollama's parser reads it): a call when it
    encloses GLM's body or a JSON call (GLM's body naming a tool not offered is no call either: a notice says so);
    a word, with what it encloses, anywhere else."""
    _reads_as(text, calls, shown)


@pytest.mark.parametrize(
    ("text", "calls", "shown"),
    [
        ((' to=read<|message|><atem:function_calls>\n<atem:invoke name="read_file">\n<atem:parameter name="path">a.txt'
          "</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>"), [("read_file", {"path": "a.txt"})], ""),
        (" to=self<|message|>Check it.<|eom|><|start|>assistant to=user<|message|>Done.<|eot|>", [], "Done."),
        ("to be, or not to be", [], "to be, or not to be"),
        (" to the point: set x to=5 <|message|> in the config.", [], " to the point: set x to=5 <|message|> in the config."),
    ],
)
def test_glimmer_headers_open_a_reply_only_where_they_are_one(text, calls, shown):
    """Glimmer's reply opens with its message header (` to=RECIPIENT<|message|>`): the header goes, a message to
    `self` is thinking, an ATEM block is a call; prose that merely begins `to` (or holds `to=` later) stays whole,
    however the text streams."""
    _reads_as(text, calls, shown)


@pytest.mark.parametrize(
    "text",
    [
        ('<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "set_alarm", "parameters": {"time": 15:30}},'
         '    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Oslo"}}\n]<|END_ACTION|>'),
        ('<tool_call>[{"name": "set_alarm", "arguments": {"time": 15:30}}, '
         '{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>'),
    ],
)
def test_a_broken_call_in_a_list_spoils_no_sibling(text):
    """Ollama's Cohere test: one call of a list whose JSON is broken (`15:30` unquoted) is no call, and its well-formed
    sibling is still one; a repair of the whole list ran the second call into the first one's arguments."""
    tools = {"set_alarm": {"type": "object", "properties": {"time": {"type": "string"}}},
             "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}
    out = extract_tool_calls(text, tools)
    assert [(c.name, c.arguments) for c in out.calls] == [("get_weather", {"city": "Oslo"})]
    assert out.remaining_text == ""
    for size in (1, 7):
        events = _read_in_chunks(text, size, tools)
        assert [e.name for e in events if isinstance(e, ToolCallDone)] == ["get_weather"]


@pytest.mark.parametrize(
    ("text", "calls", "shown"),
    [
        ('Action: ```json\n[{"tool_name": "read_file", "parameters": {"path": "a.txt"}}]\n```', [("read_file", {"path": "a.txt"})], ""),
        ("Action: none needed, the file is fine.", [], "Action: none needed, the file is fine."),
        ("Next Action: ```python\nprint(1)\n```", [], "Next Action: ```python\nprint(1)\n```"),
        ("Transaction: done.", [], "Transaction: done."),
    ],
)
def test_command_r_action_label_goes_with_its_call_fence_only(text, calls, shown):
    """Command R writes `Action: ```json [...]```` for its calls (Ollama's parser): the label goes with the call; as a
    word before anything else (or inside another word) it stays the answer, however the text streams."""
    _reads_as(text, calls, shown)
