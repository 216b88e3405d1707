"""`::context` and `::compact`: what the model's context holds and how full it is, and compaction on demand.

Both see the session as its next turn would: the plan that turn makes (agent/plan.py: its system prompt, tools,
window and budget, made by the same function), and the history as the session log rebuilds it (elisions and
compactions applied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sunwell.agent.compaction import Summariser, compact, last_request
from sunwell.agent.context import largest_results, message_tokens, request_tokens
from sunwell.agent.mentions import attachments
from sunwell.agent.plan import TurnPlan
from sunwell.agent.prompts import is_summary
from sunwell.agent.turn_start import summariser as turn_summariser
from sunwell.agent.usage import session_usage, usage_line
from sunwell.models.tokens import BYTES_PER_TOKEN, text_tokens, tools_tokens
from sunwell.tools.base import Trust
from sunwell.wire.events import ContextUsageEvent, Event, NoticeEvent
from sunwell.wire.messages import Message, ToolResultMessage
from sunwell.wire.usage import SessionUsage

if TYPE_CHECKING:
    from sunwell.agent.chat import ChatState
    from sunwell.agent.engine import Engine


@dataclass
class SessionView:
    """A session as its next request would carry it."""

    plan: TurnPlan
    history: list[Message]
    usage: SessionUsage | None = None
    """Tokens and cost of the session's turns so far (None before its first)."""

    @property
    def fixed(self) -> int:
        return request_tokens(self.plan.system, self.plan.specs, [])

    @property
    def used(self) -> int:
        return self.plan.budget.tokens(self.fixed + sum(map(message_tokens, self.history)))


async def session_view(engine: Engine, state: ChatState) -> SessionView:
    """Raises SetupError when the chat's model is no valid model string, or its lens cannot be used."""
    spec = engine.models.spec(state.model)
    lens = engine.lens(state.lens) if state.lens else None
    grant = engine.grant(Trust[state.trust or engine.settings.trust], state.tool_names, lens)
    plan = await engine.plan(spec, state.session, lens, grant, state.instructions())
    history = engine.store.messages(state.session) if state.session else []
    usage = session_usage(engine.store.events(state.session), str(spec), engine.settings.prices) \
        if state.session else None
    return SessionView(plan, history, usage)


def describe_context(view: SessionView) -> list[tuple[str, str]]:
    """The rows `::context` shows about the window."""
    plan, budget, history = view.plan, view.plan.budget, view.history
    used = view.used
    counted = "estimated, calibrated by the server's counts" if budget.context.calibrated else "estimated"
    project = ", ".join(f"`{item.path}` (~{item.size / BYTES_PER_TOKEN:,.0f} tokens"
                        + (f", cut to {item.size:,} of {item.total:,} bytes)" if item.size < item.total else ")")
                        for item in plan.loaded) or "none (no AGENTS.md or .sunwell/instructions.md)"
    results = [m for m in history if isinstance(m, ToolResultMessage)]
    summaries = [m for m in history if is_summary(m)]
    largest = ", ".join(f"`{call}` (~{budget.tokens(size):,})" for call, size in largest_results(history)) or "none"
    return [
        ("window", f"{plan.window:,} tokens ({plan.window_source})"),
        ("tokens", (f"about {used:,} of {plan.window:,} ({100 * used // max(plan.window, 1)}% full, {counted}); "
                   f"room is made above {budget.threshold + budget.reserve:,} (compact_at "
                   f"{budget.compact_at:g}), {budget.reserve:,} kept for the answer")),
        ("instructions", f"~{budget.tokens(text_tokens(plan.system)):,} tokens; project instructions: {project}"),
        ("tool definitions", f"{len(plan.specs)} (~{budget.tokens(tools_tokens(plan.specs)):,} tokens)"),
        ("history", f"{len(history)} messages (~{budget.tokens(sum(map(message_tokens, history))):,} tokens), "
                    f"{len(results)} tool results (~{budget.tokens(sum(map(message_tokens, results))):,})"
                    + (" and a summary of earlier ones" if summaries else "")),
        ("largest results", largest),
        ("attachments", ", ".join(f"`{a.label}` ({a.kind}, ~{budget.tokens(a.tokens):,} tokens)"
                                  for a in attachments(history)) or "none (attach with @ in the chat)"),
        ("usage", usage_line(view.usage) if view.usage and view.usage.turns else "no model turns yet"),
    ]


async def compact_session(engine: Engine, state: ChatState, hint: str) -> tuple[str, list[Event]]:
    """`::compact [what to keep]`: summarise all but the last turn now. The answer and the events to show."""
    if state.session is None:
        return "Nothing to compact: the conversation is empty.", []
    view = await session_view(engine, state)
    live, spec, window = engine.live.get(state.session), view.plan.spec, view.plan.window
    windowed = engine.models.stack(spec, state.session, window).windowed  # what the session's turns summarise with
    own = Summariser(windowed, spec.model, window, engine.settings.provider_attempts, live.context)
    summariser = await turn_summariser(engine, state.session, own)
    history, budget = view.history, view.plan.budget
    user = last_request(history)
    last_turn = sum(map(message_tokens, history[user:])) if user is not None else 0
    done = await compact(history, view.fixed, budget, summariser, hint=hint, force=True,
                         keep=min(last_turn, budget.raw(budget.room // 4)))
    if done is None:
        return "Nothing to compact: the conversation is no longer than its last turn.", []
    engine.store.append_compaction(state.session, "", 0, done.summary, done.kept, done.replaced,
                                   done.tokens_before, done.tokens_after)
    view.history = done.history
    live.context.used, live.context.estimated = view.used, True
    events: list[Event] = [NoticeEvent(level="info", code="compacted", message=done.notice()),
                           ContextUsageEvent(used_tokens=view.used, window_tokens=window, estimated=True)]
    kept = "the last turn is kept as it was" if user is not None and len(done.kept) >= len(history) - user else \
        f"the newest {len(done.kept)} messages are kept as they were"
    return (f"Compacted {done.replaced} messages into a summary (~{done.tokens_before:,} → ~{done.tokens_after:,} "
            f"tokens); {kept}." + (f" {done.notice()}" if done.fallback else "")), events
