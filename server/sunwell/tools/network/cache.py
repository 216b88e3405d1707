"""What a session fetched: a page is not fetched again within FRESH_SECONDS, and after that it is asked for again
with its ETag and date, so an unchanged page costs a `304 Not Modified`."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fetched:
    url: str
    """Where the fetch ended, after redirects."""
    status: int
    content_type: str
    body: bytes
    etag: str | None = None
    last_modified: str | None = None


FRESH_SECONDS = 300.0
"""A page fetched this recently is not fetched again; after that it is asked again with its ETag/date."""
CACHE_BYTES = 20_000_000


@dataclass
class PageCache:
    """The pages a session fetched, newest kept, at most CACHE_BYTES of bodies in all."""

    limit: int = CACHE_BYTES
    clock: Callable[[], float] = time.monotonic
    _pages: OrderedDict[str, tuple[float, Fetched]] = field(default_factory=OrderedDict)

    def get(self, url: str) -> tuple[Fetched, bool] | None:
        """The page kept for `url` and whether it is still fresh (else it is asked again, conditionally)."""
        if url not in self._pages:
            return None
        self._pages.move_to_end(url)
        at, page = self._pages[url]
        return page, self.clock() - at < FRESH_SECONDS

    def put(self, url: str, page: Fetched) -> None:
        self._pages[url] = (self.clock(), page)
        self._pages.move_to_end(url)
        while sum(len(kept.body) for _, kept in self._pages.values()) > self.limit and self._pages:
            self._pages.popitem(last=False)
