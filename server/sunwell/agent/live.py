"""The live state of a session: what a long-lived front end (the sidecar, `sunwell chat`) keeps between its turns.

One object per session, created on first use, released on `::clear` or when it is the least recently used of more
than MAX_LIVE (a session that comes back simply starts fresh: its rate-limit windows empty, its allow-for-session
rules gone, so the user is asked again — the safe way round). Nothing here grows with the life of the process.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sunwell.agent.context import SessionContext

MAX_LIVE = 64


@dataclass
class LiveSession:
    id: str
    limiter: Any
    """A sunwell.tools.ratelimit.RateLimiter: the session's usage, judged by each turn's limits."""
    emulating: bool = False
    """The server refused native tools once: this session's turns use emulation."""
    window: int | None = None
    """The context window a length refusal stated (Engine.context_window): it wins over what was assumed."""
    window_model: str | None = None
    """The model string `window` was learned for (`::model` may switch the session to another)."""
    chat: Any = None
    """The front end's sunwell.agent.commands.ChatState (model, trust, lens, focus set by ::commands)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Two turns of one session wait for each other."""
    context: SessionContext = field(default_factory=SessionContext)
    """The token estimate's calibration from the responses' usage, and the last figures `::context` shows."""


class LiveSessions:
    def __init__(self, new_limiter: Callable[[], Any], on_release: Callable[[str], None] = lambda session: None,
                 limit: int = MAX_LIVE) -> None:  # fmt: skip
        self._live: OrderedDict[str, LiveSession] = OrderedDict()
        self._new_limiter, self._on_release, self._limit = new_limiter, on_release, limit

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
