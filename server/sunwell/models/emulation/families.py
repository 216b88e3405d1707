"""More families' call markers (issue 47, vLLM's parser tests): each a known body in its own wrapper, read here or
handed back to the common readers.

- Cohere Command R7B/A: `<|START_THINKING|>…<|END_THINKING|>` (thinking), `<|START_ACTION|>[{"tool_name": …,
  "parameters": …}]<|END_ACTION|>`, `<|START_RESPONSE|>…<|END_RESPONSE|>` or Command A's `<|START_TEXT|>…<|END_TEXT|>` (the answer;
  citations `<co>x</co: 0:[1]>` keep their text), `<|END_OF_TURN_TOKEN|>` the turn's end
- dots.llm: `<dots_function_call>` around MiniMax's `<invoke name=…>` or one JSON call
- GigaChat 3.5: DeepSeek V3.2's DSML spelled `｜GCML｜`; GigaChat 3: `<|function_call|>{…}` or
  `<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{…}`; Granite 20B FC: `<function_call> {…}` per call
- HyperCLOVA X SEED Think 14B: ` -> tool/function_call\n[{…}]`
- CWM: `<tool: function>\\nNAME REST\\n</tool>` (or `<tool: NAME REST </tool>`), REST JSON or a command line
- PLaMo 3: `<|plamo:begin_tool_requests:plamo|>` around requests, each a name and JSON arguments in their own tags
- Laguna: `<user>` where `<tool_call>` belongs (a fumbled tag), around GLM's `name\n<arg_key>…` or a JSON call
- Solar Open 2: `<|tool_call:start|>NAME\n<|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>…<|tool_call:end|>`,
  `<|think:start|>…<|think:end|>` its thinking
- Mistral's reasoning models (Magistral, Ministral 3 Reasoning): `[THINK]…[/THINK]` (thinking; a call written in it is
  an example, never a call: llama.cpp's and Ollama's tests)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from sunwell.models.arguments import parse_arguments, typed_value
from sunwell.models.emulation import ifm, kimi_k3
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

_ACTION, _DOTS, _GCML, _CWM = "<|START_ACTION|>", "<dots_function_call>", "<｜GCML｜tool_calls>", "<tool:"
_CITATION_END = "</co:"
_PLAMO, _PLAMO_END = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"
_SOLAR, _SOLAR_END = "<|tool_call:start|>", "<|tool_call:end|>"
USER = "<user>"
THINKING = {"<|START_THINKING|>": "<|END_THINKING|>", "<|think:start|>": "<|think:end|>", "[THINK]": "[/THINK]",
            "<mm:think>": "</mm:think>",  # MiniMax-M3
            **kimi_k3.THINKING,
            **ifm.THINKING}
"""Thinking written into the text (never a call, never the answer)."""
CLOSED = {
    _ACTION: "<|END_ACTION|>",
    _DOTS: "</dots_function_call>",
    _GCML: "</｜GCML｜tool_calls>",
    _CWM: "</tool>",
    _PLAMO: _PLAMO_END,
    _SOLAR: _SOLAR_END,
    USER: "</user>",
    _CITATION_END: ">",  # a citation's end tag, `</co: 0:[1,2]>`: no text of its own
    **THINKING,
}
JSON_AFTER = ("<function_call>", "<|function_call|>", "<|message_sep|>\n\nfunction call<|role_sep|>",
              "-> tool/function_call")  # HyperCLOVA X 14B's role header before its JSON list
CONTROL = ("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<co>", "</dots_function_call>", "<|im_end|>", "<|plugin|>",
           "<|message_sep|>", "<|role_sep|>", "</s>", "<|plamo:tag|>",
           "<|START_TEXT|>", "<|END_TEXT|>", "<|END_THINKING|>", "<|END_OF_TURN_TOKEN|>",
           "<|role_end|>", "<|CHATBOT_TOKEN|>")
"""Control tokens with no text of their own (turn ends, a section's end left over, Intern-S1's spaced `<|plugin|>`,
Command A's answer markers and an empty thought's end, Ling 3.0's `<|role_end|>`)."""
TURN_END = ("<|plamo:tag|>", "<|END_OF_TURN_TOKEN|>")
"""Tokens that end the model's turn: nothing after one is the reply (vLLM's PLaMo 3 test)."""

WORD_MARKERS = ("<tools>", USER)
"""Markers that are also words a reply may use: what they enclose that is no call stays the answer."""

_CWM_BLOCK = re.compile(r"<tool:\s*([^>\s]+)\s*>\s*(.*?)\s*</tool>\Z", re.DOTALL)
_CWM_SHORT = re.compile(r"<tool:\s*([^>\s]+)\s+(.*?)\s*</tool>\Z", re.DOTALL)
_SOLAR_ARG = re.compile(  # a key runs into no marker; a value ends at its end tag or where the next one begins
    r"<\|tool_arg:start\|>((?:(?!<\|).)*?)<\|tool_arg:value\|>(.*?)"
    r"(?:<\|tool_arg:end\|>|(?=<\|tool_arg:start\|>)|(?=<\|tool_call:end\|>)|\Z)", re.DOTALL)
_PLAMO_CALL = re.compile(
    r"<\|plamo:begin_tool_request:plamo\|><\|plamo:begin_tool_name:plamo\|>(.*?)<\|plamo:end_tool_name:plamo\|>"
    r"<\|plamo:begin_tool_arguments:plamo\|><\|plamo:constrain\|>json<\|plamo:msg\|>(.*?)"
    r"<\|plamo:end_tool_arguments:plamo\|><\|plamo:end_tool_request:plamo\|>", re.DOTALL)


def opens_call(span: str, tools: Offered) -> bool:
    """Whether a span the reply ended inside opens a call: `<tools>` only before JSON, `<user>` before JSON or an
    offered tool's name; any other marker always."""
    marker = next((m for m in WORD_MARKERS if span.startswith(m)), None)
    if marker is None:
        return True
    rest = span[len(marker):].lstrip()
    return rest[:1] in ("{", "[") or (marker == USER and re.split(r"\s|<", rest, maxsplit=1)[0] in tools)


EMPTY_THINKING_ENDS = ("</think>", "<|END_THINKING|>", "</mm:think>")
"""A reply that begins with one closed the thinking its template opened, empty: the tag has nothing to show."""


def empty_thinking_end(buf: str, final: bool) -> int | None:
    """How much of the reply's start is such a tag (whitespace before it too): -1 while undecided, None if none."""
    stripped = buf.lstrip()
    for tag in EMPTY_THINKING_ENDS:
        if stripped.startswith(tag):
            return len(buf) - len(stripped) + len(tag)
        if not final and tag.startswith(stripped):
            return -1
    return None


def thinking(span: str) -> Extraction | None:
    """Thinking in a family's own markers; Cohere's citation tags (`<co>x</co: 0:[1]>`) keep only their text."""
    opener = next((o for o in THINKING if span.startswith(o)), None)
    if opener is None:
        return None
    return Extraction(thinking=re.sub(r"<co>|</co:[^>]*>", "", span[len(opener):].removesuffix(THINKING[opener])))


def read(span: str, tools: Offered, enclosed: Callable[[str], Extraction | None],
         json_value: Callable[[str], Extraction | None]) -> Extraction | None:
    """The calls in a span that opens with one of these markers; `enclosed` reads text between a family's markers
    (JSON, `<invoke>`, DSML) and `json_value` the JSON after a marker, as the common readers do."""
    if span.startswith(_CITATION_END):
        return Extraction()
    if span.startswith(_GCML):
        return enclosed(span.replace("｜GCML｜", "｜DSML｜"))  # DeepSeek V4's wrapper, read as such
    for opener in (_ACTION, _DOTS):
        if span.startswith(opener):
            return enclosed(span[len(opener):].removesuffix(CLOSED[opener]))
    if span.startswith(_CWM):
        return _cwm(span, tools)
    if span.startswith(_SOLAR):
        calls = [c for part in span.split(_SOLAR)[1:] if (c := _solar_call(part.removesuffix(_SOLAR_END), tools))]
        return Extraction(calls=calls) if calls else None
    if span.startswith(_PLAMO):
        calls = [_json_call(name, arguments) for name, arguments in _PLAMO_CALL.findall(span)]
        return Extraction(calls=calls) if calls and None not in calls else None
    marker = next(m for m in JSON_AFTER if span.startswith(m))
    body = span[len(marker):]
    return json_value(body) if body.strip() else Extraction()


def _cwm(span: str, tools: Offered) -> Extraction | None:
    """The first word of the block names the tool (the short form's label does); the rest is its arguments as JSON,
    or else the command line the tool's one string parameter (`command`) takes."""
    if m := _CWM_BLOCK.match(span):
        first, _, more = m[2].strip().partition("\n")
        name, _, rest = first.strip().partition(" ")
        rest = "\n".join(p for p in (rest.strip(), more.strip()) if p)
    elif m := _CWM_SHORT.match(span):
        name, rest = m[1], m[2]
    else:
        return None
    if not re.fullmatch(r"[^\W\d][\w.\-]*", name):
        return None
    if rest.lstrip()[:1] in ("{", "["):
        parsed, _ = parse_arguments(rest)
        if isinstance(parsed, dict):
            return Extraction(calls=[FoundCall(name, parsed)])
    properties = (tools.get(name) or {}).get("properties") or {}
    strings = [k for k, v in properties.items() if isinstance(v, dict) and v.get("type") == "string"]
    key = "command" if "command" in properties or len(strings) != 1 else strings[0]
    return Extraction(calls=[FoundCall(name, {key: rest})])


def _json_call(name: str, arguments: str) -> FoundCall | None:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return None
    return FoundCall(name.strip(), parsed) if isinstance(parsed, dict) and name.strip() else None


def _solar_call(part: str, tools: Offered) -> FoundCall | None:
    """One call (a start marker with no end before the next start closes the one before, vLLM's test): the name is
    the rest of the start line; a block whose name runs into a marker is none. A repeated key keeps its first value."""
    name, newline, body = part.partition("\n")
    if not newline or not re.fullmatch(r"[^\W\d][\w.\-]*", name.strip()):
        return None
    arguments: dict = {}
    for key, value in _SOLAR_ARG.findall(body):
        arguments.setdefault(key, _solar_value(value, parameter_schema(tools, name.strip(), key)))
    return FoundCall(name.strip(), arguments)


def _solar_value(text: str, schema: dict | None) -> object:
    """A string parameter's value as written (`null` too); other types as the schema says, `1`/`0` for a boolean."""
    kinds = schema.get("type") if isinstance(schema, dict) else None
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if schema is None or kinds == ["string"]:
        return text
    if "boolean" in kinds and text.strip() in ("1", "0"):
        return text.strip() == "1"
    return typed_value(text, schema)
