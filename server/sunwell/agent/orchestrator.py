"""One place runs every tool call, whatever the tool (the idea of codex's core/src/tools/orchestrator.rs):

0. repair, as the call comes in (`repaired`): a misspelt tool name respelled, unambiguous argument type slips fixed,
   each said in a notice (the history keeps the repaired call);
1. validate, once: the tool is offered at this trust level, its arguments are a JSON object its schema accepts,
   read into what the tool takes (`Tool.bind`: an instance of its arguments model, a dynamic tool's dict), which
   is what its subject, preview, stage and handler are given from then on;
2. a read this turn already answered is answered again by the turn's memory instead of running;
   then the `pre_tool` hooks (sunwell/hooks/), which may deny the call but never let it skip what follows;
3. policy and approval on what the call declares it touches (agent/gate.py): dry run, rate limit, protected
   paths always asked, the approval policy;
4. staging: a call the gate wants asked about with its effects runs staged (the tool's `stage`); any other call
   runs as it is (run_command sandboxes itself);
5. the run, under the tool's time limit, every failure an error result the model reads (tools/executor.py);
6. review of staged effects: the user sees what it changed, then it is applied or discarded, here, not by the tool;
7. the `post_tool` hooks' notes on a call that ran; the result event, the turn's memory, one audit line; in a durable
   turn, the result in the session log as soon as the call ends, and before a call runs, a `step` row saying so
   (agent/resume.py reads them after a crash); a call the crash cut off is the tool's to settle (`cut_off`).

Read-only calls of one response run together; any other call runs alone, in order. Like the gate, nothing here reads
a tool's arguments: they go to the tool, to the approval request and to the audit as they are (the audit keeps only
the size and hash of those the tool's model marks as file text, `Tool.content`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sunwell.agent.call_memory import CallMemory
from sunwell.agent.gate import Gate, Verdict
from sunwell.agent.turn import TurnLog
from sunwell.hooks import TurnHooks
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.executor import answered, attempt, execute, failed, masked
from sunwell.tools.policy.audit import AuditLog
from sunwell.tools.validation import coerce_arguments, unknown_tool_error
from sunwell.vocabulary import canonical_tool_name
from sunwell.wire.events import NoticeEvent, ToolResultEvent
from sunwell.wire.messages import ToolCall, ToolError, ToolResultMessage


class RunClock:
    """How long a call's tool ran (`durationMs`): the time it waited for someone to approve it is not counted."""

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds += time.monotonic() - started

    def ms(self) -> int:
        return int(self.seconds * 1000)


@dataclass
class Orchestrator:
    tools: Sequence[Tool]
    """Offered this turn (already filtered by trust and lens)."""
    catalogue: Sequence[Tool]
    """Every tool Sunwell knows, so a call above the trust level is `permission`, not `unknown_tool`."""
    trust: Trust
    ctx: ToolContext
    log: TurnLog
    gate: Gate | None = None
    """None runs valid calls directly (read-only tools only)."""
    audit: AuditLog | None = None
    memory: CallMemory | None = None
    """The turn's: it may answer a repeated read, and hears of every result."""
    durable: bool = False
    """Log each call's steps and its result message as they happen (the main turn's calls; not a sub-agent's)."""
    hooks: TurnHooks | None = None
    """`pre_tool`, `post_tool` around each call."""

    def offered(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def known(self, name: str) -> Tool | None:
        return next((t for t in self.catalogue if t.name == name), None) or self.offered(name)

    def repaired(self, call: ToolCall) -> ToolCall:
        """`call` with a misspelt tool name and unambiguous argument type slips fixed, each fix told in a notice.

        The name is looked up once, among every tool Sunwell knows: a call to one above the trust level gets that
        tool's name too, and is refused by name (`permission`) when it runs. The `toolCall` event showed the call as
        the model made it; the history and the session keep the fixed one."""
        if self.known(call.name) is None:
            name = canonical_tool_name(call.name, list(dict.fromkeys(t.name for t in [*self.catalogue, *self.tools])))
            if name is not None:
                if self.offered(name) is not None:
                    self.log.emit(NoticeEvent(level="info", code="repaired_tool_name",
                                              message=f"ran {name} for the call to '{call.name}'"))
                call = call.model_copy(update={"name": name})
        tool = self.offered(call.name)
        if tool is not None and call.raw is None:
            arguments, notes = coerce_arguments(tool.parameters, call.arguments)
            if notes:
                self.log.emit(NoticeEvent(level="info", code="coerced_arguments",
                                          message=f"{call.name}: {'; '.join(notes)}"))
                call = call.model_copy(update={"arguments": arguments})
        return call

    async def run_all(self, calls: Sequence[ToolCall],
                      settled: Mapping[str, ToolResultMessage] | None = None) -> list[ToolResultMessage]:
        """Every call of one response; results in call order. `settled`: results already had (a resumed turn's),
        by call id: those calls are not run."""
        settled = settled or {}
        results: list[ToolResultMessage] = []
        batch: list[ToolCall] = []
        for call in calls:
            if call.id in settled:
                results += await asyncio.gather(*(self._answer(c) for c in batch))
                batch = []
                results.append(settled[call.id])
                continue
            tool = self.offered(call.name)
            if tool is not None and tool.read_only:
                batch.append(call)
                continue
            results += await asyncio.gather(*(self._answer(c) for c in batch))
            batch = []
            results.append(await self._answer(call))
        results += await asyncio.gather(*(self._answer(c) for c in batch))
        return results

    async def _answer(self, call: ToolCall) -> ToolResultMessage:
        result = await self.run(call)
        if self.durable:
            self.log.record(result)
        return result

    async def run(self, call: ToolCall) -> ToolResultMessage:
        clock = RunClock()
        bound = self.bind(call)
        verdict = Verdict(bound if isinstance(bound, ToolError) else None)
        tool = self.offered(call.name)
        if verdict.error is None and self.memory is not None:
            again = self.memory.earlier(call, tool)
            if again is not None:
                return again
        if verdict.error is None and self.hooks is not None and (denial := await self.hooks.before(call)):
            verdict = Verdict(denial, "deny", "hook")
        if verdict.error is None and self.gate is not None:
            verdict = await self.gate.admit(tool, call, bound, self.ctx, self.log.session, self.log.turn,
                                            self.log.emit)
        if verdict.error is not None:
            result = failed(call, verdict.error)
        elif verdict.stage_first:
            result, verdict = await self._staged(tool, call, bound, clock)
        else:
            self._step(call, "run")
            with clock.running():
                result = await execute(tool, call, bound, self._own(call))
        if verdict.error is None and self.hooks is not None:
            result = await self.hooks.after(call, result)
        duration_ms = clock.ms()
        self.log.emit(ToolResultEvent(call_id=result.call_id, name=result.name, ok=result.ok, output=result.output,
                                      error=result.error, duration_ms=duration_ms, data=result.data))
        if self.memory is not None:
            self.memory.record(call, tool, result, denied=verdict.decision == "deny" and verdict.by == "user")
        if self.audit is not None:
            known = self.known(call.name)
            self.audit.record(session=self.log.session, turn=self.log.turn, tool=call.name, call_id=call.id,
                              arguments=call.arguments, content=known.content if known else frozenset(),
                              decision=verdict.decision, by=verdict.by, ok=result.ok,
                              error=result.error and result.error.code, duration_ms=duration_ms)
        return result

    async def _staged(self, tool: Tool, call: ToolCall, arguments: Any,
                      clock: RunClock) -> tuple[ToolResultMessage, Verdict]:
        """Run staged, ask with what it changed, apply on yes; the staged copy is discarded whatever happens. The
        `clock` runs while the tool does, not while the person looks at what it changed."""
        assert tool.stage is not None and self.gate is not None
        ctx, stage = self.ctx, tool.stage
        self._step(call, "staged")
        with clock.running():
            staged = await attempt(tool, ctx, lambda: stage(arguments, ctx))
        if isinstance(staged, ToolError):
            return failed(call, staged), Verdict()
        try:
            with clock.running():
                effects = await attempt(tool, ctx, staged.preview)
            if isinstance(effects, ToolError):
                return failed(call, effects), Verdict()
            verdict = await self.gate.review(tool, call, effects, self.log.session, self.log.turn, self.log.emit)
            if verdict.error is not None:
                refusal = verdict.error.message + "; nothing it changed was applied"
                return failed(call, masked(verdict.error.model_copy(update={"message": refusal}), ctx)), verdict
            self._step(call, "run")
            with clock.running():
                output = await attempt(tool, ctx, staged.apply)
            return (failed(call, output) if isinstance(output, ToolError) else answered(call, output, ctx)), verdict
        finally:
            await staged.discard()

    async def cut_off(self, call: ToolCall) -> str | None:
        """What the tool says of `call`, which the end of the process that ran it cut off (`Tool.cut_off`: it may
        record for undo what the call did): a note for the user and the model, or None."""
        tool = self.offered(call.name)
        if tool is None or tool.cut_off is None:
            return None
        bound = self.bind(call)
        if isinstance(bound, ToolError):  # it never ran: it was refused before, as it would be now
            return None
        own, settle = self._own(call), tool.cut_off
        note = await attempt(tool, own, lambda: settle(bound, own))
        return f"what it did could not be looked at: {note.message}" if isinstance(note, ToolError) else note

    def _own(self, call: ToolCall) -> ToolContext:
        """The context a call runs with: in a durable turn, with the key of what it keeps for after a crash."""
        return self.ctx.calling(call.id, f"{self.log.session}/{call.id}" if self.durable else None)

    def _step(self, call: ToolCall, phase: str) -> None:
        if self.durable:
            self.log.step(call.id, phase)

    def bind(self, call: ToolCall) -> Any:
        """The call's arguments as its tool takes them (`Tool.bind`), or the ToolError that says why it cannot run
        as it is: an unknown tool, one not offered, arguments that are not a valid object for it."""
        tool = self.offered(call.name)
        if tool is None:
            known = self.known(call.name)
            if known is None:
                return unknown_tool_error(call.name, call.arguments, self.tools)
            if known.min_trust > self.trust:
                refusal = ToolError(
                    code="permission",
                    message=f"{call.name} needs trust level {known.min_trust.name}; this session is at {self.trust.name}",
                    suggestion="use the tools you were offered, or ask the user to raise the trust level")
            else:
                refusal = ToolError(code="permission", message=f"{call.name} is not allowed in this session (the "
                                                               "lens' tool policy or the user's tool list)",
                                    suggestion="use the tools you were offered")
            held_back = self.gate.dry_run_refusal(known, but=refusal.message) if self.gate is not None else None
            return held_back or refusal
        if call.raw is not None:
            return ToolError(code="validation", message=f"the arguments of {call.name} are not a valid JSON object",
                             suggestion='send the arguments as one JSON object, e.g. {"path": "src/app.py"}')
        try:
            return tool.bind(call.arguments)
        except ToolFailure as failure:
            return failure.error
