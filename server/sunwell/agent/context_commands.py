"""`::context` and `::compact`: what the model's context holds and how full it is, and compaction on demand.

Both see the session as its next turn would: the system prompt with the project instructions, the tools fitted to
the window, the history as the session log rebuilds it (elisions and compactions applied), the window a turn would
budget against and where it came from.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sunwell.agent.compaction import Summariser, compact, last_request
from sunwell.agent.context import (
    BYTES_PER_TOKEN,
    PROJECT_MAX_TOKENS,
    Budget,
    SessionContext,
    largest_results,
    message_tokens,
    request_tokens,
    text_tokens,
    tools_tokens,
)
from sunwell.agent.events import ContextUsageEvent, Event, NoticeEvent
from sunwell.agent.mentions import attachments
from sunwell.agent.prompts import LoadedInstructions, is_summary, project_instructions, system_prompt
from sunwell.agent.usage import SessionUsage, session_usage, usage_line
from sunwell.agent.windows import calibrated_estimate
from sunwell.messages import Message, ToolResultMessage, ToolSpec
from sunwell.models.fitting import fit_tools
from sunwell.models.providers.window import WindowedProvider
from sunwell.tools.base import Trust

if TYPE_CHECKING:
    from sunwell.agent.chat import ChatState
    from sunwell.agent.engine import Engine


@dataclass
class SessionView:
    """A session as its next request would carry it."""

    model: str
    window: int
    source: str
    budget: Budget
    system: str
    tools: list[ToolSpec]
    loaded: list[LoadedInstructions]
    history: list[Message]
    usage: SessionUsage | None = None
    """Tokens and cost of the session's turns so far (None before its first)."""

    @property
    def fixed(self) -> int:
        return request_tokens(self.system, self.tools, [])

    @property
    def used(self) -> int:
        return self.budget.tokens(self.fixed + sum(map(message_tokens, self.history)))


async def session_view(engine: Engine, state: ChatState) -> SessionView:
    """Raises SetupError when the chat's model is no valid model string."""
    spec = engine.model_spec(state.model)
    window, source = await engine.context_window(spec, state.session)
    context = engine.live.get(state.session).context if state.session else SessionContext()
    lens = engine.lens(state.lens) if state.lens else None
    offered, _, _ = engine.tools(Trust[state.trust or engine.settings.trust], state.tool_names, lens)
    project, loaded = await asyncio.to_thread(project_instructions, engine.jail(lens),
                                              int(min(PROJECT_MAX_TOKENS, window // 10) * BYTES_PER_TOKEN))
    if engine.settings.system_prompt:
        system = "\n\n".join([engine.settings.system_prompt, *project])
    else:
        extra = [*([lens.instructions] if lens and lens.instructions else []), *state.instructions()]
        system = system_prompt(engine.workspace, [*project, *extra])
    tools, _ = fit_tools([tool.spec for tool in offered], context_window=window, user_text="")
    history = engine.store.messages(state.session) if state.session else []
    usage = session_usage(engine.store.events(state.session), str(spec), engine.settings.prices) \
        if state.session else None
    budget = Budget(window, engine.settings.max_tokens, engine.settings.compact_at, context)
    return SessionView(str(spec), window, source, budget, system, tools, loaded, history, usage)


def describe_context(view: SessionView) -> list[tuple[str, str]]:
    """The rows `::context` shows about the window."""
    budget, history = view.budget, view.history
    used = view.used
    counted = "estimated, calibrated by the server's counts" if budget.context.calibrated else "estimated"
    project = ", ".join(f"`{item.path}` (~{item.size / BYTES_PER_TOKEN:,.0f} tokens"
                        + (f", cut to {item.size:,} of {item.total:,} bytes)" if item.size < item.total else ")")
                        for item in view.loaded) or "none (no AGENTS.md or .sunwell/instructions.md)"
    results = [m for m in history if isinstance(m, ToolResultMessage)]
    summaries = [m for m in history if is_summary(m)]
    largest = ", ".join(f"`{call}` (~{budget.tokens(size):,})" for call, size in largest_results(history)) or "none"
    return [
        ("window", f"{view.window:,} tokens ({view.source})"),
        ("tokens", (f"about {used:,} of {view.window:,} ({100 * used // max(view.window, 1)}% full, {counted}); "
                   f"room is made above {budget.threshold + budget.reserve:,} (compact_at "
                   f"{budget.compact_at:g}), {budget.reserve:,} kept for the answer")),
        ("instructions", f"~{budget.tokens(text_tokens(view.system)):,} tokens; project instructions: {project}"),
        ("tool definitions", f"{len(view.tools)} (~{budget.tokens(tools_tokens(view.tools)):,} tokens)"),
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
    live, spec = engine.live.get(state.session), engine.model_spec(state.model)
    windowed = WindowedProvider(engine.provider(spec), view.window, calibrated_estimate(live.context))
    own = Summariser(windowed, spec.model, view.window, engine.settings.provider_attempts, live.context)
    summariser = await engine.summariser(state.session, own)
    history, budget = view.history, view.budget
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
                           ContextUsageEvent(used_tokens=view.used, window_tokens=view.window, estimated=True)]
    kept = "the last turn is kept as it was" if user is not None and len(done.kept) >= len(history) - user else \
        f"the newest {len(done.kept)} messages are kept as they were"
    return (f"Compacted {done.replaced} messages into a summary (~{done.tokens_before:,} → ~{done.tokens_after:,} "
            f"tokens); {kept}." + (f" {done.notice()}" if done.fallback else "")), events
