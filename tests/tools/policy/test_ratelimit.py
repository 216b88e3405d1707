"""Per-session rate limits over sliding 60 s windows, with an injected clock."""

from __future__ import annotations

from sunwell.config import RateLimits
from sunwell.tools.policy.ratelimit import RateLimiter


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def limiter(clock: Clock, **limits) -> RateLimiter:
    return RateLimiter(RateLimits(**limits), clock=clock)


def test_defaults_come_from_the_config_model():
    clock = Clock()
    rl = RateLimiter(clock=clock)
    assert [rl.check("shell") for _ in range(5)] == [None] * 5
    assert rl.check("shell") == "shell commands are limited to 5 per minute; try again in 60 s"


def test_shell_window_slides_and_says_when_it_frees_up():
    clock = Clock()
    rl = limiter(clock, shell_per_min=5)
    for _ in range(3):
        assert rl.check("shell") is None
    clock.advance(20)
    for _ in range(2):
        assert rl.check("shell") is None
    clock.advance(17)  # 37 s after the first three
    assert rl.check("shell") == "shell commands are limited to 5 per minute; try again in 23 s"
    clock.advance(22.5)
    assert rl.check("shell") == "shell commands are limited to 5 per minute; try again in 1 s"
    clock.advance(0.5)  # 60 s after the first three: they leave the window, three slots free
    assert [rl.check("shell") for _ in range(4)] == [None, None, None,
                                                     "shell commands are limited to 5 per minute; try again in 20 s"]


def test_refused_calls_are_not_counted():
    clock = Clock()
    rl = limiter(clock, shell_per_min=1)
    assert rl.check("shell") is None
    for _ in range(10):
        clock.advance(5)
        assert rl.check("shell") is not None
    clock.advance(10)  # 60 s after the only counted call
    assert rl.check("shell") is None


def test_every_call_counts_toward_the_tool_call_limit():
    clock = Clock()
    rl = limiter(clock, tool_calls_per_min=4, shell_per_min=10, writes_per_min=10)
    assert [rl.check(risk) for risk in (None, "write", "shell", "network")] == [None] * 4
    for risk in (None, "write", "shell", "network"):
        assert rl.check(risk) == "tool calls are limited to 4 per minute; try again in 60 s"
    clock.advance(60)
    assert rl.check(None) is None


def test_writes_and_shell_have_separate_windows():
    clock = Clock()
    rl = limiter(clock, writes_per_min=2, shell_per_min=2)
    assert rl.check("write", size=10) is None
    assert rl.check("write", size=10) is None
    assert rl.check("write", size=10) == "writes are limited to 2 per minute; try again in 60 s"
    assert rl.check("shell") is None  # a full write window does not block shell commands, or reads
    assert rl.check(None) is None


def test_the_bytes_written_budget_is_per_session_not_per_minute():
    clock = Clock()
    rl = limiter(clock, bytes_written=10_000_000, writes_per_min=100)
    assert rl.check("write", size=6_000_000) is None
    assert rl.check("write", size=3_900_000) is None
    assert rl.bytes_written == 9_900_000
    assert rl.check("write", size=200_000) == (
        "writes are limited to 10 MB per session; 9.9 MB written so far and this write is 200 KB")
    clock.advance(3600)  # time does not refill the budget
    assert rl.check("write", size=200_000) is not None
    assert rl.check("write", size=100_000) is None  # exactly up to the budget is fine
    assert rl.check("write", size=1) is not None
    assert rl.check("shell") is None  # only writes are charged against the budget


def test_a_refused_write_is_not_charged():
    clock = Clock()
    rl = limiter(clock, writes_per_min=1, bytes_written=1000)
    assert rl.check("write", size=400) is None
    assert rl.check("write", size=400) is not None  # window full
    assert rl.bytes_written == 400


def test_a_limit_of_zero_is_off():
    clock = Clock()
    rl = limiter(clock, tool_calls_per_min=0, shell_per_min=0, bytes_written=0)
    assert all(rl.check("shell") is None for _ in range(100))
    assert rl.check("write", size=10**12) is None


def test_limiters_are_independent_per_session():
    clock = Clock()
    first, second = limiter(clock, shell_per_min=1), limiter(clock, shell_per_min=1)
    assert first.check("shell") is None
    assert first.check("shell") is not None
    assert second.check("shell") is None
