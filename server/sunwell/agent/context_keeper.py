"""One turn's requests kept inside the window: room made before each request, new results cut to fit, what a
response's usage teaches, and what a refusal for length teaches.

Before each request (`make_room`): nothing while the request stays under `compact_at` of the window; above it, old
tool results are elided, then the older part of the conversation is compacted; a request that still does not fit
ends the turn with one clear line (`ContextFull`). Elisions and compactions go to the session log as they happen, so
a restored session sends exactly what this one sent. After each response (`measured`): the estimate is calibrated
by the usage reported, and a `contextUsage` event says how full the window is. A refusal (`refused`) corrects the
window and makes the retry strictly smaller than what was refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sunwell.agent.compaction import Summariser, compact
from sunwell.agent.context import (
    RESULT_SHARE,
    Budget,
    ContextFull,
    elisions,
    fit_results,
    message_tokens,
    protected_from,
    request_tokens,
)
from sunwell.agent.history_repair import apply_elision
from sunwell.agent.turn import TurnLog
from sunwell.models.base import ContextOverflow, ModelRequest
from sunwell.models.tokens import text_tokens
from sunwell.wire.events import ContextUsageEvent, NoticeEvent
from sunwell.wire.messages import (
    AssistantPart,
    Message,
    TextPart,
    ThinkingPart,
    ToolResultMessage,
    ToolSpec,
    Usage,
)

ELIDE_TO = 0.7
"""Elision frees enough to get this far under the threshold, so that it is not needed again at the next round."""
RETRY_SHRINK = 0.85
"""A request refused for length is retried at most this share of its size."""


class ContextKeeper:
    def __init__(self, budget: Budget, source: str, summariser: Summariser, log: TurnLog, history: list[Message],
                 on_window_learned: Callable[[int], None] | None = None) -> None:
        self.budget, self.source, self.summariser, self.log = budget, source, summariser, log
        self.history, self.on_window_learned = history, on_window_learned
        self.usage: Usage | None = None
        """What summarising cost this turn."""
        self._sizes: dict[int, tuple[Message, int]] = {}
        """Raw tokens of each message seen this turn, by identity: a long history is counted once, not each round
        (about 15 ms a megabyte)."""
        self._fixed: tuple[str, Sequence[ToolSpec], int] | None = None
        self._ceiling: int | None = None
        """After a refusal: the most a request (its input and the answer's reserve) may take."""
        budget.context.window, budget.context.source = budget.window, source

    def fixed(self, system: str, tools: Sequence[ToolSpec]) -> int:
        """The raw tokens of what every request carries besides the history (the same each round: counted once)."""
        if self._fixed is None or self._fixed[0] is not system or self._fixed[1] is not tools:
            self._fixed = (system, tools, request_tokens(system, tools, []))
        return self._fixed[2]

    def used(self, fixed: int) -> int:
        return self.budget.tokens(fixed + self._raw(self.history))

    def _raw(self, messages: Sequence[Message]) -> int:
        total = 0
        for message in messages:
            known = self._sizes.get(id(message))
            if known is None or known[0] is not message:
                known = self._sizes[id(message)] = (message, message_tokens(message, self.budget.provider))
            total += known[1]
        return total

    def _limits(self) -> tuple[int, int]:
        """(make room above this, fail above this): input tokens."""
        budget = self.budget
        hard = budget.room if self._ceiling is None else min(budget.room, self._ceiling - budget.reserve)
        return min(budget.threshold, hard), hard

    async def make_room(self, system: str, tools: Sequence[ToolSpec]) -> None:
        budget, fixed = self.budget, self.fixed(system, tools)
        limit, hard_limit = self._limits()
        if self.used(fixed) <= limit:
            return
        history_raw = self._raw(self.history)
        outputs, saved = elisions(self.history, fixed + history_raw - budget.raw(int(limit * ELIDE_TO)))
        self._elide(outputs, saved)
        if self.used(fixed) > limit:
            done = await compact(self.history, fixed, budget, self.summariser, force=self.used(fixed) > hard_limit)
            if done is not None:
                self.history[:] = done.history
                if done.usage is not None:
                    self.usage = done.usage if self.usage is None else self.usage + done.usage
                self.log.store.append_compaction(self.log.session, self.log.turn, self.log.seq, done.summary,
                                                 done.kept, done.replaced, done.tokens_before, done.tokens_after)
                self.log.emit(NoticeEvent(level="info", code="compacted", message=done.notice()))
        if self.used(fixed) > hard_limit:  # the newest results alone are too large now (a smaller window learned)
            self._recut(fixed, hard_limit)
        if (used := self.used(fixed)) > hard_limit:
            history = used - budget.tokens(fixed)
            raise self.cannot_fit(f"the instructions and tools (~{budget.tokens(fixed):,} tokens) and the newest "
                                  f"messages (~{history:,}) need about {used:,}")

    def fit_new_results(self, system: str, tools: Sequence[ToolSpec],
                        results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        """The results of a round, cut (largest first) when together they exceed both the room left and
        RESULT_SHARE of what instructions and tools leave of the window (an elision in the log, which has them
        whole)."""
        budget, fixed = self.budget, self.fixed(system, tools)
        available = budget.room - budget.tokens(fixed)
        room = max(budget.room - self.used(fixed), int(available * RESULT_SHARE))
        fitted = fit_results(results, room, budget)
        cut: dict[str, str] = {}
        for before, after in zip(results, fitted, strict=True):
            if after is not before:
                cut[after.call_id] = after.output
                self.log.emit(NoticeEvent(level="info", code="result_cut", message=(
                    f"the output of {before.name} was cut to ~{budget.tokens(text_tokens(after.output)):,} tokens "
                    f"to fit the {budget.window:,}-token context window")))
        if cut:  # each result was logged whole as its call ended: the log reads the cut ones from here on
            saved = sum(text_tokens(b.output) - text_tokens(a.output) for b, a in zip(results, fitted, strict=True))
            self.log.store.append_elision(self.log.session, self.log.turn, self.log.seq, cut, saved)
        return fitted

    def answer_chars(self, system: str) -> int:
        """How much of the turn's results a small model's last request may carry (prompts.answer_from_results)."""
        budget = self.budget
        return max(int(budget.raw(budget.room - budget.tokens(text_tokens(system) + 64)) * 3), 1000)

    def measured(self, request: ModelRequest, usage: Usage | None, parts: Sequence[AssistantPart],
                 side: tuple[str, Sequence[ToolSpec]] | None = None) -> None:
        """After a response: calibrate the estimate by the usage it reported, and say how full the window is.
        `side` (the conversation's instructions and tools): the request was not the conversation but a small one
        beside it (a small model's answer from its results); the meter shows the conversation, as `::context`
        does, not that request."""
        context, budget = self.budget.context, self.budget
        sent = self.fixed(request.system, request.tools) + self._raw(request.messages)
        if side is not None:
            if usage is not None:
                context.observe(sent, usage.input_tokens)
            used, estimated = self.used(self.fixed(*side)), True
        elif usage is not None and context.observe(sent, usage.input_tokens):
            used, estimated = usage.input_tokens + usage.output_tokens, False
        else:
            said = sum(text_tokens(p.text) for p in parts if isinstance(p, TextPart | ThinkingPart))
            used, estimated = budget.tokens(sent + said), True
        context.used, context.estimated = used, estimated
        self.log.emit(ContextUsageEvent(used_tokens=used, window_tokens=budget.window, estimated=estimated))

    def refused(self, exc: ContextOverflow, request: ModelRequest) -> None:
        """A refusal for length: correct the window (the engine keeps it for the session), say so, and make the
        retry smaller than what was refused."""
        budget = self.budget
        sent = budget.tokens(self.fixed(request.system, request.tools) + self._raw(request.messages))
        old = budget.window
        if exc.limit is not None:
            if exc.limit >= old:  # the window was right and the estimate short: count higher from now on
                budget.context.ratio *= 1.2
            new = exc.limit
        else:
            # No limit stated (llama.cpp; a stream that ended before its first token): the window is below what
            # was sent. Servers run with a power of two nearly always (--ctx-size, num_ctx), so take the largest
            # one below the request; a wrong guess costs one more refusal, which lowers it again.
            total = sent + request.max_tokens
            new = min(max((2**k for k in range(11, 21) if 2**k < total), default=max(total * 3 // 4, 512)), old)
        budget.window = new
        if self.summariser.context is budget.context:  # the session's own model summarises: the same window
            self.summariser.window = min(self.summariser.window, new)
        self.source = "refusal" if exc.limit is not None else "refusal (no limit stated: guessed)"
        budget.context.window, budget.context.source = new, self.source
        if self.on_window_learned is not None:
            self.on_window_learned(new)
        self._ceiling = int((sent + request.max_tokens) * RETRY_SHRINK)
        was = f" (was {old:,})" if new != old else ""
        self.log.emit(NoticeEvent(level="warning", code="context_overflow", message=(
            f"{exc}; the context window is taken as {new:,} tokens{was}; making room and retrying once")))

    def cannot_fit(self, what: str) -> ContextFull:
        budget = self.budget
        return ContextFull(
            f"the conversation does not fit the model's context window of {budget.window:,} tokens "
            f"({self.source}): {what}, with {budget.reserve:,} kept for the answer. Try `::compact`, a new session "
            "(`::clear`), or a model with a larger window (if the server's window is larger, set the model's "
            "`context_window` in your config).")

    def _elide(self, outputs: dict[str, str], saved: int) -> None:
        if outputs:
            apply_elision(self.history, outputs)
            self.log.store.append_elision(self.log.session, self.log.turn, self.log.seq, outputs, saved)

    def _recut(self, fixed: int, limit: int) -> None:
        """Cut the newest results (already logged whole) to what is left; recorded as an elision of them."""
        start = protected_from(self.history)
        newest = [m for m in self.history[start:] if isinstance(m, ToolResultMessage)]
        others = [m for m in self.history[start:] if not isinstance(m, ToolResultMessage)]  # the user line, the calls
        room = limit - self.budget.tokens(fixed + self._raw(self.history[:start]) + self._raw(others))
        fitted = fit_results(newest, max(room, 0), self.budget)
        outputs = {after.call_id: after.output for before, after in zip(newest, fitted, strict=True)
                   if after is not before}
        self._elide(outputs, sum(text_tokens(m.output) for m in newest) - sum(text_tokens(m.output) for m in fitted))
