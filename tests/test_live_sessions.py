"""Per-session state lives in one LiveSession, released on ::clear or when too many are live."""

from __future__ import annotations

from sunwell.agent.live import LiveSessions


async def test_the_least_recently_used_idle_sessions_are_released_beyond_the_limit():
    released: list[str] = []
    live = LiveSessions(object, released.append, limit=3)
    for name in "abc":
        live.get(name)
    live.get("a")  # used again: now b is the oldest
    await live.get("b").lock.acquire()  # a turn of b is running: b must stay
    live.get("d")
    live.get("e")
    assert released == ["c", "a"] and "b" in live and len(live) == 3
    first = live.get("d").limiter
    assert live.get("d").limiter is first  # the same state while it is live


def test_release_calls_back_once():
    released: list[str] = []
    live = LiveSessions(object, released.append)
    live.get("s")
    live.release("s")
    live.release("s")
    assert released == ["s"] and "s" not in live
