"""Tool calls written as text: where they are, what they say, and what had to be repaired to read them.

Small local models rarely return native `tool_calls`; they write the call into their text, in whatever format
their training favoured (models/README.md). `SpanScanner` splits text into prose and call candidates (fenced
blocks, bare JSON, `<tool_call>`, `<|python_tag|>`, `<function=…>`, `[TOOL_CALLS]`, the XML emulation format);
`parse_span` reads one candidate, its arguments with `arguments.parse_arguments`. A reply that is nothing but Python
calls (`read_file(path="a.txt")`) is read by `pythonic.py`. The one-shot `extract_tool_calls` and the streaming
`CallDetector` (both in `call_detector.py`) use them, so a text yields the same calls however it was chunked.

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
Anything else, e.g. `{"name": "Ada", "age": 3}` in an answer, stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Self

from sunwell.models.arguments import load_json, parse_arguments

NAME_KEYS = ("name", "tool", "tool_name", "function")
ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "params")
_CALL_KEYS = {*NAME_KEYS, *ARGUMENT_KEYS, "id", "type", "call_id"}
_WRAPPER_KEYS = ("arguments", "args", "parameters")  # {"arguments": {"arguments": {...}}} is unwrapped
_JSON_FENCES = {"", "json", "jsonc", "json5", "xml"}
_CALL_FENCES = {"tool_call", "tool_calls", "tool", "tool_use", "function", "function_call", "functions"}
_LOOKAHEAD = 256
"""Bare `{`/`[` text is held at most this long unless it starts like a call, so prose with braces flows on."""
_CALLISH = re.compile(r"""["']?\b(?:name|tool|tool_name|function|tool_calls)\b["']?\s*:""")
_TRIGGER = re.compile(r"[`{\[<]")
_SIGNIFICANT = re.compile(r'[{}\[\]"\\]')
_FENCE_OPEN = re.compile(r"```([\w.+-]*)")
_CLOSERS = {"<tool_call>": "</tool_call>", "<function=": "</function>", "<tool name=": "</tool>"}
_JSON_MARKERS = ("<|python_tag|>", "[TOOL_CALLS]")
# <path>…</path>, <parameter=path>…</parameter> (Qwen3-Coder), <parameter name="path">…</parameter>
_XML_PARAM = re.compile(
    r"""<(?:parameter=([\w.-]+)|parameter\s+name=["']([\w.-]+)["']|([\w.-]+))\s*>"""
    r"""(.*?)</(?:parameter|\3)\s*>""",
    re.DOTALL)

Step = tuple[Literal["text", "candidate", "wait"], int]


class _NameAndArguments(NamedTuple):
    name: str
    arguments: dict[str, Any]


class FoundCall(_NameAndArguments):
    """A `(name, arguments)` pair. `raw` rides along (outside the tuple, so not in `==`): the argument text
    when it could not be read as an object, in which case `arguments` is empty."""

    raw: str | None

    def __new__(cls, name: str, arguments: dict[str, Any], raw: str | None = None) -> Self:
        call = super().__new__(cls, name, arguments)
        call.raw = raw
        return call

    def __repr__(self) -> str:
        raw = f", raw={self.raw!r}" if self.raw is not None else ""
        return f"FoundCall({self.name!r}, {self.arguments!r}{raw})"


@dataclass
class Extraction:
    calls: list[FoundCall] = field(default_factory=list)
    remaining_text: str = ""
    """The text with every call's text removed, otherwise exactly as written."""
    repairs: list[str] = field(default_factory=list)


def span_calls(text: str, tool_names: Collection[str]) -> Extraction:
    """The calls in `text`, read candidate span by candidate span (a reply of Python calls is `pythonic.py`'s)."""
    return _extract(text, frozenset(tool_names), explicit=False)


def _extract(text: str, names: frozenset[str], explicit: bool) -> Extraction:
    scanner, out, kept, pos = SpanScanner(names), Extraction(), [], 0
    while pos < len(text):
        kind, end = scanner.step(text, pos, final=True)
        span = text[pos:end]
        found = parse_span(span, names, explicit=explicit) if kind == "candidate" else None
        if found is None:
            kept.append(span)
        else:
            out.calls += found.calls
            out.repairs += found.repairs
        pos = end
    out.remaining_text = "".join(kept)
    return out


class _Balance:
    """Incremental bracket matching from one `{` or `[`, aware of double-quoted strings."""

    def __init__(self, start: int) -> None:
        self.start, self.i, self.depth, self.in_string = start, start, 0, False

    def end(self, buf: str) -> int | None:
        i = self.i
        while (m := _SIGNIFICANT.search(buf, i)) is not None:
            c, i = m.group(), m.end()
            if self.in_string:
                if c == "\\":
                    if i >= len(buf):
                        i = m.start()  # the escaped character has not arrived yet
                        break
                    i += 1
                elif c == '"':
                    self.in_string = False
            elif c == '"':
                self.in_string = True
            elif c in "{[":
                self.depth += 1
            elif c in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.i = i
                    return i
        else:
            i = len(buf)
        self.i = i
        return None


class SpanScanner:
    """Splits text into prose and call candidates, one step at a time.

    `step(buf, pos, final)` decides what `buf[pos:end]` is: `text` (safe to show), `candidate` (might be a
    call: give it to `parse_span`) or `wait` (undecidable until more text arrives; never returned when
    `final`). A step only decides what no further text can change, and `buf` may only grow between `wait`s, so
    any chunking of a stream gives the same spans. Inside a fenced code block that cannot hold a call
    (```python) text flows on.
    """

    def __init__(self, tool_names: Collection[str]) -> None:
        self.tool_names = frozenset(tool_names)
        self._markers = (*_CLOSERS, *_JSON_MARKERS, *(f"<{n}>" for n in sorted(self.tool_names)))
        self._longest = max(len(m) for m in self._markers)
        self._in_code = False
        self._balance: _Balance | None = None

    def step(self, buf: str, pos: int, final: bool) -> Step:
        kind, end = self._step(buf, pos, final)
        if kind != "wait":
            self._balance = None
        return kind, end

    def _step(self, buf: str, pos: int, final: bool) -> Step:
        if self._in_code:
            return self._code_block(buf, pos, final)
        m = _TRIGGER.search(buf, pos)
        if m is None or m.start() > pos:
            return "text", m.start() if m else len(buf)
        if buf[pos] == "`":
            return self._fence(buf, pos, final)
        if buf[pos] == "{":
            return self._json(buf, pos, pos, final, lookahead=True)
        rest = buf[pos:pos + self._longest]
        for marker in self._markers:
            if rest.startswith(marker):
                return self._marked(marker, buf, pos, final)
        if not final and any(marker.startswith(rest) for marker in self._markers):
            return "wait", pos
        if buf[pos] == "[":
            j = _skip_space(buf, pos + 1)
            if j < len(buf) and buf[j] == "{":
                return self._json(buf, pos, pos, final, lookahead=True)
            if j == len(buf) and not final:
                return "wait", pos
        return "text", pos + 1

    def _balanced_end(self, buf: str, start: int) -> int | None:
        if self._balance is None or self._balance.start != start:
            self._balance = _Balance(start)
        return self._balance.end(buf)

    def _json(self, buf: str, pos: int, start: int, final: bool, lookahead: bool = False) -> Step:
        """A candidate from `pos` through the JSON value that begins at `start`."""
        if lookahead:
            j = _skip_space(buf, start + 1)
            if j == len(buf):
                return ("text", pos + 1) if final else ("wait", pos)
            if not (buf[j] in "\"'{}" or buf[j].isalpha() or buf[j] == "_"):
                return "text", pos + 1  # `{0}`, `{ x }` in code, `[1]`, `[link](…)`
        end = self._balanced_end(buf, start)
        if end is not None and (not lookahead or end - pos <= _LOOKAHEAD):
            return "candidate", end
        if lookahead and len(buf) - pos >= _LOOKAHEAD and not self._callish(buf[pos:pos + _LOOKAHEAD]):
            return "text", pos + 1
        if end is not None or final:
            return "candidate", end or len(buf)
        return "wait", pos

    def _callish(self, text: str) -> bool:
        return bool(_CALLISH.search(text)) or any(name in text for name in self.tool_names)

    def _fence(self, buf: str, pos: int, final: bool) -> Step:
        if not buf.startswith("```", pos):
            return ("wait", pos) if not final and "```".startswith(buf[pos:]) else ("text", pos + 1)
        lang_end = _FENCE_OPEN.match(buf, pos).end()
        if lang_end == len(buf) and not final:
            return "wait", pos
        lang = buf[pos + 3:lang_end].lower()
        if lang not in _JSON_FENCES | _CALL_FENCES:
            self._in_code = True
            return "text", lang_end
        # The closing fence is looked for after the JSON value: a ``` in a string (README content) is safe.
        j = _skip_space(buf, lang_end)
        body_end = self._balanced_end(buf, j) if j < len(buf) and buf[j] in "{[" else lang_end
        close = buf.find("```", body_end if body_end is not None else lang_end)
        if body_end is not None and close >= 0:
            return "candidate", close + 3
        if final:
            close = buf.find("```", lang_end)
            return "candidate", close + 3 if close >= 0 else len(buf)
        return "wait", pos

    def _code_block(self, buf: str, pos: int, final: bool) -> Step:
        close = buf.find("```", pos)
        if close >= 0:
            self._in_code = False
            return "text", close + 3
        safe = len(buf) if final else len(buf.rstrip("`"))  # a trailing ` or `` may open the closing fence
        return ("text", safe) if safe > pos else ("wait", pos)

    def _marked(self, marker: str, buf: str, pos: int, final: bool) -> Step:
        body = pos + len(marker)
        if marker in _JSON_MARKERS:
            j = _skip_space(buf, body)
            if j == len(buf):
                return ("candidate", len(buf)) if final else ("wait", pos)
            if buf[j] not in "{[":
                return "text", body
            return self._json(buf, pos, j, final)
        closer = _CLOSERS.get(marker) or "</" + marker[1:]
        k = buf.find(closer, body)
        if k >= 0:
            return "candidate", k + len(closer)
        return ("candidate", len(buf)) if final else ("wait", pos)


def _skip_space(buf: str, i: int) -> int:
    while i < len(buf) and buf[i].isspace():
        i += 1
    return i


def parse_span(span: str, tool_names: Collection[str], *, explicit: bool = False) -> Extraction | None:
    """The calls in one candidate span, or None when it holds none (then the span is ordinary text)."""
    names = frozenset(tool_names)
    if m := _FENCE_OPEN.match(span):
        inner = span[m.end():]
        inner = inner.removesuffix("```")
        return _nonempty(_extract(inner, names, explicit or m[1].lower() in _CALL_FENCES))
    if span.startswith("<tool_call>"):
        return _nonempty(_extract(_between(span, "<tool_call>", "</tool_call>"), names, True))
    for marker in _JSON_MARKERS:
        if span.startswith(marker):
            return _json_calls(span[len(marker):], names, explicit=True)
    for pattern, closer in ((r"<function=([^>\s]+)\s*>", "</function>"),
                            (r"""<tool name=["']?([^"'>\s]+)["']?\s*>""", "</tool>"),
                            (r"<([\w.-]+)>", None)):
        if m := re.match(pattern, span):
            if closer is None and m[1] not in names:
                return None
            body = _between(span, m[0], closer or f"</{m[1]}>")
            return _single_call(m[1], body)
    return _json_calls(span, names, explicit)


def _nonempty(extraction: Extraction) -> Extraction | None:
    return extraction if extraction.calls else None


def _between(span: str, opener: str, closer: str) -> str:
    body = span[len(opener):]
    return body.removesuffix(closer)


def _json_calls(text: str, names: frozenset[str], explicit: bool) -> Extraction | None:
    if not explicit and not (_CALLISH.search(text) or any(name in text for name in names)):
        return None
    loaded = load_json(text.strip())
    if loaded is None:
        return None
    value, repair = loaded
    found = _calls_from_value(value, names, explicit)
    if not found:
        return None
    calls = [call for call, _ in found]
    repairs = [f"{', '.join(c.name for c in calls)}: {repair}"] if repair else []
    return Extraction(calls=calls, repairs=repairs + [note for _, notes in found for note in notes])


def _calls_from_value(value: Any, names: frozenset[str], explicit: bool) -> list[tuple[FoundCall, list[str]]]:
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
    if arg_key is not None:
        args, raw, notes = _arguments(name, value[arg_key])
        return [(FoundCall(name, args, raw), notes)]
    flat = {k: v for k, v in value.items() if k not in _CALL_KEYS}
    notes = [f"{name}: took the arguments from the top level of the call"] if flat else []
    return [(FoundCall(name, flat), notes)]


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
    if not isinstance(value, dict):
        return {}, json.dumps(value), [*notes, f"{name}: arguments are not a JSON object; passed on as raw"]
    while len(value) == 1 and (key := next(iter(value))) in _WRAPPER_KEYS and isinstance(value[key], dict):
        value = value[key]
        notes.append(f"{name}: unwrapped doubly wrapped arguments")
    return value, None, notes


def _single_call(name: str, body: str) -> Extraction:
    """`<function=name>…</function>`, `<tool name="name">…</tool>`, `<name>…</name>`: JSON or XML params."""
    if body.strip().startswith("{"):
        parsed, repairs = parse_arguments(body)
        if parsed is None:
            return Extraction(calls=[FoundCall(name, {}, body.strip())],
                              repairs=[f"{name}: arguments are not a JSON object; passed on as raw"])
        args, raw, notes = _arguments(name, parsed)
        return Extraction(calls=[FoundCall(name, args, raw)], repairs=[*(f"{name}: {r}" for r in repairs), *notes])
    params = {m[1] or m[2] or m[3]: _xml_value(m[4]) for m in _XML_PARAM.finditer(body)}
    return Extraction(calls=[FoundCall(name, params)])


def _xml_value(text: str) -> Any:
    # One line is a scalar and is trimmed; a block (file content) keeps its inner whitespace.
    value = text.strip() if "\n" not in text.strip("\n") else text.removeprefix("\n").removesuffix("\n")
    if value[:1] in "{[" and value:
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            pass
    return value
