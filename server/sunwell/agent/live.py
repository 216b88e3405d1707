"""The live state of a session: what a long-lived front end (the sidecar, `sunwell chat`) keeps between its turns.

One object per session, created on first use, released on `::clear` or when it is the least recently used of more
than MAX_LIVE (a session that comes back simply starts fresh: its rate-limit windows empty, its allow-for-session
rules gone, so the user is asked again — the safe way round). Nothing here grows with the life of the process.
Beside them waits the state of the one new chat whose first turn has not made a session yet (`chat(None)`).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from sunwell.agent.chat import ChatState
from sunwell.agent.context import SessionContext
from sunwell.tools.network.cache import PageCache
from sunwell.tools.policy.ratelimit import RateLimiter
from sunwell.tools.scratch import ScratchState

MAX_LIVE = 64


@dataclass
class LiveSession:
    id: str
    limiter: RateLimiter
    """The session's usage, judged by each turn's limits."""
    emulating: bool = False
    """The server refused native tools once: this session's turns use emulation."""
    window: int | None = None
    """The context window a length refusal stated (Engine.context_window): it wins over what was assumed."""
    window_model: str | None = None
    """The model string `window` was learned for (`::model` may switch the session to another)."""
    chat: ChatState | None = None
    """What the chat's ::commands changed (model, trust, lens, focus): agent/session.py."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Two turns of one session wait for each other."""
    context: SessionContext = field(default_factory=SessionContext)
    """The token estimate's calibration from the responses' usage, and the last figures `::context` shows."""
    pages: PageCache = field(default_factory=PageCache)
    """What web_fetch fetched: the same URL within minutes is not fetched again."""
    scratch: ScratchState = field(default_factory=ScratchState)
    """What the agent's own tools keep: kv_set's values, update_plan's plan (tools/scratch.py)."""


class LiveSessions:
    def __init__(self, new_limiter: Callable[[], RateLimiter],
                 on_release: Callable[[str], None] = lambda session: None, limit: int = MAX_LIVE) -> None:
        self._live: OrderedDict[str, LiveSession] = OrderedDict()
        self._new_limiter, self._on_release, self._limit = new_limiter, on_release, limit
        self._new_chat: ChatState | None = None
        """The chat whose first turn has not made a session yet (a front end has one new chat open at a time)."""

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, session: str) -> bool:
        return session in self._live

    def get(self, session: str) -> LiveSession:
        """The live state of `session`, made now if it has none; the least recently used beyond the limit go."""
        live = self._live.get(session)
        if live is None:
            live = self._live[session] = LiveSession(session, self._new_limiter())
            for old in [s for s, state in self._live.items() if s != session and not state.lock.locked()]:
                if len(self._live) <= self._limit:
                    break
                self.release(old)
        self._live.move_to_end(session)
        return live

    def release(self, session: str) -> None:
        if self._live.pop(session, None) is not None:
            self._on_release(session)

    def chat(self, session: str | None) -> ChatState:
        """The state of `session`'s chat, made now if it has none; None: the new chat's."""
        if session is None:
            self._new_chat = self._new_chat or ChatState()
            return self._new_chat
        live = self.get(session)
        live.chat = live.chat or ChatState(session=session)
        return live.chat

    def find_chat(self, session: str | None) -> ChatState | None:
        """The state of `session`'s chat if it has one, making nothing."""
        if session is None:
            return self._new_chat
        live = self._live.get(session)
        return live.chat if live is not None else None

    def moved(self, chat: ChatState, was: str | None) -> None:
        """`chat`, the chat of session `was` (None: the new chat), has another session now: its first turn made one,
        or ::clear ended it. Its state goes with it, for the next line to the session it now has."""
        if chat.session == was:
            return
        if was is None:
            self._new_chat = None
        if home := chat.session or was:
            self.get(home).chat = chat
