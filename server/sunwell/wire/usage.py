"""A session's token usage and cost, per turn, as `sunwell/usage` answers and the footer shows it (agent/usage.py
reads it from the session log)."""

from __future__ import annotations

from pydantic import Field

from sunwell.wire.messages import WireModel


class TurnUsage(WireModel):
    turn: str
    input_tokens: int
    """Every token of the turn's prompts, those read from or written to the prompt cache included."""
    output_tokens: int
    estimated: bool
    """No usage came from the server: Sunwell's estimate."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    """USD at the model's price; null when the model has no price."""


class SessionUsage(WireModel):
    model: str | None
    """The model the cost is counted at."""
    turns: list[TurnUsage] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False
    """Some turn's figure is an estimate."""
    cost: float | None = None
