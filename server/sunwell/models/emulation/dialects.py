"""The call formats of today's open models, read from their text (issue 16): each family's markers and how the
text between them says a call.

- Mistral Small 3.2, Magistral, Devstral: `[TOOL_CALLS]name[ARGS]{...}` (`[CALL_ID]id` may precede `[ARGS]`);
  older Mistral: `[TOOL_CALLS] [{"name": ..., "arguments": ...}]`
- Llama 4: `<|python_start|>[f(a=1)]<|python_end|>`; LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`
- Qwen3-Coder: `<tool_call><function=f><parameter=a>\n1\n</parameter></function></tool_call>`
- GLM-4.5: `<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>`; iQuest-Coder V2: the same in `<iquestcoder_tool_call>` (`glm.py`)
- MiniMax: `<minimax:tool_call><invoke name="f"><parameter name="a">1</parameter></invoke></minimax:tool_call>`
- DeepSeek V3/R1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```<｜tool▁call▁end｜>…`;
  V3.1: `<｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`
- Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|>…`
- gpt-oss (harmony): `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>`; the `analysis`
  channel is thinking, the `final` channel the answer
- Granite: `<|tool_call|>[{"name": ..., "arguments": ...}]`; Qwen2.5-Coder: `<tools>{...}</tools>`; Llama 3: `<|python_tag|>{"name": ..., "parameters": ...}`
- Olmo 3: `<function_calls>f(a=1)\ng(b=2)</function_calls>`; Gemma: `call:f{a:<escape>x<escape>}` (`gemma.py`)
- Hunyuan: `<tool_calls><tool_call>f<tool_sep><arg_key>a</arg_key>…` (`hunyuan.py`); Step3: `<steptml:invoke>` (`step3.py`)
- DeepSeek V3.2 and V4 (DSML): `<｜DSML｜function_calls>` or `<｜DSML｜tool_calls>` around `<｜DSML｜invoke name="f">…`
  (`dsml.py`)

`span_scanner.SpanScanner` finds where such a span begins (`CLOSED`, `HARMONY`, `CONTROL`) and ends; the readers
here turn a span into calls. Arguments written as JSON go through `arguments.parse_arguments`, those written as bare
text through `arguments.typed_value` with the tool's schema; a Python-style list through `pythonic.python_calls`.
A name must look like one (`_NAME`): text between a family's markers that says no call is unreadable, not a call.
"""

from __future__ import annotations

import re

from sunwell.models.arguments import parse_arguments, typed_value
from sunwell.models.emulation import (
    dsml,
    families,
    glimmer,
    hunyuan,
    ifm,
    kimi_k3,
    minicpm,
    minimax_m3,
    step3,
)
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema
from sunwell.models.emulation.gemma import OPENERS as GEMMA_OPENERS
from sunwell.models.emulation.gemma import THOUGHT as GEMMA_THOUGHT
from sunwell.models.emulation.pythonic import python_calls

DEEPSEEK_CALL, DEEPSEEK_SEP, DEEPSEEK_CALL_END = (
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
)
KIMI_CALL, KIMI_ARGS, KIMI_CALL_END = (
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)

SEED_THINK = "<seed:think>"
CLOSED = {
    "<tool_call>": "</tool_call>",
    "<function=": "</function>",
    "<function name=": "</function>",
    "<tool name=": "</tool>",
    "<invoke name=": "</invoke>",
    "<minimax:tool_call>": "</minimax:tool_call>",
    "<tool_calls>": "</tool_calls>",  # MiniMax-M1: one JSON call per line; Hunyuan: its calls (`hunyuan.py`)
    "<tools>": "</tools>",  # Qwen2.5-Coder: a JSON call or a list of them
    "<|python_start|>": "<|python_end|>",
    "<|tool_call_start|>": "<|tool_call_end|>",
    "<｜tool▁calls▁begin｜>": "<｜tool▁calls▁end｜>",
    DEEPSEEK_CALL: DEEPSEEK_CALL_END,
    "<|tool_calls_section_begin|>": "<|tool_calls_section_end|>",
    "<|tool_call_section_begin|>": "<|tool_call_section_end|>",
    KIMI_CALL: KIMI_CALL_END,
    "<|tool▁calls▁begin|>": "<|tool▁calls▁end|>",  # DeepSeek's tokens spelled with ASCII bars
    "<|tool▁call▁begin|>": "<|tool▁call▁end|>",
    **dsml.BLOCKS,  # DeepSeek V3.2's and V4's blocks, and an invoke whose block's opener was left out
    "<function_calls>": "</function_calls>",  # Olmo 3
    "<TOOLCALL>": "</TOOLCALL>",  # Nemotron: a JSON list
    "<longcat_tool_call>": "</longcat_tool_call>",  # LongCat: GLM's form with its own tag names, or JSON
    "<iquestcoder_tool_call>": "</iquestcoder_tool_call>",  # iQuest-Coder V2: GLM's form in its own tags
    "<|tools_prefix|>": "<|tools_suffix|>",  # Apertus: a JSON list
    "<|action_start|><|plugin|>": "<|action_end|>",  # InternLM2: one JSON call (`parameters`)
    "<seed:tool_call>": "</seed:tool_call>",  # Seed-OSS: Qwen3-Coder's XML in its own tags
    **ifm.OPENERS,  # K2 Horizon, K2-V3: JSON or GLM's form in its own tags (ifm.py)
    **glimmer.OPENERS,  # Glimmer's ATEM calls (glimmer.py)
    SEED_THINK: "</seed:think>",  # Seed-OSS' thinking, written into the text (a call shown there is an example)
    **GEMMA_OPENERS,
    **hunyuan.OPENERS, **step3.OPENERS, **minicpm.OPENERS, **minimax_m3.OPENERS, **kimi_k3.OPENERS,  # each family's module says
    **families.CLOSED,
    **GEMMA_THOUGHT,  # Gemma 4's thought channel: thinking
}
"""Markers whose span ends at a closing marker (or, when it never comes, at the end of the text)."""
JSON_AFTER = ("<|python_tag|>", "[TOOL_CALLS]", "<|tool_call|>", *families.JSON_AFTER)
"""Markers followed by JSON (Llama 3, Mistral, Granite); Mistral's current form puts the name first."""
FUNCTOOLS = "functools"
"""Phi-4-mini: `functools[{...}, ...]`, a JSON list of calls after a word (not a control token): a marker only where
it stands as a word with `[{` after it, so `functools.partial` and `myfunctools[` stay prose."""
HARMONY = ("<|start|>", "<|channel|>")
"""gpt-oss: a message header, up to `<|message|>`, says what the message is."""
HARMONY_MESSAGE, HARMONY_CALL_END = "<|message|>", "<|call|>"
CONTROL = (
    "<|end|>",
    "[/TOOL_CALLS]",
    "<|tool_call_argument_begin|>",
    "<｜end▁of▁sentence｜>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
    "<|python_end|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁outputs▁begin｜>",  # DeepSeek quoting a tool's output: the markers go, the output stays
    "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>",
    "<｜tool▁outputs▁end｜>",
    "<end_function_call>",
    "<tool_call|>",
    "</tool_call>",  # left after a call whose opening tag was left out (vLLM's Qwen3-Coder test)
    "<|action_start|>",  # InternLM2's, when no `<|plugin|>` follows (what follows is read as it stands)
    "<|action_end|>",
    "<|tool_response>",  # Gemma 4 ending its turn for the tool's answer
    "<tool_response|>",
    *families.CONTROL,
    *kimi_k3.CONTROL,
    *glimmer.CONTROL,
    "<channel|>",  # Gemma 4 closing a thought channel the template opened
    "<turn|>",  # Gemma 4 ending its turn (after a call, where <tool_call|> belongs)
    "</｜DSML｜tool_calls>",  # after an invoke whose block's opener was left out (vLLM's V4 test)
    "<|close|>message<|sep|>",  # Kimi K3 closing its message (vLLM holds it back from the content)
    *(f"<|{t}|>" for t in ("tool▁calls▁end", "tool▁call▁end", "end▁of▁sentence", "tool▁outputs▁begin",
                           "tool▁output▁begin", "tool▁output▁end", "tool▁outputs▁end")),
)
"""Control tokens with no text of their own: dropped wherever they stand (a server may pass them through)."""

_DEEPSEEK_TOKENS = ("tool▁calls▁begin", "tool▁calls▁end", "tool▁call▁begin", "tool▁call▁end", "tool▁sep",
                    "tool▁outputs▁begin", "tool▁outputs▁end", "tool▁output▁begin", "tool▁output▁end", "end▁of▁sentence")
DEEPSEEK_ASCII = {f"<|{t}|>": f"<｜{t}｜>" for t in _DEEPSEEK_TOKENS}
"""DeepSeek's tokens as some templates spell them (Ollama's: ASCII bars), and as the model writes them."""
_NAME = re.compile(r"[^\W\d][\w.\-:/]*")
"""A tool's name: a word (any script), with `.`, `-`, `:` or `/` inside (`functions.f`, `mcp__srv__tool`)."""

MISTRAL_NAME = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*\w*\s*)?(?:\[ARGS\])?\s*")
_HARMONY_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_HARMONY_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_INVOKE = re.compile(r"""<invoke\s+name=["']?([^"'>]+)["']?\s*>(.*?)(?:</invoke>|\Z)""", re.DOTALL)
_XML_PARAM = re.compile(  # <parameter=path>, <parameter name="path">, <path> (the XML emulation format), MiniCPM5's
    # <param name="path">
    r"""<(?:parameter=([^<>\s](?:[^<>\n]*[^<>\s])?)|param(?:eter)?\s+name=["']?([^"'>]+)["']?(?:\s+[\w-]+=["'][^"']*["'])*|([\w.-]+))\s*>"""
    # a value ends at a closing tag the next tag follows (one inside the value is its text), or, when the model left
    # its closing tag out, where the next parameter or the function's close begins
    r"""(.*?)(?:</(?:param(?:eter)?|\3)\s*>(?=\s*(?:<|\Z))|(?=<parameter[=\s])|(?=</function>)|\Z)""",
    re.DOTALL,
)
_KIMI_ID = re.compile(r"(?:functions\.)?([^\s:]+):\d+")
_CLIENT_ID = re.compile(r"(?!functions\.)[\w@.\-]+")  # a counter, `call_3`, `toolu_01…`, a UUID: no `name:N`


def harmony_header(span: str) -> tuple[str | None, str | None, int] | None:
    """`(channel, recipient, where the body begins)` of a harmony message, or None while `<|message|>` is
    still to come. Of two channels the last counts, and `to=assistant` (the model addressing itself, a header it
    left for another: llama.cpp's test) names no recipient."""
    end = span.find(HARMONY_MESSAGE)
    if end < 0:
        return None
    header = span[:end]
    channel = channels[-1] if (channels := _HARMONY_CHANNEL.findall(header)) else None
    recipient = m[1] if (m := _HARMONY_RECIPIENT.search(header)) and m[1] != "assistant" else None
    return channel, recipient, end + len(HARMONY_MESSAGE)


def read_harmony(span: str) -> Extraction:
    """A call (a message to `functions.f`), thinking (the `analysis` channel), or a header with nothing to keep
    (the `final` and `commentary` channels' text streams on as the answer)."""
    channel, recipient, body_at = harmony_header(span) or (None, None, len(span))
    body = span[body_at:]
    if recipient:
        body = body.split(HARMONY_CALL_END, 1)[0]
        return json_call(recipient.removeprefix("functions."), body)
    if channel == "analysis":
        return Extraction(thinking=body.split("<|end|>", 1)[0])
    return Extraction()


def read_mistral(body: str) -> Extraction | None:
    """`name[ARGS]{...}` (`[TOOL_CALLS]` already taken off); None when no `[ARGS]`/JSON follows the name."""
    m = MISTRAL_NAME.match(body)
    rest = body[m.end() :] if m else ""
    if m is None or not rest.lstrip().startswith("{"):
        return None
    return json_call(m[1], rest)


def deepseek_spelling(text: str) -> str:
    for ascii_token, token in DEEPSEEK_ASCII.items():
        text = text.replace(ascii_token, token)
    return text


def read_deepseek(span: str) -> Extraction:
    """V3/R1: `function<sep>name\n```json\n{...}\n```` per call; V3.1: `name<sep>{...}`. A call without its
    separator, its name or a JSON object is unreadable (as in Ollama's and vLLM's readers)."""
    out = Extraction()
    for part in span.split(DEEPSEEK_CALL)[1:]:
        part = part.split(DEEPSEEK_CALL_END, 1)[0]
        kind, sep, rest = part.partition(DEEPSEEK_SEP)
        if not sep:
            return Extraction()
        if kind.strip() == "function":
            name, _, fenced = rest.partition("\n")
            m = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", fenced, re.DOTALL)
            if m is None:
                return Extraction()
            arguments = m[1]
        else:
            name, arguments = kind, rest
        if not _NAME.fullmatch(name.strip()) or parse_arguments(arguments)[0] is None:
            return Extraction()
        _merge(out, json_call(name.strip(), arguments))
    return out


def read_kimi(span: str, tools: Offered) -> Extraction:
    """`functions.f:0` (or `f:0`) names each call; a bare counter (`0`) or a client's call id that the history
    taught the model (`call_3`, `toolu_01…`: sglang's reader) names the one offered tool whose parameters the
    arguments fit, and none when two fit. A `functions.` id of another shape is no call (vLLM's reader)."""
    out = Extraction()
    for part in span.split(KIMI_CALL)[1:]:
        ident, _, arguments = part.split(KIMI_CALL_END, 1)[0].partition(KIMI_ARGS)
        if m := _KIMI_ID.fullmatch(ident.strip()):
            _merge(out, json_call(m[1], arguments))
        elif _CLIENT_ID.fullmatch(ident.strip()) and (name := _fitting_tool(arguments, tools)):
            _merge(out, json_call(name, arguments))
    return out


def _fitting_tool(arguments: str, tools: Offered) -> str | None:
    if len(tools) == 1:
        return next(iter(tools))
    parsed, _ = parse_arguments(arguments)
    if not parsed:
        return None
    fits = [name for name, schema in tools.items()  # every key declared, every required key given
            if set((schema or {}).get("required") or ()) <= set(parsed) <= set((schema or {}).get("properties") or {})]
    return fits[0] if len(fits) == 1 else None


def read_invokes(span: str, tools: Offered) -> Extraction | None:
    """MiniMax: one or more `<invoke name="f"><parameter name="a">1</parameter></invoke>`."""
    calls = [xml_call(m[1].strip(), m[2], tools).calls[0] for m in _INVOKE.finditer(span)]
    return Extraction(calls=calls) if calls else None


def read_python(body: str) -> Extraction | None:
    """Llama 4's and LFM2's Python-style list of calls."""
    calls = python_calls(body, (), any_name=True)
    return Extraction(calls=calls) if calls else None


def read_olmo(body: str) -> Extraction | None:
    """Olmo 3: one Python call per line between `<function_calls>` and `</function_calls>`."""
    calls: list[FoundCall] = []
    for line in body.strip().splitlines():  # a line that is no call is dropped; its siblings count (vLLM's test)
        calls += python_calls(line, (), any_name=True) or []
    return Extraction(calls=calls) if calls else None


def xml_call(name: str, body: str, tools: Offered) -> Extraction:
    """`<function=name>…</function>`, `<tool name="name">…</tool>`, `<name>…</name>`: JSON or XML parameters."""
    if body.strip().startswith("{"):
        return json_call(name, body)
    params = {}
    for m in _XML_PARAM.finditer(body):
        key = (m[1] or m[2] or m[3]).strip()
        cdata = minicpm.CDATA.fullmatch(m[4])  # MiniCPM5 wraps markup in CDATA
        params[key] = typed_value(cdata[1] if cdata else m[4], parameter_schema(tools, name, key))
    return Extraction(calls=[FoundCall(name, params)])


def json_call(name: str, text: str) -> Extraction:
    """One call whose arguments are JSON text (repaired if need be; kept raw if no object can be read, as the
    native path keeps them); none when the name is none."""
    if not _NAME.fullmatch(name):
        return Extraction()
    arguments, repairs = parse_arguments(text)
    if arguments is None:
        return Extraction(
            calls=[FoundCall(name, {}, text.strip())],
            repairs=[f"{name}: arguments are not a JSON object; passed on as raw"],
        )
    return Extraction(calls=[FoundCall(name, arguments)], repairs=[f"{name}: {r}" for r in repairs])


def _merge(into: Extraction, found: Extraction) -> None:
    into.calls += found.calls
    into.repairs += found.repairs
