"""Per-session tool rate limits (config `rate_limits`): sliding 60 s windows and a bytes-written budget.

The engine keeps one RateLimiter per session and asks it before every call; a refusal becomes a `rate_limit` result
whose message says which limit was hit and when the window frees up, so the model can wait or change course.
A refused call is not counted: a model that keeps knocking does not push its own window further away.
A limit of 0 or less turns that limit off.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from sunwell.config import RateLimits

WINDOW = 60.0


class Limits(Protocol):
    """What RateLimiter reads; `sunwell.config.RateLimits` has it."""

    tool_calls_per_min: int
    writes_per_min: int
    shell_per_min: int
    bytes_written: int


class _Window:
    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.times: deque[float] = deque()

    def refusal(self, now: float) -> str | None:
        while self.times and self.times[0] <= now - WINDOW:
            self.times.popleft()
        if self.limit <= 0 or len(self.times) < self.limit:
            return None
        # The call that frees a slot is the one `limit` places from the end (all of them, when nothing is refused).
        frees_at = self.times[-self.limit] + WINDOW
        wait = max(1, math.ceil(frees_at - now))
        return f"{self.what} are limited to {self.limit} per minute; try again in {wait} s"


class RateLimiter:
    def __init__(self, limits: Limits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        limits = limits if limits is not None else RateLimits()
        self.clock = clock
        self.byte_budget = limits.bytes_written
        self.bytes_written = 0
        self._calls = _Window(limits.tool_calls_per_min, "tool calls")
        self._by_risk = {"write": _Window(limits.writes_per_min, "writes"),
                         "shell": _Window(limits.shell_per_min, "shell commands")}  # fmt: skip

    def check(self, risk: str | None, size: int = 0) -> str | None:
        """None when a call of this risk (`write`, `shell`, `network` or None) may run now, and then it is counted;
        else the `rate_limit` message. For a write, `size` is the bytes it is about to write, charged to the
        session's budget."""
        now = self.clock()
        windows = [self._calls] + ([self._by_risk[risk]] if risk in self._by_risk else [])
        for window in windows:
            refusal = window.refusal(now)
            if refusal:
                return refusal
        if risk == "write" and self._over_budget(size):
            return (f"writes are limited to {_size(self.byte_budget)} per session; {_size(self.bytes_written)} "
                    f"written so far and this write is {_size(size)}")  # fmt: skip
        for window in windows:
            window.times.append(now)
        if risk == "write":
            self.bytes_written += max(0, size)
        return None

    def add_bytes(self, n: int) -> None:
        """Charge bytes written that `check` did not see (for example when the size is known only afterwards)."""
        self.bytes_written += max(0, n)

    def _over_budget(self, size: int) -> bool:
        return self.byte_budget > 0 and self.bytes_written + max(0, size) > self.byte_budget


def _size(n: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"
