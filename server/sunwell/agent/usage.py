"""Tokens per turn and per session, read from the session log, and what they cost at the configured prices.

A turn's usage is what the provider reported (`done.usage`). A server that reports none (llama.cpp, some
OpenAI-compatible servers) still gets a figure: Sunwell's estimate, marked `estimated`, from what the log kept of
the turn: each request's `contextUsage` (the context sent plus the answer) for the input, the answers themselves for
the output.

Prices are per million tokens (docs/config.md "prices.<name>"); the defaults cover the common hosted OpenAI and
Anthropic models and the user config overrides or adds entries, keyed by the full model string or by the model id
alone. A model with no price (a local one) has no cost, never a cost of zero. The prompt tokens a provider read from its
cache, or wrote to it, are part of the input and cost the model's `cache_read` and `cache_write` prices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from sunwell.agent.context import message_tokens
from sunwell.config import Price
from sunwell.wire.messages import AssistantMessage, Message
from sunwell.wire.usage import SessionUsage, TurnUsage

if TYPE_CHECKING:
    from sunwell.agent.sessions import EventRow

ANTHROPIC_CACHE_READ = 0.1
ANTHROPIC_CACHE_WRITE = 1.25
"""Anthropic's prices of a cached prompt token, as multiples of the input price: read, and written for 5 minutes."""

DEFAULT_PRICES: dict[str, Price] = {
    name: Price(input=price[0], output=price[1], cache_read=price[2],
                cache_write=price[0] * ANTHROPIC_CACHE_WRITE if name.startswith("anthropic:") else price[0])
    for name, price in {
        # OpenAI: cached input at half price for gpt-4o, o1 and o3-mini, a quarter for gpt-4.1, o3 and o4-mini, a
        # tenth for gpt-5; writing costs nothing more
        "openai:gpt-4o": (2.5, 10.0, 1.25),
        "openai:gpt-4o-mini": (0.15, 0.6, 0.075),
        "openai:gpt-4.1": (2.0, 8.0, 0.5),
        "openai:gpt-4.1-mini": (0.4, 1.6, 0.1),
        "openai:gpt-4.1-nano": (0.1, 0.4, 0.025),
        "openai:gpt-5": (1.25, 10.0, 0.125),
        "openai:gpt-5-mini": (0.25, 2.0, 0.025),
        "openai:gpt-5-nano": (0.05, 0.4, 0.005),
        "openai:o1": (15.0, 60.0, 7.5),
        "openai:o3": (2.0, 8.0, 0.5),
        "openai:o3-mini": (1.1, 4.4, 0.55),
        "openai:o4-mini": (1.1, 4.4, 0.275),
        # Anthropic: read at a tenth of the input price, written at 1.25 times it
        "anthropic:claude-opus-4-5": (5.0, 25.0, 0.5),
        "anthropic:claude-opus-4-1": (15.0, 75.0, 1.5),
        "anthropic:claude-opus-4": (15.0, 75.0, 1.5),
        "anthropic:claude-sonnet-4-6": (3.0, 15.0, 0.3),
        "anthropic:claude-sonnet-4-5": (3.0, 15.0, 0.3),
        "anthropic:claude-sonnet-4": (3.0, 15.0, 0.3),
        "anthropic:claude-3-7-sonnet": (3.0, 15.0, 0.3),
        "anthropic:claude-haiku-4-5": (1.0, 5.0, 0.1),
        "anthropic:claude-3-5-haiku": (0.8, 4.0, 0.08),
    }.items()
}
"""USD per million tokens, as the vendors list them for their standard tier."""


def price_for(model: str | None, configured: Mapping[str, Price] = {}) -> Price | None:
    """The price of a model string: the user's entry, else the default; in each, by the full string, then the model
    id, then the longest entry the id starts with (a dated snapshot such as `gpt-4o-2024-08-06` costs what `gpt-4o`
    does)."""
    if not model:
        return None
    provider, _, model_id = model.partition(":") if ":" in model else ("", "", model)
    for table in (configured, DEFAULT_PRICES):
        for key in (model, model_id):
            if key in table:
                return _with_cache_prices(table[key], provider)
        candidates = [key for key in table
                      if (bare := key.partition(":")[2] or key) and (model_id == bare or model_id.startswith(bare + "-"))
                      and (not provider or ":" not in key or key.startswith(provider + ":"))]
        if candidates:
            return _with_cache_prices(table[max(candidates, key=len)], provider)
    return None


def _with_cache_prices(price: Price, provider: str) -> Price:
    """`price` with the cache prices it leaves out: Anthropic's multiples of its input price, else the input price
    (an unknown provider's discount is not assumed)."""
    read, write = (ANTHROPIC_CACHE_READ, ANTHROPIC_CACHE_WRITE) if provider == "anthropic" else (1.0, 1.0)
    return price.model_copy(update={
        "cache_read": price.input * read if price.cache_read is None else price.cache_read,
        "cache_write": price.input * write if price.cache_write is None else price.cache_write})


@dataclass
class _Turn:
    reported: dict[str, Any] | None = None
    done: bool = False
    context: int = 0
    said: int = 0
    messages: list[Message] = field(default_factory=list)


def session_usage(rows: Iterable[EventRow], model: str | None,
                  prices: Mapping[str, Price] = {}) -> SessionUsage:
    """Per finished turn (commands, which ask no model, leave out) and in total, with the cost at `model`'s price."""
    adapter: TypeAdapter[Message] = TypeAdapter(Message)
    turns: dict[str, _Turn] = {}
    for row in rows:
        if not row.turn:
            continue
        turn = turns.setdefault(row.turn, _Turn())
        data = row.data if isinstance(row.data, dict) else {}
        if row.kind == "done":
            turn.done, turn.reported = True, data.get("usage")
        elif row.kind == "contextUsage":
            turn.context += int(data.get("usedTokens", 0))
        elif row.kind == "message" and data.get("role") == "assistant":
            message = adapter.validate_python(data)
            if isinstance(message, AssistantMessage):
                turn.said += message_tokens(message)
    price = price_for(model, prices)
    out = SessionUsage(model=model, cost=0.0 if price else None)
    for turn_id, turn in turns.items():
        if not turn.done or (turn.reported is None and turn.context == 0):
            continue  # still running, or no model was asked (a ::command)
        if turn.reported is not None:
            reported = turn.reported
            used = TurnUsage(turn=turn_id, input_tokens=int(reported.get("inputTokens", 0)),
                             output_tokens=int(reported.get("outputTokens", 0)), estimated=False,
                             cache_read_tokens=int(reported.get("cacheReadTokens", 0)),
                             cache_write_tokens=int(reported.get("cacheWriteTokens", 0)))
        else:
            used = TurnUsage(turn=turn_id, input_tokens=max(turn.context - turn.said, 0), output_tokens=turn.said,
                             estimated=True)
        if price is not None:
            used.cost = cost(price, used.input_tokens, used.output_tokens, cache_read=used.cache_read_tokens,
                             cache_write=used.cache_write_tokens)
            out.cost = (out.cost or 0.0) + used.cost
        out.turns.append(used)
        out.input_tokens += used.input_tokens
        out.output_tokens += used.output_tokens
        out.cache_read_tokens += used.cache_read_tokens
        out.cache_write_tokens += used.cache_write_tokens
        out.estimated |= used.estimated
    return out


def cost(price: Price, input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0) -> float:
    """USD for `input_tokens` (`cache_read` and `cache_write` of them read from and written to the prompt cache) and
    `output_tokens`; a cache price the entry leaves out is the input price."""
    read_price = price.input if price.cache_read is None else price.cache_read
    write_price = price.input if price.cache_write is None else price.cache_write
    fresh = max(input_tokens - cache_read - cache_write, 0)
    return (fresh * price.input + cache_read * read_price + cache_write * write_price
            + output_tokens * price.output) / 1_000_000


def format_cost(value: float | None) -> str:
    """`$0.0123`: cents are too coarse for one turn of a small model; nothing when there is no price."""
    if value is None:
        return ""
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def cached_part(read: int, written: int) -> str:
    """` (1,000 read from cache, 200 written to it)` after an input figure; nothing when no cache was used."""
    said = [f"{read:,} read from cache"] if read else []
    said += [f"{written:,} written to {'it' if read else 'the cache'}"] if written else []
    return f" ({', '.join(said)})" if said else ""


def usage_line(usage: SessionUsage) -> str:
    """`::context`'s row and the terminal's summary: `1,234 in (1,000 read from cache) · 56 out · $0.0123`."""
    about = "≈" if usage.estimated else ""
    cached = cached_part(usage.cache_read_tokens, usage.cache_write_tokens)
    parts = [f"{about}{usage.input_tokens:,} in{cached} · {about}{usage.output_tokens:,} out"
             + (" (estimated: the server reported no usage)" if usage.estimated else ""),
             format_cost(usage.cost) or ("no price for this model" if usage.model else "")]
    turns = len(usage.turns)
    return f"{' · '.join(p for p in parts if p)} over {turns} turn{'' if turns == 1 else 's'}"


def turn_line(rows: Iterable[EventRow], turn: str, model: str | None,
              prices: Mapping[str, Price] = {}) -> str | None:
    """What a terminal prints under a turn: `1,234 in · 56 out · $0.0123`, `≈` when estimated; None for a turn that
    asked no model (a ::command)."""
    usage = session_usage([row for row in rows if row.turn == turn], model, prices)
    if not usage.turns:
        return None
    about = "≈" if usage.estimated else ""
    cached = cached_part(usage.cache_read_tokens, usage.cache_write_tokens)
    return " · ".join(part for part in (f"{about}{usage.input_tokens:,} in{cached}",
                                        f"{about}{usage.output_tokens:,} out", format_cost(usage.cost)) if part)
