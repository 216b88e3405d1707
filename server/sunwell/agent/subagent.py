"""`task`'s sub-agents: a nested turn of the running one, read-only, whose final answer is the call's result.

A sub-agent gets the parent turn's model and provider stack, but a plan of its own (agent/plan.py): only the
harmless read tools its parent was offered (listing, search, reading, code intelligence, kv_get) and web_fetch for the
hosts the user allowed (anything else is denied by policy: nobody is asked on its behalf), trust capped at read_only,
never `task` or `ask_user`; its own context budget, starting empty; `subagent.max_tool_turns` round trips.

Its events go out on the parent's stream (the same turn, `seq` continuing) marked with `parentCallId`, the call's
id, and into the session's log, so a client draws them inside the call's card, live or replayed; its `done`, its
context meter and its words are not sent (`_ITS_OWN`). Its messages are never recorded: the parent's history gets
the answer alone. Its tool calls and tokens count in the parent turn's `done`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from sunwell.agent.context import SessionContext
from sunwell.agent.gate import Gate
from sunwell.agent.loop import Turn, TurnConfig
from sunwell.agent.plan import plan_turn
from sunwell.agent.questions import TurnClient
from sunwell.agent.turn import TurnLog
from sunwell.tools.base import ToolContext, ToolFailure, Trust
from sunwell.tools.policy.approval import ApprovalPolicy
from sunwell.wire.events import Event, NoticeEvent
from sunwell.wire.messages import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from sunwell.config import Settings

NOT_FOR_SUBAGENTS = {"update_plan", "task", "ask_user"}
"""The plan is the parent's to show; sub-agents start none and ask no one."""
NETWORK_READS = {"web_fetch"}
INSTRUCTIONS = (
    "You are a sub-agent doing one research job for another agent, which sees only your final answer. Explore with "
    "your read-only tools, then answer with what was asked: concrete paths, line numbers, names and short quotes, "
    "no more than needed. You cannot change anything or ask the user. Stop as soon as you can answer.")


_ITS_OWN = {"done", "contextUsage", "text", "thinking"}
"""Not sent: its `done` and window are its own business, and its words would read as the answer's in a client that
joins every text delta of the turn (its answer is the call's result)."""


class SubagentLog:
    """A TurnLog's face for the nested turn: its events go to the parent's stream marked with the call, its
    messages and the compactions of its history are nobody's record."""

    def __init__(self, parent: TurnLog, call_id: str) -> None:
        self.parent, self.call_id = parent, call_id
        self.secrets = parent.secrets
        self.store = _Unrecorded()
        self.nested_calls = 0  # a sub-agent starts none
        self.nested_usage = None

    @property
    def session(self) -> str:
        return self.parent.session

    @property
    def turn(self) -> str:
        return self.parent.turn

    @property
    def seq(self) -> int:
        return self.parent.seq

    def emit(self, event: Event) -> Event:
        if event.type in _ITS_OWN:
            return event
        event.__dict__["parent_call_id"] = self.call_id  # as TurnLog.emit writes its fields
        if event.type == "toolCall":
            self.parent.nested_calls += 1
        return self.parent.emit(event)

    def record(self, message: Message) -> None:
        pass


class _Unrecorded:
    """The session store as a sub-agent's context keeper sees it: its history is its own, never the session's."""

    def append_compaction(self, *args: Any) -> None:
        pass

    def append_elision(self, *args: Any) -> None:
        pass


@dataclasses.dataclass
class Subagents:
    """What a turn's `task` calls start from: the parent turn's config, its log, the settings."""

    parent: TurnConfig
    log: TurnLog
    settings: Settings

    async def run(self, call_id: str, description: str, prompt: str) -> str:
        parent, plan = self.parent, self.parent.plan
        trust = min(plan.trust, Trust.read_only)
        tools = [tool for tool in plan.tools if tool.min_trust <= trust and tool.name not in NOT_FOR_SUBAGENTS
                 and (tool.harmless or tool.name in NETWORK_READS)]
        log = SubagentLog(self.log, call_id)
        ctx = _context(parent.tool_ctx, log, self.settings)
        context = SessionContext(ratio=plan.budget.context.ratio, calibrated=plan.budget.context.calibrated)
        own = await plan_turn(self.settings, plan.spec, plan.capabilities, (plan.window, plan.window_source), tools,
                              (trust, None), jail=ctx.jail, lens=None, instructions=[INSTRUCTIONS], context=context,
                              text=prompt)
        gate = parent.gate
        config = TurnConfig(
            plan=dataclasses.replace(own, catalogue=plan.catalogue), provider=parent.provider, tool_ctx=ctx,
            summariser=parent.summariser, audit=parent.audit, max_tool_turns=self.settings.subagent.max_tool_turns,
            gate=Gate(ApprovalPolicy(mode="deny"), dry_run=gate.dry_run if gate else False,
                      limiter=gate.limiter if gate else None), durable=False)
        turn = Turn(config, log, [])
        done = await turn.run(UserMessage(text=prompt))
        if done.usage is not None:
            self.log.nested_usage = done.usage if self.log.nested_usage is None else self.log.nested_usage + done.usage
        if done.status == "cancelled":
            raise asyncio.CancelledError  # the parent's turn is being cancelled: it ends too
        if done.status == "error":
            raise ToolFailure("execution", f"the sub-agent ({description}) failed: {done.error}",
                              "do the work with your own tools, or give it a narrower job")
        answer = next((m.text for m in reversed(turn.history) if isinstance(m, AssistantMessage) and m.text.strip()),
                      "")
        return answer.strip() or f"The sub-agent ({description}) gave no answer."


def _context(parent: ToolContext, log: SubagentLog, settings: Settings) -> ToolContext:
    def notify(level: str, code: str, message: str) -> None:
        log.emit(NoticeEvent(level=level, code=code, message=message))  # type: ignore[arg-type]

    asks_no_one = TurnClient(parent.client, settings, refused=frozenset({"ask", "approve", "elicit", "openUrl"}))
    return dataclasses.replace(parent.lending(subagent=None, notify=notify), client=asks_no_one)
