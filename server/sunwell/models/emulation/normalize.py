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
  offered. It is returned as a call, so the engine answers `unknown_tool` and the model can correct itself (a
  typical Qwen failure puts a file name where the tool name belongs). In bare prose JSON it must have no keys
  besides name, arguments, `id` and `type`, and its arguments must not be a JSON Schema (a tool *definition*
  is not a call); inside an explicit call marker (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, a
  ```tool_call fence) those two restrictions are lifted.
Anything else, e.g. `{"name": "Ada", "age": 3}` in an answer, stays text; so does code in backticks (`{...}`, or
```json …``` written inside a sentence): an example being explained is no call.

A candidate the text ends inside (a `partial` step) is a call cut off; when the reply was cut off (`cut_off`: it
ended by length, or the stream broke) it is never run, and never shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from sunwell.models.arguments import load_json, parse_arguments
from sunwell.models.emulation import dialects
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, offered
from sunwell.models.emulation.pythonic import python_calls
from sunwell.models.emulation.span_scanner import CALL_FENCES, CALLISH, FENCE_OPEN, PY_LINE, Kind, SpanScanner

__all__ = ["Extraction", "FoundCall", "Separator", "SpanScanner", "parse_span", "settle"]

NAME_KEYS = ("name", "tool", "tool_name", "function")
ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "params")
_CALL_KEYS = {*NAME_KEYS, *ARGUMENT_KEYS, "id", "type", "call_id"}
_WRAPPER_KEYS = ("arguments", "args", "parameters")  # {"arguments": {"arguments": {...}}} is unwrapped


def _extract(text: str, tools: Offered, explicit: bool, cut_off: bool = False) -> Extraction:
    scanner, out, kept, pos = SpanScanner(tools), Extraction(), [], 0
    separator = Separator()
    while pos < len(text):
        kind, end = scanner.step(text, pos, final=True)
        span, pos = text[pos:end], end
        found = settle(kind, span, tools, cut_off=cut_off, explicit=explicit)
        if found is None:
            kept.append(separator.text(span))
            continue
        kept.append(separator.found(found))
        kept.append(found.remaining_text)
        out.calls += found.calls
        out.repairs += found.repairs
        out.thinking += found.thinking
        out.cut_off += found.cut_off
    out.remaining_text = "".join(kept) + separator.held
    return out


class Separator:
    """The `;` Llama 3 writes between calls (`{…}; {…}`), dropped when a call follows it: text after a call that
    may be one is held (`held`) until what comes next says."""

    def __init__(self) -> None:
        self.after_call = False
        self.held = ""

    def text(self, span: str) -> str:
        """What of a text span to show now."""
        if self.after_call and _SEPARATOR.fullmatch(self.held + span):
            self.held += span
            return ""
        out, self.held, self.after_call = self.held + span, "", False
        return out

    def found(self, found: Extraction) -> str:
        """What held text to show before a span that held calls (or thinking, or a control token)."""
        out = "" if found.calls and ";" in self.held else self.held
        self.held, self.after_call = "", bool(found.calls) or (self.after_call and not found.remaining_text)
        return out


_SEPARATOR = re.compile(r"\s*;?\s*")


def settle(kind: Kind, span: str, tools: Offered, *, cut_off: bool, explicit: bool = False) -> Extraction | None:
    """What a scanned span is: None for text, else what it holds (calls, thinking, text to show instead)."""
    if kind == "text":
        return None
    found = parse_span(span, tools, explicit=explicit)
    marked = span.startswith((*dialects.CLOSED, *dialects.JSON_AFTER, *dialects.HARMONY))
    callish = marked or bool(CALLISH.search(span)) or any(name in span for name in tools)
    if kind == "partial" and cut_off and (found is not None or callish):
        names = [call.name for call in found.calls] if found else []
        return Extraction(cut_off=names or [span[:40]])
    return found


def parse_span(span: str, tool_names: Collection[str] | Offered, *, explicit: bool = False) -> Extraction | None:
    """The calls in one candidate span, or None when it holds none (then the span is ordinary text). An
    extraction without calls drops the span (a control token), shows other text instead of it (a harmony
    header, code between Llama 4's python markers) or holds thinking."""
    tools = offered(tool_names)
    names = frozenset(tools)
    if m := FENCE_OPEN.match(span):
        inner = span[m.end():]
        inner = inner.removesuffix("```")
        return _nonempty(_extract(inner, tools, explicit or m[1].lower() in CALL_FENCES))
    if span in dialects.CONTROL:
        return Extraction()
    if span.startswith(dialects.HARMONY):
        return dialects.read_harmony(span)
    if span.startswith("<tool_call>"):
        body = _between(span, "<tool_call>", "</tool_call>")
        return _nonempty(_extract(body, tools, True)) or dialects.read_glm(body, tools)
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
            found = dialects.read_python(body) or _json_calls(body, tools, explicit=True)
            return found or (Extraction(remaining_text=body) if opener == "<|python_start|>" else None)
    if span.startswith(("<｜tool▁calls▁begin｜>", dialects.DEEPSEEK_CALL)):
        return _nonempty(dialects.read_deepseek(span))
    if span.startswith(("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>", dialects.KIMI_CALL)):
        return _nonempty(dialects.read_kimi(span))
    if span.startswith(("<minimax:tool_call>", "<invoke name=")):
        return dialects.read_invokes(span, tools)
    if span.startswith("<tool_calls>"):
        return _nonempty(_extract(_between(span, "<tool_calls>", "</tool_calls>"), tools, True))
    for pattern, closer in ((r"<function=([^>\s]+)\s*>", "</function>"),
                            (r"""<function\s+name=["']?([^"'>\s]+)["']?\s*>""", "</function>"),
                            (r"""<tool name=["']?([^"'>\s]+)["']?\s*>""", "</tool>"),
                            (r"<([\w.-]+)>", None)):
        if m := re.match(pattern, span):
            if closer is None and m[1] not in names:
                return None
            return dialects.xml_call(m[1], _between(span, m[0], closer or f"</{m[1]}>"), tools)
    if (calls := _python_span(span, names)) is not None:
        return calls
    return _json_calls(span, tools, explicit)


def _python_span(span: str, names: frozenset[str]) -> Extraction | None:
    if span[:1] == "{" or not PY_LINE.match(span):
        return None
    calls = python_calls(span, names)
    return Extraction(calls=calls, repairs=[f"read a call written as Python: {span.strip()[:80]}"]) if calls else None


def _nonempty(extraction: Extraction) -> Extraction | None:
    """The calls of a span read as a whole (the text between them in the span is the call's, not prose)."""
    if not extraction.calls:
        return None
    extraction.remaining_text = ""
    return extraction


def _between(span: str, opener: str, closer: str) -> str:
    body = span[len(opener):]
    return body.removesuffix(closer)


def _json_calls(text: str, tools: Offered, explicit: bool) -> Extraction | None:
    if not explicit and not (CALLISH.search(text) or any(name in text for name in tools)):
        return None
    loaded = load_json(text.strip())
    if loaded is None:
        return None
    value, repair = loaded
    found = _calls_from_value(value, tools, explicit)
    if not found:
        return None
    calls = [call for call, _ in found]
    repairs = [f"{', '.join(c.name for c in calls)}: {repair}"] if repair else []
    return Extraction(calls=calls, repairs=repairs + [note for _, notes in found for note in notes])


def _calls_from_value(value: Any, names: Offered, explicit: bool) -> list[tuple[FoundCall, list[str]]]:
    if isinstance(value, list):
        return [found for item in value for found in _calls_from_value(item, names, explicit)]
    if not isinstance(value, dict):
        return []
    for wrapper in ("tool_calls", "function_call", "function"):  # OpenAI's own shapes, written out as text
        inner = value.get(wrapper)
        listed = wrapper == "tool_calls" and isinstance(inner, list)
        if listed or (isinstance(inner, dict) and "name" in inner):
            return _calls_from_value(inner, names, True)
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
        return [(FoundCall(name, args, raw), notes)]
    flat = {k: v for k, v in value.items() if k not in _CALL_KEYS}
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
