"""Tool calls written as text: where they are, what they say, and what had to be repaired to read them.

Small local models rarely return native `tool_calls`; they write the call into their text, in whatever format
their training favoured (models/README.md). `span_scanner.SpanScanner` splits text into prose and call candidates
(fenced blocks, bare JSON, Python-style calls on lines of their own, the XML emulation format, and each open-model
family's markers, `dialects.py`); `parse_span` reads one candidate, its arguments with `arguments.parse_arguments`.
A reply that is nothing but Python calls (`read_file(path="a.txt")`) is read by `pythonic.py`. The streaming
`CallDetector` (`call_detector.py`) settles each span it scans with `settle`, so a text yields the same calls
however it was chunked.

What counts as a call (a JSON value inside a candidate):
- an object naming an offered tool under `name`/`tool`/`tool_name`/`function`, or OpenAI's own shapes
  (`{"function": {"name": …}}`, `{"tool_calls": […]}`); arguments come from `arguments`/`args`/`parameters`/
  `input`/`params`, else from the object's other keys;
- an object whose only key is an offered tool's name (`{"read_file": {"path": "a.txt"}}`);
- a near-miss: a call-shaped object (a name key with a string and an arguments key) naming a tool that is not
  offered (a typical Qwen failure puts a file name where the tool name belongs). In bare prose JSON it must have
  no keys besides name, arguments, `id` and `type`, its arguments must not be a JSON Schema (a tool *definition*
  is not a call) and must be ones an offered tool takes; inside an explicit call marker (`<tool_call>`,
  `[TOOL_CALLS]`, `<|python_tag|>`, a ```tool_call fence) those restrictions are lifted.
Anything else, e.g. `{"name": "Ada", "age": 3}` in an answer, stays text; so does code in backticks (`{...}`, or
```json …``` written inside a sentence): an example being explained is no call.

What is never a call (issue 47), each said to the user in a notice and never run:
- a call the reply ended inside (a `partial` step) whose JSON or closing marker never came, whether the reply was
  cut off by length or just ended there: the complete calls before it still count;
- text between a family's call markers that says no call (`<tool_call>abc</tool_call>`): it is no answer either;
- a call of a tool that was not offered (`unknown`): what the parsers' own tests expect, and nothing runs; a name
  the loop would respell into an offered one (`Read_File`) is offered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from sunwell.models.arguments import load_json, parse_arguments
from sunwell.models.emulation import (
    dialects,
    dsml,
    families,
    gemma,
    glimmer,
    glm,
    hunyuan,
    ifm,
    kimi_k3,
    minicpm,
    minimax_m3,
    qwen3_xml,
    span_scanner,
    step3,
)
from sunwell.models.emulation.between_calls import Echo, Separator
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, offered, schema_typed
from sunwell.models.emulation.gemma import OPENERS as GEMMA_OPENERS
from sunwell.models.emulation.gemma import read_gemma
from sunwell.models.emulation.pythonic import python_calls
from sunwell.models.emulation.span_scanner import CALL_FENCES, CALLISH, FENCE_OPEN, PY_LINE, Kind, SpanScanner
from sunwell.models.emulation.unfinished import complete_part, cut_name, sibling_items
from sunwell.vocabulary import canonical_tool_name

__all__ = ["Echo", "Extraction", "FoundCall", "Separator", "SpanScanner", "parse_span", "settle"]

NAME_KEYS = ("name", "tool", "tool_name", "function")
ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "params")
_CALL_KEYS = {*NAME_KEYS, *ARGUMENT_KEYS, "id", "type", "call_id"}
_WRAPPER_KEYS = ("arguments", "args", "parameters")  # {"arguments": {"arguments": {...}}} is unwrapped


def _extract(text: str, tools: Offered, explicit: bool, enclosed: bool = True, raw_ok: bool = False) -> Extraction:
    """The calls in text that stands between a call's markers (a fence, `<tool_call>`): the closing marker came, so
    what it encloses is whole, however its JSON ends (unless not `enclosed`). `raw_ok`: see `_json_calls`."""
    scanner, out, kept, pos = SpanScanner(tools), Extraction(), [], 0
    separator, echo = Separator(), Echo()
    while pos < len(text):
        kind, end = scanner.step(text, pos, final=True)
        span, pos = text[pos:end], end
        kind = "candidate" if kind == "partial" and enclosed else kind
        if echo.repeats(kind, span):
            continue
        found = settle(kind, span, tools, cut_off=False, explicit=explicit, raw_ok=raw_ok)
        echo.saw(span, found)
        if found is None:
            kept.append(separator.text(span))
            continue
        kept.append(separator.found(found))
        kept.append(found.remaining_text)
        out.calls += found.calls
        out.repairs += found.repairs
        out.thinking += found.thinking
        out.cut_off += found.cut_off
        out.unreadable += found.unreadable
        out.unknown += found.unknown
    out.remaining_text = "".join(kept) + separator.held
    return out


_RECIPIENT = re.compile(r"\s*(?:assistant\s+)?to=functions\.([^\s<]+)(?:\s+json)?\s*(?=\{)")
_CALL_MARKERS = tuple(m for m in (*dialects.CLOSED, *dialects.JSON_AFTER, *dialects.DEEPSEEK_ASCII)
                      if m not in ("<|python_start|>", "<function=", "<function name=", "<tool name=", "<invoke name=",
                                   *families.WORD_MARKERS, *minicpm.OPENERS))
"""Markers that only ever open a call: what stands between them is a call or nothing (never the answer). `<tools>`
and `<user>` are also words a reply may use: what they hold that says no call stays the answer."""


def settle(kind: Kind, span: str, tools: Offered, *, cut_off: bool, explicit: bool = False,
           raw_ok: bool = False) -> Extraction | None:
    """What a scanned span is: None for text, else what it holds (calls, thinking, text to show instead).
    `cut_off` (the reply ended by length) changes nothing since issue 47: a call the reply ended inside is never
    run, however the reply ended."""
    del cut_off
    if kind == "text":
        return None
    if span.startswith(dialects.SEED_THINK):  # thinking, closed or not: never a call, never the answer
        return Extraction(thinking=span.removeprefix(dialects.SEED_THINK).removesuffix("</seed:think>"))
    if (thought := families.thinking(span)) is not None:
        return thought
    if span.startswith(tuple(gemma.THOUGHT)):
        return Extraction(thinking=gemma.thought(span))
    marked = span.startswith((*dialects.CLOSED, *dialects.JSON_AFTER, *dialects.HARMONY, *dialects.DEEPSEEK_ASCII,
                              dialects.FUNCTOOLS))
    marked = marked and families.opens_call(span, tools)  # `<tools>`, `<user>`: words too
    # Unfinished JSON in prose is a call cut short only when it names an offered tool (else it is text, vLLM's view);
    # so is a half-written Python line (`read_file(path=`): a mention as likely as a call
    callish = marked or (span.lstrip()[:1] in ("{", "[", "`") and any(name in span for name in tools))
    rest_cut = False
    if kind == "partial":
        complete = complete_part(span)
        rest_cut = complete != span
        if complete is None and not marked and span[:1] in "{[":
            inner = _extract(span[1:], tools, explicit, enclosed=False)  # a broken object around a whole call
            if inner.calls:
                inner.remaining_text = ""
                return inner
        if complete is None:
            return Extraction(cut_off=[cut_name(span)]) if callish else None
        span = complete
    found = parse_span(span, tools, explicit=explicit, raw_ok=raw_ok)
    if found is None and span.startswith(_CALL_MARKERS):
        found = Extraction(unreadable=[span])
    elif found is not None and found.unreadable and span.startswith(_CALL_MARKERS):
        found.remaining_text = ""  # a malformed call between a family's markers is no answer either
    if found is not None:
        _drop_unknown(found, tools)
        if rest_cut:
            found.cut_off.append("a further call")
    elif rest_cut and callish:
        return Extraction(cut_off=[cut_name(span)])
    return found


def _drop_unknown(found: Extraction, tools: Offered) -> None:
    """Moves the calls of tools that were not offered to `found.unknown`."""
    names = sorted(tools)

    def known(name: str) -> bool:
        return name in tools or canonical_tool_name(name, names) is not None

    found.unknown += [c for c in found.calls if not known(c.name)]
    found.calls = [c for c in found.calls if known(c.name)]


def parse_span(span: str, tool_names: Collection[str] | Offered, *, explicit: bool = False,
               raw_ok: bool = False) -> Extraction | None:
    """The calls in one candidate span, or None when it holds none (then the span is ordinary text). An
    extraction without calls drops the span (a control token), shows other text instead of it (a harmony
    header, code between Llama 4's python markers) or holds thinking."""
    tools = offered(tool_names)
    names = frozenset(tools)
    if span.startswith(span_scanner.ACTION) and span[len(span_scanner.ACTION):].lstrip(" \n").startswith("```"):
        span = span[len(span_scanner.ACTION):].lstrip(" \n")  # Command R's label before its call fence
    if m := FENCE_OPEN.match(span):
        inner = span[m.end():]
        inner = inner.removesuffix("```")
        return _nonempty(_extract(inner, tools, explicit or m[1].lower() in CALL_FENCES))
    if span.startswith(tuple(dialects.DEEPSEEK_ASCII)):
        span = dialects.deepseek_spelling(span)
    if span in dialects.CONTROL or re.fullmatch(r"<\|(?:open|close)\|>\w*(?:<\|sep\|>)?", span):
        return Extraction()  # a control token, or a Kimi K3 marker with no text of its own
    if span.startswith(glimmer.OPEN):
        return _nonempty(glimmer.read_calls(span, tools))
    if glimmer.is_header(span):
        return glimmer.read_message(span)
    if span.startswith(dialects.HARMONY):
        return dialects.read_harmony(span)
    for opener in ("<tool_call>", "<longcat_tool_call>", "<seed:tool_call>", "<iquestcoder_tool_call>", families.USER):
        if span.startswith(opener):
            body = _between(span, opener, dialects.CLOSED[opener]).replace("<longcat_arg_", "<arg_")
            body = body.replace("</longcat_arg_", "</arg_")
            if m := _RECIPIENT.match(body):  # `assistant to=functions.f json\n{…}` (sglang's gpt-oss dialect)
                return dialects.json_call(m[1], body[m.end():])
            found = _nonempty(_extract(body, tools, True, raw_ok=opener == "<tool_call>"))  # Hermes' own tests
            return (found or glm.read_glm(body, tools, strict=opener == "<iquestcoder_tool_call>")
                    or gemma.read_gemma("call:" + body.strip(), tools))  # Gemma 4's `<tool_call>f{…}</tool_call>`
    if span.startswith((*families.CLOSED, *families.JSON_AFTER)):
        return families.read(span, tools, lambda body: _nonempty(_extract(body, tools, True)),
                             lambda body: _json_calls(body, tools, explicit=True))
    if span.startswith(tuple(ifm.OPENERS)):  # its parser types each value by the schema, JSON's strings too
        found = _nonempty(_extract(ifm.plain_calls(span), tools, True))
        if found is not None:
            found.calls = [schema_typed(tools, call) for call in found.calls]
        return found
    if span.startswith("[TOOL_CALLS]"):
        body = span.removeprefix("[TOOL_CALLS]")
        if body.lstrip()[:1] in ("{", "["):
            return _json_calls(body, tools, explicit=True)
        return dialects.read_mistral(body)
    for marker in ("<|python_tag|>", "<|tool_call|>"):
        if span.startswith(marker):
            body = span.removeprefix(marker)
            return _json_calls(body, tools, explicit=True) if body.strip() else Extraction()
    for opener in ("<|python_start|>", "<|tool_call_start|>"):
        if span.startswith(opener):
            body = _between(span, opener, dialects.CLOSED[opener])
            while body.startswith(opener):  # LFM2 may write its opener twice (Ollama's test)
                body = body[len(opener):]
            found = dialects.read_python(body) or _json_calls(body, tools, explicit=True)
            return found or (Extraction(remaining_text=body) if opener == "<|python_start|>" else None)
    if span.startswith(tuple(minimax_m3.OPENERS)):
        return _nonempty(minimax_m3.read_minimax_m3(span, tools))
    if span.startswith(kimi_k3.OPEN):
        return _nonempty(kimi_k3.read(span))
    if span.startswith(tuple(step3.OPENERS)):
        return _nonempty(step3.read_step3(span, tools))
    if span.startswith(dialects.FUNCTOOLS):  # a word: what holds no call stays the answer
        found = _json_calls(span.removeprefix(dialects.FUNCTOOLS), tools, explicit=True)
        if found is None or not (found.calls or found.unknown):
            return Extraction(remaining_text=span, unreadable=found.unreadable if found else [])
        return found
    if span.startswith(("<｜tool▁calls▁begin｜>", dialects.DEEPSEEK_CALL)):
        return _nonempty(dialects.read_deepseek(span))
    if span.startswith(("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>", dialects.KIMI_CALL)):
        return _nonempty(dialects.read_kimi(span, tools))
    if span.startswith(("<minimax:tool_call>", "<invoke name=")):
        return dialects.read_invokes(span, tools)
    if span.startswith(tuple(GEMMA_OPENERS)) or span.lstrip(" \t").startswith(gemma.BARE_PREFIXES):
        return read_gemma(span, tools)
    if span.startswith(tuple(dsml.BLOCKS)):
        return dsml.read_dsml(span, tools)
    if span.startswith("<function_calls>"):
        return dialects.read_olmo(_between(span, "<function_calls>", "</function_calls>"))
    if span.startswith(("<tool_calls", *hunyuan.OPENERS)) and hunyuan.is_hunyuan(span):
        return _nonempty(hunyuan.read_hunyuan(span, tools))
    for opener in ("<tool_calls>", "<TOOLCALL>", "<|tools_prefix|>", "<tools>"):
        if span.startswith(opener):
            return _nonempty(_extract(_between(span, opener, dialects.CLOSED[opener]), tools, True))
    if minicpm.is_minicpm(span):
        return minicpm.read_minicpm(span, tools)
    for pattern, closer in ((qwen3_xml.FUNCTION.pattern, "</function>"),
                            (r"""<function\s+name=["']?([^"'>\s]+)["']?\s*>""", "</function>"),
                            (r"""<tool name=["']?([^"'>\s]+)["']?\s*>""", "</tool>"),
                            (r"<([\w.-]+)>", None)):
        if m := re.match(pattern, span):
            if closer is None and m[1] not in names:
                return None
            if closer == "</function>" and pattern.startswith("<function=") and (found := qwen3_xml.read_function(span, tools)):
                return found
            return dialects.xml_call(m[1], _between(span, m[0], closer or f"</{m[1]}>"), tools)
    if (calls := _python_span(span, names)) is not None:
        return calls
    return _json_calls(span, tools, explicit, raw_ok)


def _python_span(span: str, names: frozenset[str]) -> Extraction | None:
    if span[:1] == "{" or not PY_LINE.match(span):
        return None
    calls = python_calls(span, names)
    return Extraction(calls=calls, repairs=[f"read a call written as Python: {span.strip()[:80]}"]) if calls else None


def _nonempty(extraction: Extraction) -> Extraction | None:
    """The calls of a span read as a whole (the text between them in the span is the call's, not prose)."""
    if not extraction.calls and not extraction.unknown:
        return None
    extraction.remaining_text = ""
    return extraction


def _between(span: str, opener: str, closer: str) -> str:
    body = span[len(opener):]
    return body.removesuffix(closer)


def _json_calls(text: str, tools: Offered, explicit: bool, raw_ok: bool = False) -> Extraction | None:
    """The calls in a JSON value. A call object whose arguments are missing (`{"name": "f"}`) or no object
    (`"arguments": "not a dict"`) is no call (vLLM's Granite, Phi-4-mini and InternLM2 tests call it malformed): it is
    `unreadable` (a notice), and outside a family's markers its text stays the answer. `raw_ok`: Hermes'
    `<tool_call>`, whose vLLM tests pass string arguments on as a call (the loop answers it with a validation error)."""
    if not explicit and not (CALLISH.search(text) or any(name in text for name in tools)):
        return None
    if (items := sibling_items(text)) is not None:  # read apart: a repair would run one call into the next
        found = [(item, _json_calls(item, tools, explicit, raw_ok)) for item in items]
        out = Extraction(calls=[c for _, f in found if f and not f.repairs for c in f.calls])
        out.unreadable = [cut_name(item) for item, f in found if f is None or f.repairs or f.unreadable]
        return out if out.calls or out.unreadable else None
    loaded = load_json(text.strip())
    if loaded is None:
        return None
    value, repair = loaded
    malformed: list[str] = []
    found = _calls_from_value(value, tools, explicit, raw_ok, malformed)
    if not found:
        return Extraction(remaining_text=text, unreadable=malformed) if malformed else None
    calls = [call for call, _ in found]
    repairs = [f"{', '.join(c.name for c in calls)}: {repair}"] if repair else []
    return Extraction(calls=calls, repairs=repairs + [note for _, notes in found for note in notes],
                      unreadable=malformed)


def _calls_from_value(value: Any, names: Offered, explicit: bool, raw_ok: bool,
                      malformed: list[str]) -> list[tuple[FoundCall, list[str]]]:
    """The calls in a JSON value; the names of call objects without arguments that are an object go to `malformed`."""
    if isinstance(value, list):
        return [found for item in value for found in _calls_from_value(item, names, explicit, raw_ok, malformed)]
    if not isinstance(value, dict):
        return []
    for wrapper in ("tool_calls", "function_call", "function"):  # OpenAI's own shapes, written out as text
        inner = value.get(wrapper)
        listed = wrapper == "tool_calls" and isinstance(inner, list)
        if listed or (isinstance(inner, dict) and "name" in inner):
            return _calls_from_value(inner, names, True, raw_ok, malformed)
    candidates = [value[k] for k in NAME_KEYS if isinstance(value.get(k), str)]
    name = next((c for c in candidates if c in names), candidates[0] if candidates else None)
    arg_key = next((k for k in ARGUMENT_KEYS if k in value), None)
    if name is None:
        key = next(iter(value), None)
        if len(value) == 1 and key in names and isinstance(value[key], dict | None):
            args, raw, notes = _arguments(key, value[key])
            return [(FoundCall(key, args, raw), [f"{key}: read the tool name from the object's key", *notes])]
        return []
    if name not in names:
        shaped = explicit or set(value) <= _CALL_KEYS
        if arg_key is None or _is_schema(value[arg_key]) or not shaped:
            return []
        if not explicit and not _takes(value[arg_key], names):
            return []  # JSON data that names no tool (Ollama's "json not a tool call"), not a call gone wrong
    if arg_key is not None:
        args, raw, notes = _arguments(name, value[arg_key])
        if raw is not None and not raw_ok:
            malformed.append(name)
            return []
        return [(FoundCall(name, args, raw), notes)]
    flat = {k: v for k, v in value.items() if k not in _CALL_KEYS}
    if not flat:
        malformed.append(name)
        return []
    notes = [f"{name}: took the arguments from the top level of the call"] if flat else []
    return [(FoundCall(name, flat), notes)]


def _takes(arguments: Any, tools: Offered) -> bool:
    """Whether an offered tool takes `arguments` (a near-miss names a wrong tool with a right tool's arguments: Qwen
    writes a file name where the tool's belongs); true when no schema says what the tools take."""
    params = [set(props) for schema in tools.values() if isinstance(props := (schema or {}).get("properties"), dict)]
    if not params:
        return True
    return isinstance(arguments, dict) and bool(arguments) and any(set(arguments) <= p for p in params)


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "object" and "properties" in value


def _arguments(name: str, value: Any) -> tuple[dict[str, Any], str | None, list[str]]:
    notes: list[str] = []
    if isinstance(value, str):
        parsed, repairs = parse_arguments(value)
        if parsed is None:
            return {}, value, [f"{name}: arguments are not a JSON object; passed on as raw"]
        value = parsed
        notes.append(f"{name}: decoded arguments given as a JSON string")
        notes += [f"{name}: {repair}" for repair in repairs]
    if value is None:
        return {}, None, notes
    if not isinstance(value, Mapping):
        return {}, json.dumps(value), [*notes, f"{name}: arguments are not a JSON object; passed on as raw"]
    while len(value) == 1 and (key := next(iter(value))) in _WRAPPER_KEYS and isinstance(value[key], dict):
        value = value[key]
        notes.append(f"{name}: unwrapped doubly wrapped arguments")
    inner = next((k for k in ARGUMENT_KEYS if isinstance(value.get(k), dict)), None)
    if value.get("name") == name and inner and set(value) <= _CALL_KEYS:  # the call again, inside its arguments
        value = value[inner]
        notes.append(f"{name}: read the call written again inside its arguments")
    return dict(value), None, notes
