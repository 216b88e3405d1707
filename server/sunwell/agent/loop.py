"""The tool loop: stream a response, have its calls run, feed the results back, until the model answers.

What every request carries (tools, system prompt, window, budget) was decided before the turn, in its plan
(agent/plan.py); the provider it streams from retries, emulates and watches the window on its own
(models/factory.py `provider_for`). The calls are run by the orchestrator (agent/orchestrator.py); what the turn
remembers of them to nudge a model going round in circles is agent/call_memory.py. Every failure of a call is data
the model reads; provider faults end the turn with status `error`; cancellation ends it with status `cancelled`.
Every request is fitted to the context window first (agent/context_keeper.py); a refusal for length corrects the
window and is retried once, made smaller, never blindly. Whatever happens, the turn emits exactly one `done`, last,
and leaves the session valid for every provider (each call answered by one result).

Each step is in the session log before the next one starts (a reply, a call about to run, its result), so a turn
whose process died is taken up where it stood (`resume`, agent/resume.py), never running a finished call again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sunwell.agent.call_memory import CallMemory, LoopGuardTripped
from sunwell.agent.compaction import Summariser
from sunwell.agent.context import ContextFull
from sunwell.agent.context_keeper import ContextKeeper
from sunwell.agent.gate import Gate
from sunwell.agent.orchestrator import Orchestrator
from sunwell.agent.plan import Retool, TurnPlan
from sunwell.agent.prompts import ANSWER_FROM_RESULTS, LIMIT_REACHED, answer_from_results, with_note
from sunwell.agent.resume import ResumePoint
from sunwell.agent.turn import TurnLog
from sunwell.hooks import TurnHooks
from sunwell.models import base as stream
from sunwell.models.arguments import parse_arguments
from sunwell.models.base import ContextOverflow, ModelRequest, Provider, ProviderError
from sunwell.tools.base import ToolContext
from sunwell.tools.executor import failed
from sunwell.tools.policy.audit import AuditLog
from sunwell.wire.events import (
    DoneEvent,
    NoticeEvent,
    TextEvent,
    ThinkingEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from sunwell.wire.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolError,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

CUT_OFF = "the process running the turn ended while this call ran; it was not run again"
BROKEN_OFF = "the process running the turn ended while the model's response streamed; this call was never run"


@dataclass(frozen=True)
class TurnConfig:
    """Everything one turn needs besides the conversation."""

    plan: TurnPlan
    provider: Provider
    """The whole stack (models/factory.py `provider_for`): retries, tool calling, the window."""
    tool_ctx: ToolContext
    summariser: Summariser
    """Who summarises when history is compacted: this turn's model, or `compaction_model`."""
    gate: Gate | None = None
    """Dry run, rate limits and approvals; None runs valid calls directly (read-only tools only)."""
    audit: AuditLog | None = None
    notices: Sequence[NoticeEvent] = ()
    """Shown once at the start of the turn (e.g. shell running without a sandbox, tools fitted to the window)."""
    max_tool_turns: int = 50
    on_window_learned: Callable[[int], None] | None = None
    """Called with the corrected window when a length refusal teaches it (the engine keeps it for the session)."""
    hooks: TurnHooks | None = None
    """`pre_tool`/`post_tool` around each call, `turn_end` before `done`."""
    durable: bool = True
    """Each call's steps and result in the session log as they happen; a sub-agent's are nobody's record."""
    retool: Retool | None = None
    """Asked after each tool round for the turn's tools again, if what Sunwell knows changed (agent/plan.py)."""


@dataclass
class _Response:
    """One response as it streams: its parts in order (the parts of the assistant message it becomes)."""

    parts: list[AssistantPart] = field(default_factory=list)
    usage: Usage | None = None
    request: ModelRequest | None = None
    """What was sent (after room was made)."""

    def add_text(self, delta: str) -> None:
        if self.parts and isinstance(last := self.parts[-1], TextPart):
            last.text += delta
        elif delta:
            self.parts.append(TextPart(text=delta))

    def add_thinking(self, delta: str, signature: str | None) -> None:
        last = self.parts[-1] if self.parts else None
        if not (isinstance(last, ThinkingPart) and last.signature is None):  # a signature closes its block
            if not (delta or signature):
                return
            last = ThinkingPart(text="")
            self.parts.append(last)
        last.text += delta
        last.signature = signature or last.signature

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


class Turn:
    def __init__(self, config: TurnConfig, log: TurnLog, history: list[Message]) -> None:
        self.config, self.log, self.history = config, log, history
        self.usage: Usage | None = None
        self.tool_calls = 0
        self._unanswered: dict[str, ToolCall] = {}
        self._request = ""
        plan = self.plan = config.plan
        self.memory = CallMemory(log, plan.capabilities.small)
        self.keeper = ContextKeeper(plan.budget, plan.window_source, config.summariser, log, history,
                                    config.on_window_learned)
        self.calls = Orchestrator(plan.tools, plan.catalogue, plan.trust, config.tool_ctx, log, config.gate,
                                  config.audit, self.memory, hooks=config.hooks, durable=config.durable)

    async def run(self, message: UserMessage) -> DoneEvent:
        self._request = message.content_for_model()
        self._add(message)
        for notice in self.config.notices:
            self.log.emit(notice)
        return await self._finish(self._loop())

    async def resume(self, point: ResumePoint) -> DoneEvent:
        """Take up the logged turn `point` at its next step; `history` was read with the last reply's open calls
        left open (agent/resume.py says what each step becomes)."""
        self._request, self.tool_calls = point.request, point.tool_calls
        self.log.emit(NoticeEvent(level="info", code="resumed", message=_resumed(point)))
        for notice in self.config.notices:
            self.log.emit(notice)
        for call_id, name in point.broken:  # shown from a reply the process died streaming: never run
            self.log.emit(ToolResultEvent(call_id=call_id, name=name, ok=False, output="", duration_ms=0,
                                          error=ToolError(code="interrupted", message=BROKEN_OFF)))
        if point.answered:
            return self._done("completed")
        return await self._finish(self._resumed(point))

    async def _resumed(self, point: ResumePoint) -> str:
        if point.open_calls:
            await self._answer_calls(point.open_calls, await self._settle(point))
        return await self._loop(point.rounds)

    async def _settle(self, point: ResumePoint) -> dict[str, ToolResultMessage]:
        """The open calls' results had before the process died, and an `interrupted` one for each call that was
        running and may have changed something (it is never run again without asking), with what its tool says of
        it (`Tool.cut_off`: what undo puts back)."""
        at = max(i for i, m in enumerate(self.history) if isinstance(m, AssistantMessage))
        settled = {m.call_id: m for m in self.history[at + 1:] if isinstance(m, ToolResultMessage)}
        del self.history[at + 1:]  # put back in call order with the rest once all are answered
        for call in point.open_calls:
            tool = self.calls.offered(call.name)
            if call.id in settled or point.phases.get(call.id) != "run" or (tool is not None and tool.harmless):
                continue
            note = await self.calls.cut_off(call)
            said = f"; {note}" if note else ""
            self.log.emit(NoticeEvent(level="warning", code="call_interrupted", message=(
                f"{call.name} was running when the process ended; it was not run again, since it may have done "
                f"part of its work (call {call.id}): check what it did before asking for it again{said}")))
            result = settled[call.id] = failed(call, ToolError(
                code="interrupted", message=CUT_OFF + said, suggestion="check what it did before trying it again"))
            self.log.emit(ToolResultEvent(call_id=call.id, name=call.name, ok=False, output="", error=result.error,
                                          duration_ms=0))
            self.log.record(result)
        self._unanswered = {call.id: call for call in point.open_calls if call.id not in settled}
        return settled

    async def _finish(self, loop: Awaitable[str]) -> DoneEvent:
        try:
            status = await loop
            if self.config.hooks is not None:  # not on a cancelled turn: the user asked for it to stop
                await self.config.hooks.at("turn_end", status=status)
            return self._done(status)
        except (ProviderError, ContextFull) as exc:
            self._answer_unanswered("interrupted", "the model's response broke off before this call could run")
            return self._done("error", str(exc))
        except LoopGuardTripped as exc:
            self.log.emit(NoticeEvent(level="error", code="loop_guard", message=str(exc)))
            return self._done("error", str(exc))
        except asyncio.CancelledError:
            self._answer_unanswered("interrupted", "the user cancelled the turn")
            return self._done("cancelled")

    async def _loop(self, start: int = 0) -> str:
        cfg, system, small = self.config, self.plan.system, self.plan.capabilities.small
        for round_no in range(min(start, cfg.max_tool_turns), cfg.max_tool_turns + 1):
            tools = self.plan.specs  # the same list all turn, unless a round changed the tools (`_answer_calls`)
            limit = round_no == cfg.max_tool_turns
            final = limit or self.memory.answer_now
            side = (system, tools) if final and small and self.memory.ran else None
            if side:
                response = await self._send(self._answer_request, system, tools)
            else:
                if limit:
                    self._add(UserMessage(text=LIMIT_REACHED.format(n=cfg.max_tool_turns)))
                response = await self._send(partial(self._history_request, system, tools, final), system, tools)
            # a call made despite tool_choice none is not run
            parts = [(ToolCallPart(call=self._repair(p.call)) if isinstance(p, ToolCallPart) else p)
                     for p in response.parts if not (final and isinstance(p, ToolCallPart))]
            calls = [part.call for part in parts if isinstance(part, ToolCallPart)]
            if not (calls or final or response.text.strip()) and small and self.memory.ran:
                self.memory.enough("the model answered nothing")  # and the empty answer is not kept
                self.keeper.measured(response.request, response.usage, response.parts, side)
                continue
            self._add(AssistantMessage(parts=parts))
            # after the answer's row, so that a replayed session shows the meter where the stream had it
            self.keeper.measured(response.request, response.usage, response.parts, side)
            if not calls:
                if not response.text.strip():  # the turn must visibly end, not just stop
                    self.log.emit(NoticeEvent(level="warning", code="empty_answer",
                                              message="The model returned no answer."))
                return "limitReached" if limit else "completed"
            await self._answer_calls(calls)
        raise AssertionError("unreachable")

    async def _answer_calls(self, calls: list[ToolCall], settled: dict[str, ToolResultMessage] | None = None) -> None:
        """Run a reply's calls (each result logged as it ends, by the orchestrator), then add them to the history,
        cut to fit (the cuts logged as an elision)."""
        results = await self.calls.run_all(calls, settled)
        for result in self.keeper.fit_new_results(self.plan.system, self.plan.specs, results):
            self._unanswered.pop(result.call_id, None)
            self.history.append(result)
        self.memory.guard(calls, results)
        if self.config.retool is not None and (plan := self.config.retool(self.plan)) is not None:
            self.plan = plan  # offered, and the calls to them run, from the next request on
            self.calls.tools, self.calls.catalogue = plan.tools, plan.catalogue

    def _history_request(self, system: str, tools: list[ToolSpec], final: bool) -> ModelRequest:
        """The next request: the history as it is now (after any room was made), the answer's reserve; the turn's
        first also says the plan's note after the user's line (never kept: the next request repeats this one but
        for its end, which a server's prompt cache then reads again)."""
        choice = "none" if final else "required" if self.plan.read_first and not self.memory.ran else "auto"
        messages = list(self.history)
        if self.plan.note and not self.memory.ran and messages and isinstance(messages[-1], UserMessage):
            messages[-1] = with_note(messages[-1], self.plan.note)
        return ModelRequest(model=self.plan.spec.model, system=system, messages=messages, tools=tools,
                            tool_choice=choice, max_tokens=self.keeper.budget.reserve,
                            temperature=self.plan.capabilities.temperature, cache_key=self.log.session)

    async def _send(self, build: Callable[[], ModelRequest], system: str, tools: list[ToolSpec]) -> _Response:
        """Make room, then send the request `build` makes. A refusal for length is retried once, smaller, with the
        window corrected; a second one ends the turn (`ContextFull`)."""
        keeper = self.keeper
        await keeper.make_room(system, tools)
        request = build()
        try:
            response = await self._stream(request)
        except ContextOverflow as exc:
            keeper.refused(exc, request)
            await keeper.make_room(system, tools)
            request = build()
            try:
                response = await self._stream(request)
            except ContextOverflow as again:
                raise keeper.cannot_fit(f"the server refused the request for length again after making room "
                                        f"({again})") from again
        response.request = request
        return response

    async def _stream(self, request: ModelRequest) -> _Response:
        out = _Response()
        emit = self.log.emit
        async for ev in self.config.provider.stream(request):
            match ev:
                case stream.TextDelta(text=delta):
                    out.add_text(delta)
                    emit(TextEvent(delta=delta))
                case stream.ThinkingDelta(text=delta, signature=signature):
                    out.add_thinking(delta, signature)
                    if delta:
                        emit(ThinkingEvent(delta=delta))
                case stream.ToolCallStarted(call_id=call_id, name=name):
                    emit(ToolCallStartEvent(call_id=call_id, name=name))
                case stream.ToolCallArgs(call_id=call_id, delta=delta):
                    emit(ToolCallDeltaEvent(call_id=call_id, args_delta=delta))
                case stream.ToolCallDone(call_id=call_id, name=name, arguments=raw, parsed=parsed):
                    call = self._parse_call(call_id, name, raw, parsed)
                    out.parts.append(ToolCallPart(call=call))
                    self.tool_calls += 1
                    self._unanswered[call.id] = call
                    emit(ToolCallEvent(call_id=call.id, name=call.name, arguments=call.arguments, raw=call.raw))
                case stream.Retrying(attempt=attempt, delay=delay, reason=reason):
                    emit(NoticeEvent(level="warning", code="provider_retry",
                                     message=f"{reason}; retrying in {delay:.1f} s (attempt {attempt + 1})"))
                case stream.Notice(code=code, message=message, level=level):
                    emit(NoticeEvent(level=level, code=code, message=message))
                case stream.Finished(usage=usage):
                    if usage is not None:
                        out.usage = usage
                        self.usage = usage if self.usage is None else self.usage + usage
        return out

    def _parse_call(self, call_id: str, name: str, raw: str, parsed: dict[str, Any] | None) -> ToolCall:
        if parsed is not None:  # found in text and read there (its repairs were notices of the stream)
            return ToolCall(id=call_id, name=name, arguments=parsed)
        arguments, repairs = parse_arguments(raw)
        if arguments is None:
            return ToolCall(id=call_id, name=name, arguments={}, raw=raw)
        if repairs:
            self.log.emit(NoticeEvent(level="info", code="repaired_arguments",
                                      message=f"repaired malformed JSON arguments of {name}"))
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def _repair(self, call: ToolCall) -> ToolCall:
        """`call` as the orchestrator repairs it (`Orchestrator.repaired`), awaiting its result."""
        call = self.calls.repaired(call)
        self._unanswered[call.id] = call
        return call

    def _answer_request(self) -> ModelRequest:
        """A small model's last request: the turn's results in one message, no tools (see ANSWER_FROM_RESULTS)."""
        results = self.memory.results_for_answer()
        budget = min(8000, self.keeper.answer_chars(ANSWER_FROM_RESULTS + self._request))
        return ModelRequest(model=self.plan.spec.model, system=ANSWER_FROM_RESULTS, tool_choice="none",
                            messages=[UserMessage(text=answer_from_results(self._request, results, budget))],
                            max_tokens=self.keeper.budget.reserve, temperature=self.plan.capabilities.temperature)

    def _add(self, message: Message) -> None:
        self.history.append(message)
        self.log.record(message)

    def _answer_unanswered(self, code: str, message: str) -> None:
        """Calls already announced get their one result; calls never recorded need none in the history."""
        recorded = {c.id for m in self.history if isinstance(m, AssistantMessage) for c in m.tool_calls}
        for call in list(self._unanswered.values()):
            result = self.memory.finished.get(call.id)  # its result is logged already (the orchestrator's)
            self._unanswered.pop(call.id)
            if result is None:
                result = failed(call, ToolError(code=code, message=message))
                self.log.emit(ToolResultEvent(call_id=call.id, name=call.name, ok=False, output="",
                                              error=result.error, duration_ms=0))
                if call.id in recorded:
                    self.log.record(result)
            if call.id in recorded:
                self.history.append(result)

    def _done(self, status: str, error: str | None = None) -> DoneEvent:
        usage = self.usage
        for spent in (self.keeper.usage, self.log.nested_usage):  # summarising and sub-agents spent tokens too
            if spent is not None:
                usage = spent if usage is None else usage + spent
        event = DoneEvent(status=status, tool_calls=self.tool_calls + self.log.nested_calls, usage=usage, error=error,
                          resumable=status == "error" or None)
        self.log.emit(event)
        return event



def _resumed(point: ResumePoint) -> str:
    if point.failed:
        return "resuming the turn: the request that failed is sent again"
    running = [call.name for call in point.open_calls if point.phases.get(call.id) == "run"]
    return ("resuming the interrupted turn where the log ends" +
            (f" ({len(point.open_calls)} call(s) of the last reply to answer)" if point.open_calls else "") +
            (f"; cut off while running: {', '.join(running)}" if running else ""))
