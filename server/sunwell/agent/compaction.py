"""Compaction: the older part of a conversation summarised into one message, the last turns kept verbatim.

The summary is the model's (the session's, or `compaction_model`), reading the older part as plain lines in as many
requests as its window needs, each carrying the summary so far. When the model cannot give one (a fault, an empty
answer, a window too small even for a chunk) a digest of what happened stands in, so compaction is never what stops
a session (a peer's compaction deadlocked at the limit). The loop and `::compact` record the result in the session
log (`SessionStore.append_compaction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sunwell.agent.context import (
    Budget,
    SessionContext,
    message_tokens,
    protected_from,
)
from sunwell.agent.log_lines import call_line
from sunwell.agent.prompts import COMPACT_SYSTEM, compact_request, is_summary, summary_message
from sunwell.models.base import ContextOverflow, Finished, ModelRequest, Provider, ProviderError, TextDelta
from sunwell.models.providers.retry import stream_with_retries
from sunwell.models.tokens import BYTES_PER_TOKEN, text_tokens
from sunwell.wire.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)


@dataclass
class Summariser:
    """The model that writes summaries: the session's, or `compaction_model`."""

    provider: Provider
    model: str
    window: int
    attempts: int = 3
    context: SessionContext | None = None
    """The session's calibration when the summariser is the session's model."""


@dataclass
class Compaction:
    """One compaction: the summary that replaces `replaced` older messages, and the messages kept verbatim."""

    summary: UserMessage
    kept: list[Message]
    replaced: int
    tokens_before: int
    tokens_after: int
    usage: Usage | None
    fallback: str | None = None
    """Why the model's summary could not be had (a list of what happened stands in for it), or None."""

    @property
    def history(self) -> list[Message]:
        return [self.summary, *self.kept]

    def notice(self) -> str:
        text = (f"{self.replaced} older messages summarised (~{self.tokens_before:,} → ~{self.tokens_after:,} "
                f"tokens); the last {len(self.kept)} kept as they were")
        return text + (f" (no summary from the model: {self.fallback}; a list of what happened stands in)"
                       if self.fallback else "")


def keep_from(history: Sequence[Message], keep: int) -> int:
    """Where the verbatim part begins: the longest tail within `keep` raw tokens that starts a turn or a round (a
    tool result is never separated from its call), and never later than the newest round."""
    start = protected_from(history)
    size = sum(message_tokens(m) for m in history[start:])
    best = start
    for i in range(start - 1, -1, -1):
        size += message_tokens(history[i])
        if size > keep:
            break
        if not isinstance(history[i], ToolResultMessage):
            best = i
    return best


async def compact(history: list[Message], fixed: int, budget: Budget, summariser: Summariser, *, hint: str = "",
                  keep: int | None = None, force: bool = False) -> Compaction | None:
    """Summarise the older part of `history` (`fixed`: the raw tokens of the system prompt and tools). The tail
    kept verbatim takes at most `keep` raw tokens (default: what is left of 60 % of the threshold), never less than
    the newest round. None when fewer than two messages come before it, or (unless `force`) too few tokens to be
    worth a summary."""
    if keep is None:
        keep = max(budget.raw(int(budget.threshold * 0.6)) - fixed - budget.summary_tokens, 0)
    cut = keep_from(history, keep)
    older = history[:cut]
    worth = force or sum(map(message_tokens, older)) >= 2 * budget.summary_tokens
    if len(older) < 2 or (len(older) == 2 and is_summary(older[0])) or not worth:
        return None
    before = budget.tokens(fixed + sum(map(message_tokens, history)))
    text, usage, fallback = await summarise(older, summariser, budget.summary_tokens, hint)
    # the user's line of the turn in progress, when the summary swallows it: the model must still see it
    user = last_request(history)
    asked = history[user] if user is not None and user < cut else None
    current = asked.content_for_model() if isinstance(asked, UserMessage) else None
    summary = summary_message(text, len(older), current)
    kept = list(history[cut:])
    after = budget.tokens(fixed + message_tokens(summary) + sum(map(message_tokens, kept)))
    return Compaction(summary, kept, len(older), before, after, usage, fallback)


def last_request(history: Sequence[Message]) -> int | None:
    """The index of the user's latest line (not a summary), or None."""
    return next((i for i in range(len(history) - 1, -1, -1)
                 if isinstance(history[i], UserMessage) and not is_summary(history[i])), None)


async def summarise(older: Sequence[Message], summariser: Summariser, max_tokens: int,
                    hint: str) -> tuple[str, Usage | None, str | None]:
    """(summary, usage, None): the model's summary, the conversation read in as many requests as its size needs
    (each carries the summary so far). A provider fault or an empty answer gives (`digest`, usage, the reason):
    compaction is never what stops a session."""
    lines = transcript_lines(older)
    scale = Budget(summariser.window, max_tokens, 1.0, summariser.context or SessionContext())
    spent: list[Usage] = []
    reason = ""
    for attempt in range(2):  # once more with half the chunk when the summariser's window was smaller than thought
        # each request: the instructions, a chunk, the summary so far (up to max_tokens) and the answer
        chunk = scale.raw(summariser.window - 2 * max_tokens) // 2 ** attempt - text_tokens(COMPACT_SYSTEM) - 64
        summary = ""
        try:
            for part in chunks(lines, max(chunk, 200)):
                request = ModelRequest(model=summariser.model, system=COMPACT_SYSTEM, max_tokens=max_tokens,
                                       messages=[UserMessage(text=compact_request(part, summary, hint))])
                summary = await _answer(summariser, request, spent)
        except ContextOverflow as exc:
            reason = str(exc)
            continue
        except ProviderError as exc:
            reason = str(exc)
            break
        if summary.strip():
            return summary.strip(), _total(spent), None
        reason = "the model answered nothing"
        break
    return digest(older, max_tokens), _total(spent), reason


async def _answer(summariser: Summariser, request: ModelRequest, spent: list[Usage]) -> str:
    text = []
    async for event in stream_with_retries(summariser.provider, request, attempts=summariser.attempts):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, Finished) and event.usage is not None:
            spent.append(event.usage)
    return "".join(text)


def _total(spent: list[Usage]) -> Usage | None:
    return sum(spent[1:], spent[0]) if spent else None


def transcript_lines(messages: Sequence[Message], result_chars: int = 2000) -> list[str]:
    """The conversation as lines for the summariser: who said what, each call, each result (cut)."""
    lines = []
    for message in messages:
        match message:
            case SystemMessage():
                lines.append(f"User: {message.text}")
            case UserMessage():
                lines.append(f"User: {message.content_for_model()}")
            case AssistantMessage():
                said = "".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
                lines += [f"Assistant: {said}"] if said else []
                lines += [f"Assistant called {call_line(call)}" for call in message.tool_calls]
            case ToolResultMessage():
                text = message.content_for_model()
                cut = text if len(text) <= result_chars else text[:result_chars] + " …(cut)"
                lines.append(f"Result of {message.name}: {cut}")
    return lines


def chunks(lines: list[str], size: int) -> list[str]:
    """`lines` joined into pieces of at most `size` raw tokens (a longer line is cut to fit)."""
    out, current, used = [], [], 0
    for line in lines:
        cost = text_tokens(line) + 1
        if cost > size:
            line = line[: int(size * BYTES_PER_TOKEN) - 10] + " …(cut)"
            cost = size
        if current and used + cost > size:
            out.append("\n".join(current))
            current, used = [], 0
        current.append(line)
        used += cost
    return [*out, "\n".join(current)] if current else out


def digest(messages: Sequence[Message], max_tokens: int) -> str:
    """What happened, without a model: each user line and each call, cut to `max_tokens` (newest kept)."""
    lines = [line for line in transcript_lines(messages, result_chars=0) if not line.startswith("Result of")]
    kept: list[str] = []
    for line in reversed(lines):
        line = line if len(line) <= 300 else line[:299] + "…"
        if sum(map(text_tokens, kept)) + text_tokens(line) > max_tokens:
            break
        kept.append(line)
    return "What happened so far (oldest first):\n" + "\n".join(reversed(kept))
