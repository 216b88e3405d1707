"""Per-session tool rate limits (config `rate_limits`): sliding 60 s windows and a bytes-written budget.

The engine keeps one RateLimiter per session and asks it before every call; a refusal becomes a `rate_limit` result
whose message says which limit was hit and when the window frees up, so the model can wait or change course.
A refused call is not counted: a model that keeps knocking does not push its own window further away.
A limit of 0 or less turns that limit off. A lens' `rate_limits` apply on top of the user's for the turns it is
active (`stricter`): the session's usage is kept once and judged by each turn's limits (`with_limits`).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sunwell.config import RateLimits

WINDOW = 60.0


class Limits(Protocol):
    """What RateLimiter reads; `sunwell.config.RateLimits` has it."""

    tool_calls_per_min: int
    writes_per_min: int
    shell_per_min: int
    bytes_written: int


def stricter(user: RateLimits, lens: Any = None) -> RateLimits:
    """Each limit the stricter of the user's and the lens' (`lens.schema.RateLimits`; None or 0 there: the lens
    sets no limit of its own, the same meaning 0 has in the user's config). A lens can only narrow."""
    if lens is None:
        return user

    def pick(mine: int, theirs: int | None) -> int:
        if theirs is None or theirs <= 0:
            return mine
        return theirs if mine <= 0 else min(mine, theirs)

    return RateLimits(**{key: pick(getattr(user, key), getattr(lens, key, None)) for key in RateLimits.model_fields})


@dataclass
class Usage:
    """One session's recent calls (by kind: `calls`, `write`, `shell`) and the bytes it has written."""

    times: dict[str, deque[float]] = field(default_factory=lambda: {k: deque() for k in ("calls", "write", "shell")})
    bytes_written: int = 0


class RateLimiter:
    def __init__(self, limits: Limits | None = None, clock: Callable[[], float] = time.monotonic,
                 usage: Usage | None = None) -> None:
        self.limits = limits if limits is not None else RateLimits()
        self.clock = clock
        self.usage = usage if usage is not None else Usage()

    def with_limits(self, limits: Limits) -> RateLimiter:
        """The same session's usage judged by other limits (a turn's: the user's, narrowed by its lens)."""
        return RateLimiter(limits, self.clock, self.usage)

    def check(self, risk: str | None, size: int = 0) -> str | None:
        """None when a call of this risk (`write`, `shell`, `network` or None) may run now, and then it is counted;
        else the `rate_limit` message. For a write, `size` is the bytes it is about to write, charged to the
        session's budget."""
        now = self.clock()
        windows = [("calls", self.limits.tool_calls_per_min, "tool calls")]
        if risk == "write":
            windows.append(("write", self.limits.writes_per_min, "writes"))
        elif risk == "shell":
            windows.append(("shell", self.limits.shell_per_min, "shell commands"))
        for kind, limit, what in windows:
            refusal = _refusal(self.usage.times[kind], limit, what, now)
            if refusal:
                return refusal
        budget = self.limits.bytes_written
        if risk == "write" and budget > 0 and self.usage.bytes_written + max(0, size) > budget:
            return (f"writes are limited to {_size(budget)} per session; {_size(self.usage.bytes_written)} "
                    f"written so far and this write is {_size(size)}")  # fmt: skip
        for kind, _, _ in windows:
            self.usage.times[kind].append(now)
        if risk == "write":
            self.usage.bytes_written += max(0, size)
        return None

    @property
    def bytes_written(self) -> int:
        return self.usage.bytes_written


def _refusal(times: deque[float], limit: int, what: str, now: float) -> str | None:
    while times and times[0] <= now - WINDOW:
        times.popleft()
    if limit <= 0 or len(times) < limit:
        return None
    # The call that frees a slot is the one `limit` places from the end (all of them, when nothing is refused).
    frees_at = times[-limit] + WINDOW
    wait = max(1, math.ceil(frees_at - now))
    return f"{what} are limited to {limit} per minute; try again in {wait} s"


def _size(n: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"
