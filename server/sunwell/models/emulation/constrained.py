"""Constrained decoding for emulated tool calls: the server may only sample a reply of one schema.

A model without native tool calling is asked for one JSON object, `{"name": <tool>, "arguments": <its
parameters>}`, a call of one of the offered tools or of `final_answer`, whose `text` is the answer to the user
(`reply_schema`). Where the server takes a schema, the model can write nothing else: a 0.5B model stops inventing
tool names and can still answer in plain text (BENCHMARKS.md, "Constrained decoding").

Servers say so in two forms (`Dialect`): the OpenAI one, `response_format: {type: json_schema, json_schema}`, taken
by vLLM, SGLang, LM Studio, llama.cpp's server and Ollama's `/v1` (which maps it onto its own `format`); and
llama-cpp-python's `response_format: {type: json_object, schema}`, the only form it knows (it refuses the other
with a 500 naming the field). Nothing is probed: the first constrained request tries the forms in turn, and
`ServerConstraints` remembers what the endpoint refused (`refuses_constraint`) and what it took.

`ConstrainedReply` reads such a reply as it streams: the answer's text flows out as `TextDelta` (never its JSON
wrapper), a call becomes the usual tool-call events once its object is complete. A reply that is not of the
schema (a server that ignored it) goes to the `CallDetector` as any emulated reply does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import jiter

from sunwell.models.base import (
    ModelRequest,
    Notice,
    StreamEvent,
    TextDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.emulation.call_detector import EMULATED_ID_PREFIX, CallDetector
from sunwell.wire.messages import ToolSpec

Dialect = Literal["json_schema", "json_object"]
DIALECTS: tuple[Dialect, ...] = ("json_schema", "json_object")
"""In the order tried: the standard form first, so a server that would take a schema-less `json_object` without
enforcing the schema (vLLM, Ollama) is never sent that one unless it refused the standard form."""

ANSWER_TOOL = "final_answer"
"""The answer is offered as one more function: a 0.5B model offered `{"answer": ...}` beside the calls answers as
soon as it has read a file it was asked to change; offered this function, it writes the file first (BENCHMARKS.md,
"Constrained decoding")."""

# Schema keywords the servers' grammar compilers understand; anything else (descriptions, formats, patterns) is
# dropped from the constraint, which only loosens it: the loop still validates every call against the full schema.
_KEPT = frozenset({
    "type", "properties", "required", "items", "prefixItems", "enum", "const", "anyOf", "oneOf", "allOf",
    "additionalProperties", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "$ref", "$defs",
    "definitions",
})  # fmt: skip


@dataclass(frozen=True)
class ConstrainedRequest(ModelRequest):
    """A request whose reply the server should constrain to `reply_schema` (an adapter that cannot ignores it)."""

    reply_schema: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None
    """The answer tool's name when the model may answer (`tool_choice` auto): an adapter that sends the schema
    sends the request free first, and again with the schema only when the reply opens a call (`choice.py`)."""
    line_fits: bool = True
    """False when the request answers the user's line and that line shares no word with any offered tool
    (`choice.fits`): a call the model opens there in doubt is held to the answer (`choice.CALL_DOUBT`)."""


def answer_tool(tools: list[ToolSpec]) -> ToolSpec:
    """The pseudo-function that carries the final answer, named apart from every offered tool."""
    name = ANSWER_TOOL
    while name in {t.name for t in tools}:
        name = f"{name}_to_user"
    return ToolSpec(name=name, description="Your reply to the user, once every step of the request is done.",
                    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                                "additionalProperties": False})  # fmt: skip


def reply_schema(tools: list[ToolSpec], tool_choice: str = "auto") -> dict[str, Any]:
    """One object: a call of one of `tools` with that tool's arguments; with `auto`, also a call of the
    `answer_tool` (with `required`, or one tool's name, a call of the tools asked for)."""
    offered = [t for t in tools if tool_choice in ("auto", "required") or t.name == tool_choice] or tools
    if tool_choice == "auto":
        offered = [*offered, answer_tool(tools)]
    return {"anyOf": [{"type": "object",
                       "properties": {"name": {"const": t.name}, "arguments": _arguments_schema(t.parameters)},
                       "required": ["name", "arguments"], "additionalProperties": False} for t in offered]}  # fmt: skip


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_UNROLLED = ("minLength", "maxLength", "minItems", "maxItems")
UNROLL_LIMIT = 32
"""The longest length bound a constraint keeps. Grammar compilers unroll a bound into one nested rule per step:
llama.cpp failed to parse `ask_user`'s `maxLength: 2000` and llama-cpp-python's server died on it. The loop's
validation still answers a value over the full schema's bound."""


def _arguments_schema(parameters: dict[str, Any]) -> Any:
    """A tool's parameters as a grammar can hold them. An optional number with bounds is left out: llama-cpp-python
    compiles no bounds, and a 0.5B model then filled `read_file`'s optional `offset` and `limit` with 0 and -1 on
    every read. A required one stays (the loop's validation answers a bad value)."""
    schema = _grammar_schema(parameters)
    properties, required = parameters.get("properties"), set(parameters.get("required") or [])
    if isinstance(properties, dict) and isinstance(schema.get("properties"), dict):
        bounded = {
            name
            for name, sub in properties.items()
            if isinstance(sub, dict) and any(k in sub for k in _BOUNDS)
        }
        schema["properties"] = {name: sub for name, sub in schema["properties"].items()
                                if name in required or name not in bounded}  # fmt: skip
    return schema


def _grammar_schema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _grammar_schema(sub) for name, sub in value.items()}
        elif key in _UNROLLED and not (isinstance(value, int) and value <= UNROLL_LIMIT):
            continue
        elif key in _KEPT:
            out[key] = _grammar_schema(value)
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["properties"] = {}
    return out


def with_constraint(params: dict[str, Any], dialect: Dialect, schema: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions `params` asking the server for `schema` in `dialect`."""
    if dialect == "json_object":
        return {**params, "response_format": {"type": "json_object", "schema": schema}}
    return {
        **params,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_call_or_answer", "schema": schema},
        },
    }


_NAMES_THE_FIELD = re.compile(
    r"response_format|json_schema|json_object|\bschema\b|grammar|guided|structured output", re.IGNORECASE
)


def refuses_constraint(status: int | None, detail: str) -> bool:
    """Whether an error answering a constrained request is the server refusing the constraint (a status that names
    it), so the request may go again without it. llama-cpp-python answers a form it does not know with a 500."""
    return status in (400, 422, 500) and bool(_NAMES_THE_FIELD.search(detail))


class ServerConstraints:
    """What one endpoint does with constraints: the dialect it took, the ones it refused."""

    def __init__(self) -> None:
        self.accepted: Dialect | None = None
        self.refused: dict[Dialect, str] = {}

    def dialect(self) -> Dialect | None:
        """The form to send now; None once the server refused every form."""
        return self.accepted or next((d for d in DIALECTS if d not in self.refused), None)

    def took(self, dialect: Dialect) -> None:
        self.accepted = dialect

    def refuse(self, dialect: Dialect, reason: str) -> Notice | None:
        """Remember a refusal; the notice to show once no form is left."""
        self.refused[dialect] = reason
        if self.accepted == dialect:
            self.accepted = None
        if self.dialect() is not None:
            return None
        return Notice(
            code="constrained_decoding_refused",
            message=(
                f"the server refused constrained decoding ({reason}); tool calls are read from free text"
            ),
        )


class ConstrainedReply:
    """Reads a streamed reply of `reply_schema` (the `CallDetector` interface: `feed`, `finish`, `calls`).

    The reply is held until it shows what it is. A call of `answer` (or `{"answer": ...}`) streams its text as
    `TextDelta`; a call of a tool is held until its object is complete and becomes one call. Anything else, or JSON
    that breaks, goes whole to a `CallDetector`, as an unconstrained reply would, and a call of `answer` it finds
    is text too."""

    def __init__(self, tools: list[ToolSpec], *, answer: str | None = None, first_id: int = 1) -> None:
        self.tools, self.answer = tools, answer
        self.names = {t.name for t in tools}
        self.detector: CallDetector | None = None
        """Made when the reply turns out not to be of the schema, numbering its calls after this one's."""
        self._buf = ""
        self._mode: Literal["undecided", "answer", "call", "after", "plain"] = "undecided"
        """`after`: past a complete object, where whitespace (a server's closing newline) is no text."""
        self._path: tuple[str, ...] = ()
        """Where the answer's text is in the object."""
        self._shown = ""
        self._next_id = first_id
        self._hidden: set[str] = set()
        """Ids of calls of `answer` the detector found: their events become text."""
        self.calls = 0

    def feed(self, delta: str) -> list[StreamEvent]:
        if self._mode == "plain":
            return self._plain(delta)
        self._buf += delta
        if self._mode == "after":
            return self._to_plain() if self._buf.strip() else []
        return self._read(final=False)

    def finish(self, *, cut_off: bool = False) -> list[StreamEvent]:
        """The rest; `cut_off`: the reply ended by length, so a call still open is dropped, never run."""
        events = self._read(final=True) if self._mode not in ("plain", "after") else []
        return events + (self._translate(self.detector.finish(cut_off=cut_off)) if self.detector else [])

    def _plain(self, text: str) -> list[StreamEvent]:
        if self.detector is None:
            self.detector = CallDetector([*self.tools, *([self.answer] if self.answer else [])],
                                         first_id=self._next_id, unknown_as_calls=True)  # fmt: skip
        return self._translate(self.detector.feed(text)) if text else []

    def _translate(self, events: list[StreamEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            if isinstance(event, ToolCallStarted) and event.name == self.answer:
                self._hidden.add(event.call_id)
            elif isinstance(event, ToolCallDone) and event.call_id in self._hidden:
                text = (event.parsed or {}).get("text")
                out.append(TextDelta(text if isinstance(text, str) else event.arguments))
            elif not (isinstance(event, ToolCallArgs) and event.call_id in self._hidden):
                self.calls += isinstance(event, ToolCallDone)
                out.append(event)
        return out

    def _read(self, final: bool) -> list[StreamEvent]:
        text = self._buf.lstrip()
        if self._mode == "undecided":
            if not text.startswith("{") or self._broken(text):
                return self._to_plain() if text or final else []
            first = re.match(r'\{\s*"((?:[^"\\]|\\.)*)"\s*:', text)
            name = self._partial(text, "on").get("name") if first and first[1] == "name" else None
            if first is None or (first[1] == "name" and not isinstance(name, str)):
                return self._to_plain() if final else []  # not yet told
            if first[1] == "answer":
                self._mode, self._path = "answer", ("answer",)
            elif self.answer is not None and name == self.answer:
                self._mode, self._path = "answer", ("arguments", "text")
            else:
                self._mode = "call"
        if self._mode == "answer":
            return self._answer(text)
        return self._call(text, final)

    @staticmethod
    def _partial(text: str, mode: Literal["on", "trailing-strings"]) -> dict[str, Any]:
        try:
            value = jiter.from_json(text.encode(), partial_mode=mode)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @staticmethod
    def _broken(text: str) -> bool:
        try:
            jiter.from_json(text.encode(), partial_mode="trailing-strings")
        except ValueError:
            return True
        return False

    def _to_plain(self) -> list[StreamEvent]:
        """The reply is no object of the schema (a server that ignored it, or one cut off): the detector reads
        it, repairs and all, as it reads any emulated reply."""
        self._mode = "plain"
        buf, self._buf = self._buf, ""
        return self._plain(buf.lstrip())

    def _answer(self, text: str) -> list[StreamEvent]:
        complete = _complete_object(text)
        if complete is None and self._broken(text):  # broken JSON from a server that did not constrain
            if not self._shown:
                return self._to_plain()
            self._mode, self._buf = "plain", ""
            return []
        value: Any = complete[0] if complete else self._partial(text, "trailing-strings")
        for key in self._path:
            value = value.get(key) if isinstance(value, dict) else None
        events: list[StreamEvent] = []
        if isinstance(value, str) and value.startswith(self._shown) and len(value) > len(self._shown):
            events.append(TextDelta(value[len(self._shown) :]))
            self._shown = value
        if complete:  # whatever follows the object is read as any reply would be
            self._mode, self._buf = "after", text[complete[1] :]
            if self._buf.strip():
                events += self._to_plain()
        return events

    def _call(self, text: str, final: bool) -> list[StreamEvent]:
        complete = _complete_object(text)
        if complete is None:
            return self._to_plain() if final or self._broken(text) else []
        obj, end = complete
        name, arguments = obj.get("name"), obj.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict) or (
                name not in self.names and "arguments" not in obj):  # fmt: skip
            return self._to_plain()  # JSON, but no call: the detector says what it is
        self._mode, self._buf = "after", text[end:]
        call_id = f"{EMULATED_ID_PREFIX}{self._next_id}"
        self._next_id += 1
        self.calls += 1
        raw = json.dumps(arguments, ensure_ascii=False)
        events: list[StreamEvent] = [
            ToolCallStarted(call_id, name),
            ToolCallArgs(call_id, raw),
            ToolCallDone(call_id, name, raw, parsed=arguments),
        ]
        return events + (self._to_plain() if self._buf.strip() else [])


def _complete_object(text: str) -> tuple[dict[str, Any], int] | None:
    """The JSON object `text` starts with and where it ends, once it is complete."""
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return (obj, end) if isinstance(obj, dict) else None
