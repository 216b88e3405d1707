"""A background process's output, kept in a fixed-size ring: the newest `capacity` bytes, with absolute offsets.

Every byte the process ever wrote has an offset (0 for its first); the ring holds the last `capacity` of them, so
memory stays flat however much it prints. A reader asks from an offset (`since`) and learns how many bytes before it
were already overwritten (`skipped`); `dropped` is how many the ring has lost in all. Writes come from the reader
thread (tools/processes/handle.py), reads from the event loop: one lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Slice:
    data: bytes
    start: int
    """The offset of data's first byte."""
    skipped: int
    """Bytes between the offset asked for and `start` that the ring had already dropped."""

    @property
    def end(self) -> int:
        return self.start + len(self.data)


class OutputRing:
    def __init__(self, capacity: int) -> None:
        self.capacity = max(capacity, 1)
        self._buf = bytearray(self.capacity)
        self._total = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        """Bytes written so far: the offset the next byte will have."""
        return self._total

    @property
    def dropped(self) -> int:
        """Bytes lost from the ring: written, then overwritten before anyone could have read them all."""
        return max(self._total - self.capacity, 0)

    def write(self, data: bytes) -> None:
        with self._lock:
            if len(data) >= self.capacity:  # only its tail can stay
                self._total += len(data) - self.capacity
                data = data[-self.capacity:]
            at = self._total % self.capacity
            first = min(len(data), self.capacity - at)
            self._buf[at:at + first] = data[:first]
            self._buf[:len(data) - first] = data[first:]
            self._total += len(data)

    def read(self, since: int, limit: int) -> Slice:
        """At most `limit` bytes from offset `since` (clamped to what the ring still holds and what was written)."""
        with self._lock:
            oldest = max(self._total - self.capacity, 0)
            start = min(max(since, oldest), self._total)
            size = max(min(self._total - start, limit), 0)
            at = start % self.capacity
            first = min(size, self.capacity - at)
            data = bytes(self._buf[at:at + first]) + bytes(self._buf[:size - first])
            return Slice(data, start, max(oldest - since, 0))

    def tail(self, limit: int) -> Slice:
        """The last `limit` bytes (fewer if fewer were written)."""
        return self.read(max(self._total - limit, 0), limit)
