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


def test_a_chats_state_goes_with_the_session_it_has():
    live = LiveSessions(object)
    new = live.chat(None)
    assert live.chat(None) is new and live.find_chat("s1") is None
    new.session = "s1"  # its first turn made a session
    live.moved(new, None)
    assert live.chat("s1") is new and live.find_chat(None) is None and live.chat(None) is not new
    new.session = None  # ::clear
    live.release("s1")
    live.moved(new, "s1")
    assert live.find_chat("s1") is new  # the next line to s1 finds the chat that left it
