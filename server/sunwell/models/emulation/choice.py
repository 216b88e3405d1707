"""Answer or call: a model held to a reply schema first chooses between the two free, and only a call is held.

Under the schema (`constrained.py`) every reply is one JSON object, so the grammar's first tokens are
`{"name": "` whatever the question: a 0.5B model asked something no tool answers has begun a call before it
could choose not to, and then names the likeliest tool, not the `final_answer` pseudo-tool listed last, whose
description says it comes once every step is done (BENCHMARKS.md, "Answering under the constraint"). Free, the
same model answers such a question in prose as often as through its own chat template.

So a request that may be answered (`tool_choice` auto) goes out twice at most, with the same prompt: first
without the schema, read only until its opening shows what it is (`opening`); prose, or the answer tool's JSON,
is the reply and streams on; a call, in any format, closes that stream and the request goes again with the
schema, whose reply is the call. The second request repeats the first's prompt, so a server that keeps its
prompt cache (llama.cpp, vLLM, Ollama) does not read it again, and a call costs the few tokens of its opening.
Prose goes to the schema too when the server's log-probabilities say a call was close behind (`CALL_SHARE`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import fields, replace
from typing import Any, Literal

from sunwell.models.base import Finished, ModelRequest, StreamEvent, TextDelta
from sunwell.models.emulation import dialects
from sunwell.models.emulation.constrained import ConstrainedRequest
from sunwell.wire.messages import ToolSpec

Opening = Literal["answer", "call"]

UNDECIDED_MAX = 200
"""Characters held at most while the opening cannot be told: then the reply is read as an answer (calls written
in it are still found, as in any emulated reply)."""
FIRST_TOKENS = 10
CALL_SHARE = 0.24
"""A reply begun in prose is still a call when the model gave at least this probability to first tokens that may
open one (`{"`, a fence, a marker, a tool's name), where the server reports them: the free choice follows the
likeliest token, and a 0.5B model's "To find the integral…" often has a call close behind it. The largest value
that gives BFCL's calling sets back what the free choice lost (BENCHMARKS.md, "A call close behind prose")."""

CALL_DOUBT = 0.4
"""A reply that opens JSON (or a fenced JSON block) is a call held to the schema, unless the model gave call openings
less than this in all and the user's line shares no word with any offered tool: then the schema holds it to the
answer. BFCL's irrelevance questions the model's own template answered and Sunwell called opened JSON at 0.23, 0.34
and 0.38 ("the fastest route from Los Angeles to New York" with only `get_closest_airport`); no JSON-opened call of
the calling sets was under 0.41 (BENCHMARKS.md, "A call the question does not fit")."""
_STOP = frozenset({"what", "which", "where", "when", "with", "from", "this", "that", "have", "about", "into", "your",
                   "some", "tell", "does", "there", "their", "them", "they", "then", "than", "give", "make", "find",
                   "help", "need", "like", "want", "show", "would", "could", "should"})

_MARKERS = (*dialects.CLOSED, *dialects.JSON_AFTER, *dialects.HARMONY)
_FIRST_KEY = re.compile(r'\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*')
_KEY_BEGUN = re.compile(r'\{\s*(?:"(?:[^"\\]|\\.)*"?\s*)?')
_NAME = re.compile(r'"((?:[^"\\]|\\.)*)("?)')
_FENCE = re.compile(r"```([\w.+-]*)[^\n]*\n")
_CALL_FENCES = {"", "json", "jsonc", "json5", "xml", "tool_call", "tool_calls", "tool", "function", "function_call"}
_WORD = re.compile(r"[A-Za-z_][\w.]*")
log = logging.getLogger(__name__)


def opening(text: str, answer: str, tools: Collection[str]) -> Opening | None:
    """What a reply free to answer or call does, told from its first characters; None while they cannot tell.

    A call is any format's opening: JSON (unless it names `answer`, or is `{"answer": …}`), a fenced JSON block,
    a family's call marker, a Python call of an offered tool. Where it is unclear the verdict is a call: held to
    the schema, the model may still answer through `answer`, where a call read from free text is not held."""
    rest = text.lstrip()
    if not rest:
        return None
    if len(rest) > UNDECIDED_MAX:
        return "answer"
    match rest[0]:
        case "{":
            return _json_opening(rest, answer)
        case "[":
            return "call"  # a list of calls, JSON or Python, or Mistral's [TOOL_CALLS]
        case "<":
            if any(rest.startswith(m) for m in (*_MARKERS, *(f"<{name}>" for name in tools))):
                return "call"
            prefix = any(m.startswith(rest) for m in (*_MARKERS, *(f"<{name}>" for name in tools)))
            return None if prefix else "answer"
        case "`":
            return _fenced_opening(rest, answer, tools)
    word, names = _WORD.match(rest), {name.lower() for name in tools}  # `Read_file(` is read as `read_file`
    if word is None or not any(name.startswith(word[0].lower()) for name in names):
        return "answer"
    if word.end() == len(rest):
        return None  # `read` may still become `read_file(`
    return "call" if rest[word.end()] == "(" and word[0].lower() in names else "answer"


def _json_opening(rest: str, answer: str) -> Opening | None:
    key = _FIRST_KEY.match(rest)
    if key is None:
        return None if _KEY_BEGUN.fullmatch(rest) else "call"
    if key[1] == "answer":
        return "answer"
    if key[1] != "name":
        return "call"
    value = _NAME.match(rest, key.end())
    if value is None:
        return None if key.end() == len(rest) else "call"
    name, closed = value[1], value[2]
    if closed:
        return "answer" if name == answer else "call"
    return None if answer.startswith(name) else "call"  # told apart as soon as the name leaves `final_answer`


def _fenced_opening(rest: str, answer: str, tools: Collection[str]) -> Opening | None:
    if not rest.startswith("```"):
        return None if "```".startswith(rest) else "answer"  # `code` in a sentence
    fence = _FENCE.match(rest)
    if fence is None:
        return None  # the fence's language has not ended yet
    if fence[1].lower() not in _CALL_FENCES:
        return "answer"  # ```python: code in an answer
    inner = opening(rest[fence.end() :], answer, tools)
    return None if inner is None and len(rest) <= UNDECIDED_MAX else inner or "answer"


def free(request: ConstrainedRequest) -> ModelRequest:
    """`request` without its reply schema, asking for its first token's alternatives."""
    return ModelRequest(**{**{f.name: getattr(request, f.name) for f in fields(ModelRequest)},
                           "first_tokens": FIRST_TOKENS})


def call_share(first_tokens: Collection[tuple[str, float]], answer: str, tools: Collection[str]) -> float:
    """The probability the model gave to first tokens that may open a call."""
    return sum(p for token, p in first_tokens if opening(token, answer, tools) != "answer")


def fits(line: str, tools: Collection[ToolSpec]) -> bool:
    """Whether the user's `line` shares a word (four letters or more, a plural's `s` aside) with an offered tool's
    name or description."""
    def words(text: str) -> set[str]:
        found = re.findall(r"[a-z]{4,}", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower())
        return {w.removesuffix("s") for w in found} - _STOP
    asked = words(line)
    return any(asked & words(f"{tool.name.replace('_', ' ').replace('.', ' ')} {tool.description}") for tool in tools)


def held_to_answer(request: ConstrainedRequest) -> ConstrainedRequest:
    """`request` whose schema admits only the answer."""
    branches = [b for b in request.reply_schema.get("anyOf", []) if b["properties"]["name"]["const"] == request.answer]
    return replace(request, reply_schema={**request.reply_schema, "anyOf": branches})


def _doubted(request: ConstrainedRequest, text: str, share: float) -> bool:
    """A call opened in JSON the model was not sure of (`CALL_DOUBT`), for a line no offered tool fits."""
    return not request.line_fits and 0 < share < CALL_DOUBT and text.lstrip()[:1] in "{`"


def schema_tools(schema: dict[str, Any]) -> list[str]:
    """The tool names of a `reply_schema`: each branch's `name` constant."""
    return [branch["properties"]["name"]["const"] for branch in schema.get("anyOf", [])]


Stream = Callable[[ModelRequest], AsyncIterator[StreamEvent]]


async def answer_or_call(stream: Stream, request: ConstrainedRequest) -> AsyncIterator[StreamEvent]:
    """The events of `request` sent free; when its reply opens a call, those of `request` with its schema instead.

    Nothing of the free reply is given out before its opening is told, so the events are those of one reply:
    the free one (an answer) or the constrained one (a call, or an answer the model gives under the schema)."""
    assert request.answer is not None
    answer, tools = request.answer, schema_tools(request.reply_schema)
    held: list[StreamEvent] = []
    text = ""
    verdict: Opening | None = None
    share = 0.0
    events = stream(free(request))
    try:
        async for event in events:
            if verdict == "answer":
                yield event
                continue
            held.append(event)
            if isinstance(event, TextDelta):
                if not text:  # the first token's alternatives come with the first text
                    share = call_share(event.first_tokens, answer, tools)
                text += event.text
                verdict = opening(text, answer, tools)
                if verdict == "answer" and share >= CALL_SHARE and text.lstrip()[:1] not in "{[<`":
                    verdict = "call"  # prose, with a call close behind it
            elif isinstance(event, Finished):
                verdict = "answer"  # it ended before it could be told: it is what it is
            if verdict == "call":
                break
            if verdict == "answer":
                for item in held:
                    yield item
    finally:
        await _close(events)
    log.debug("free reply %s: %r, call share %.2f", verdict, text[:60], share)
    if verdict is None:  # the stream ended, without `Finished`, before its opening was told
        for item in held:
            yield item
    elif verdict == "call":
        events = stream(held_to_answer(request) if _doubted(request, text, share) else request)
        try:
            async for event in events:
                yield event
        finally:
            await _close(events)


async def _close(events: AsyncIterator[StreamEvent]) -> None:
    if (aclose := getattr(events, "aclose", None)) is not None:
        await aclose()
