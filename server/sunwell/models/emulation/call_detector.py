"""Tool calls a model wrote as text, found as the text streams (`CallDetector`), with the same result however the
stream was chunked. What is no call (cut short, unreadable, of a tool not offered) is a notice that quotes it.

Candidates are found and read by `normalize.py` (each open-model family's markers by `dialects.py`); a reply that
is nothing but Python calls by `pythonic.py`. Tools are given as names, `ToolSpec`s or an `Offered` mapping; with
their schemas, arguments written as bare text are typed (`arguments.typed_value`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from sunwell.models.base import (
    Notice,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.emulation import families
from sunwell.models.emulation.between_calls import Echo, Separator
from sunwell.models.emulation.found_calls import Extraction, Offered, offered
from sunwell.models.emulation.normalize import settle
from sunwell.models.emulation.pythonic import PYTHONIC_OPEN, PYTHONIC_PREFIX, pythonic_calls
from sunwell.models.emulation.span_scanner import SpanScanner
from sunwell.wire.messages import AssistantMessage, Message, ToolSpec

EMULATED_ID_PREFIX = "emu_"
CUT_OFF_NOTICE = "tool_call_cut_off"
UNREADABLE_NOTICE = "tool_call_unreadable"
UNKNOWN_NOTICE = "tool_call_unknown"


STRIKE, STRIKE_END = "<s>", "</s>"  # HTML's strikethrough; `</s>` alone is also a turn end (families.CONTROL)

class CallDetector:
    """Finds tool calls in streamed text.

    Prose flows out as `TextDelta` as soon as it cannot be part of a call; a recognised call becomes
    `ToolCallStarted`/`ToolCallArgs`/`ToolCallDone` (after a `Notice` per repair), its text never shown; a
    dialect's thinking channel becomes `ThinkingDelta`. Held text that turns out not to be a call is released
    as text.
    """

    def __init__(self, tools: Iterable[str | ToolSpec] | Offered, *, first_id: int = 1,
                 unknown_as_calls: bool = False) -> None:
        self._tools = offered(tools)
        self._unknown_as_calls = unknown_as_calls
        """Emulating: a call of a tool that was not offered still goes to the loop, which runs nothing and answers
        `unknown_tool`, so the model can correct itself (the loop's helpful answer, issue 47)."""
        self._scanner = SpanScanner(self._tools)
        self._buf = ""
        self._next_id = first_id
        self.calls = 0
        self._separator, self._echo = Separator(), Echo()
        self._pythonic: bool | None = None
        """Whether the reply began as a Python call (then it is held to the end: only a whole reply is one)."""
        self._ended = False
        """The turn's end token came (`families.TURN_END`)."""
        self._begun = False
        """The reply's start is past (a leading empty-thinking end is dropped there, `families.EMPTY_THINKING_ENDS`)."""
        self._struck, self._tail = False, ""
        """The answer opened HTML's strikethrough `<s>`: a `</s>` now closes it (else it is a turn's end token)."""

    def feed(self, delta: str) -> list[StreamEvent]:
        self._buf += delta if not self._ended else ""
        return self._drain(final=False)

    def finish(self, *, cut_off: bool = False) -> list[StreamEvent]:
        """The rest of the text. `cut_off`: the reply ended by length or its stream broke, so a call still open
        is dropped (with a notice), never run."""
        return self._drain(final=True, cut_off=cut_off)

    def _drain(self, final: bool, cut_off: bool = False) -> list[StreamEvent]:
        if not self._begun:  # a `</think>` the reply begins with closed the template's thinking, empty
            if (drop := families.empty_thinking_end(self._buf, final)) == -1:
                return []
            self._buf, self._begun = self._buf[drop or 0 :], True
        if self._pythonic is None:
            if PYTHONIC_OPEN.match(self._buf):
                self._pythonic = True
            elif not final and (not self._buf.strip() or PYTHONIC_PREFIX.fullmatch(self._buf)):
                return []  # `The` may still become `The(`
            else:
                self._pythonic = False
        if self._pythonic:
            if not final:
                return []
            self._pythonic = False
            if found := pythonic_calls(self._buf, self._tools):
                self._buf = ""
                return self._call_events(found)
        events: list[StreamEvent] = []
        text: list[str] = []
        while self._buf:
            kind, end = self._scanner.step(self._buf, 0, final)
            if kind == "wait":
                break
            span, self._buf = self._buf[:end], self._buf[end:]
            if span in families.TURN_END:  # what a server that did not stop there wrote after it is no reply
                self._buf, self._ended = "", True
                break
            if self._echo.repeats(kind, span):
                continue
            if span == STRIKE_END and self._struck:
                self._struck = False
                text.append(self._separator.text(span))
                continue
            found = settle(kind, span, self._tools, cut_off=cut_off)
            self._echo.saw(span, found)
            if found is None:
                seen, self._tail = self._tail + span, (self._tail + span)[-2:]  # `<` and `s>` come apart
                self._struck = self._struck or STRIKE in seen
                text.append(self._separator.text(span))
                continue
            text += [self._separator.found(found), found.remaining_text]
            if found.calls or found.thinking or found.cut_off or found.unreadable or found.unknown:
                if "".join(text):
                    events.append(TextDelta("".join(text)))
                text = []
            if found.thinking:
                events.append(ThinkingDelta(found.thinking))
            if self._unknown_as_calls:
                found.calls, found.unknown = found.calls + found.unknown, []
            events += _notices(found, span)
            events += self._call_events(found)
        if final:
            text.append(self._separator.held)
            self._separator.held = ""
        if "".join(text):
            events.append(TextDelta("".join(text)))
        return events

    def _call_events(self, found: Extraction) -> list[StreamEvent]:
        events: list[StreamEvent] = [Notice(code="tool_call_repaired", message=r) for r in found.repairs]
        for call in found.calls:
            call_id = f"{EMULATED_ID_PREFIX}{self._next_id}"
            self._next_id += 1
            self.calls += 1
            # The text is for the `toolCallDelta` event only: the loop takes the object as it was read.
            args = call.raw if call.raw is not None else json.dumps(call.arguments, ensure_ascii=False)
            parsed = call.arguments if call.raw is None else None
            events += [ToolCallStarted(call_id, call.name), ToolCallArgs(call_id, args),
                       ToolCallDone(call_id, call.name, args, parsed=parsed)]
        return events


def _notices(found: Extraction, span: str) -> list[StreamEvent]:
    """What the user is told of a call that is not one (issue 47): the text the model wrote goes with it, so nothing
    it said is lost, and nothing of it runs."""
    quoted = span.strip() if len(span.strip()) <= 400 else span.strip()[:400] + "…"
    out: list[StreamEvent] = [Notice(code=CUT_OFF_NOTICE, level="warning", message=(
        f"The reply was cut off inside a call to {name}; it was not run. It read: {quoted}")) for name in found.cut_off]
    out += [Notice(code=UNREADABLE_NOTICE, level="warning", message=(
        f"The model wrote a call that could not be read; nothing was run. It read: {quoted}"))
        for _ in found.unreadable]
    out += [Notice(code=UNKNOWN_NOTICE, level="warning", message=(
        f"The model wrote a call to {name}, which is not offered; it was not run."))
        for name in dict.fromkeys(call.name for call in found.unknown)]
    return out


def next_emulated_id(messages: Iterable[Message]) -> int:
    """The first free `emu_<n>` in a conversation, so a resumed session never reuses a call id."""
    used = [int(m[1]) for msg in messages if isinstance(msg, AssistantMessage) for c in msg.tool_calls
            if (m := re.fullmatch(re.escape(EMULATED_ID_PREFIX) + r"(\d+)", c.id))]
    return max(used, default=0) + 1
