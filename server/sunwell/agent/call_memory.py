"""What a turn remembers of its tool calls, to nudge a model that goes round in circles.

- A read it already made in this turn is answered from the earlier result, with a note to answer now, not run.
- A call the user denied in this turn, made again unchanged, is denied again with the user's words: the person is
  not asked the same question twice in one turn.
- The same call failing the same way: told to change approach at GUARD_WARN, the turn stopped at GUARD_STOP.
- A small model that repeats a read, a write or a failing call, or answers nothing, is asked for its answer from
  the results (`answer_now`; the loop then sends one request built from `results_for_answer`).

The orchestrator asks `earlier` before a call runs and tells `ran` each result; the loop reads the rest.
"""

from __future__ import annotations

import json

from sunwell.agent.turn import TurnLog
from sunwell.tools.base import Tool
from sunwell.wire.events import NoticeEvent, ToolResultEvent
from sunwell.wire.messages import ToolCall, ToolResultMessage

GUARD_WARN, GUARD_STOP = 3, 5
REPEAT_NOTE = ("[Sunwell] You already made this exact call in this turn; here is its result again. "
               "If it answers the user's question, reply to the user now instead of calling more tools.")


class LoopGuardTripped(Exception):
    """The model keeps making the same failing call."""


class CallMemory:
    def __init__(self, log: TurnLog, small_model: bool) -> None:
        self.log, self.small_model = log, small_model
        self.finished: dict[str, ToolResultMessage] = {}
        """Results by call id, as each call ends (a cancelled turn keeps the ones it has)."""
        self.ran: list[tuple[ToolCall, ToolResultMessage]] = []
        """Every call run this turn, in order."""
        self.answer_now = False
        """A small model going round in circles: its next request is for the answer."""
        self._answered: dict[tuple[str, str], ToolResultMessage] = {}  # successful read-only calls
        self._written: set[tuple[str, str]] = set()  # successful writes
        self._failures: dict[tuple[str, str, str], int] = {}
        self._denied: dict[tuple[str, str], ToolResultMessage] = {}  # calls the user said no to

    def earlier(self, call: ToolCall, tool: Tool) -> ToolResultMessage | None:
        """The answer to a read this turn already made, or to a call the user already denied (its result event
        emitted), or None: run it."""
        if (denied := self._denied.get(_key(call))) is not None and denied.error is not None:
            error = denied.error.model_copy(update={"message": "already denied in this turn: " + denied.error.message})
            self.log.emit(ToolResultEvent(call_id=call.id, name=call.name, ok=False, output="", error=error,
                                          duration_ms=0))
            self.finished[call.id] = result = ToolResultMessage(call_id=call.id, name=call.name, output="", ok=False,
                                                                error=error)
            return result
        earlier = self._answered.get(_key(call)) if tool.read_only else None
        if earlier is None:
            return None
        result = earlier.model_copy(update={"call_id": call.id, "name": call.name}).with_note(before=REPEAT_NOTE)
        self.enough(f"the model asked {call.name} again for a result it already has")
        # the card shows what the tool returns; the nudge to the model is said to the user as a notice
        self.log.emit(NoticeEvent(level="info", code="repeated_call", message=(
            f"the model repeated {call.name} with the same arguments; it was given the earlier result again")))
        self.log.emit(ToolResultEvent(call_id=call.id, name=call.name, ok=True, output=earlier.output,
                                      error=None, duration_ms=0, data=earlier.data))
        self.finished[call.id] = result
        return result

    def record(self, call: ToolCall, tool: Tool | None, result: ToolResultMessage, *, denied: bool = False) -> None:
        """A call's result, as it ends; `denied`: the user said no to it."""
        self.finished[call.id] = result
        self.ran.append((call, result))
        key = _key(call)
        if denied:
            self._denied[key] = result
        if result.ok and tool is not None and tool.read_only:
            if any(r.name == result.name and r.output == result.output for r in self._answered.values()):
                # e.g. the same file again with the default offset spelt out
                self.enough(f"the model asked {call.name} again for a result it already has")
            self._answered[key] = result
        elif result.ok and tool is not None and tool.risk == "write":
            if key in self._written:  # it ran (a write may restore what something changed since), then: answer
                self.enough(f"the model made the same {call.name} again")
            self._written.add(key)

    def guard(self, calls: list[ToolCall], results: list[ToolResultMessage]) -> None:
        """The same call failing the same way: told to change approach at 3, the turn stopped at 5 (a small model is
        asked for its answer at 2)."""
        for call, result in zip(calls, results, strict=True):
            if result.ok:
                continue
            key = (call.name, json.dumps(call.arguments, sort_keys=True), result.error.code)
            self._failures[key] = count = self._failures.get(key, 0) + 1
            if count >= 2:
                self.enough(f"the model repeated a failing {call.name} call unchanged")
            if count >= GUARD_STOP:
                raise LoopGuardTripped(f"stopped: {call.name} failed the same way {count} times "
                                       f"({result.error.code}: {result.error.message})")
            if count >= GUARD_WARN:
                result.error.suggestion = (f"this exact call has failed {count} times; do not repeat it. "
                                           "Change approach or ask the user. " + (result.error.suggestion or ""))

    def enough(self, why: str) -> None:
        """A small model going round in circles: its next request is for the answer."""
        if self.small_model and not self.answer_now:
            self.answer_now = True
            self.log.emit(NoticeEvent(level="info", code="answer_from_results",
                                      message=f"{why}; asking it to answer from the results"))

    def results_for_answer(self) -> list[tuple[str, str]]:
        """(the call, what it returned) for the answer request: the calls that worked, or all if none did (failed
        calls are noise the model has moved past)."""
        ran = [(c, r) for c, r in self.ran if r.ok] or self.ran
        return [(f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})",
                 f"returned:\n{result.output}" if result.ok else f"failed: {result.content_for_model()}")
                for call, result in ran]


def _key(call: ToolCall) -> tuple[str, str]:
    return call.name, json.dumps(call.arguments, sort_keys=True)
