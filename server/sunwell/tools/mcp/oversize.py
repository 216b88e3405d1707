"""MCP messages too large to read: cut off as their bytes arrive, and the request they answer told so.

A tool result becomes at most `max_output_bytes` (100 KB) of text for the model, so reading a 50 MB answer whole
only costs time and memory. One message from a server may be at most MAX_MESSAGE_BYTES; past that its bytes are
skipped as they arrive (never held) and the request it answers gets an error of Sunwell's own (`too_large`), so the
call ends with a clear error while the server stays connected.

Which request a cut message answers is read from its first bytes (the Python SDK writes `id` before `result`) or,
when they do not say, from its last bytes (the TypeScript SDK writes it after). A message a server sends on its own
(`method` in its first bytes: a notification, or a request of its own) is dropped with a log line. A message that
says neither is an `Oversized` exception for the session, like any line that is not MCP.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from mcp import types
from pydantic_core import from_json

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""The most one message from an MCP server may take, whatever it carries. Fixed rather than derived from
`max_output_bytes`: the transport is set up when a server starts, before any turn's cap is known, and what makes a
message big is mostly what the cap never sees: a result's text comes twice (as content and as structured content,
which the SDK's servers send for every typed tool), JSON escapes it, and images and binary resources arrive whole in
base64 to become one placeholder line. 8 MiB leaves room for a 100 KB cap raised tenfold (a 1 MB text is a 2.1 MB
message) and for a 5 MB image, and reads in well under a second."""
TOO_LARGE = -32080
"""The code of the error a cut message's request gets (the range JSON-RPC leaves to implementations, where the SDK
puts its own CONNECTION_CLOSED and REQUEST_TIMEOUT); its `data` says `{"sunwell": "too_large", ...}` too."""
HEAD = 4096
TAIL = 1024
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$')


class Oversized(ValueError):
    """A message over the limit whose request could not be told (what the session gets instead of it)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"a message of over {limit:,} bytes (at least {size:,}) that answers no request it names")


@dataclass(frozen=True)
class Cut:
    """A message that was not read whole: the request it answers (None when it could not be told) or the method of
    a message the server sent on its own."""

    request_id: types.RequestId | None
    method: str | None
    size: int
    """Bytes seen when it was decided (at least the limit; all of it when decided at its end)."""


def too_large_error(request_id: types.RequestId, limit: int) -> types.JSONRPCError:
    """The answer a request gets in place of one that was cut."""
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=TOO_LARGE, message=f"the answer was larger than {limit:,} bytes and was not read whole",
        data={"sunwell": "too_large", "limit": limit}))


def is_too_large(error: types.ErrorData, limit: int = MAX_MESSAGE_BYTES) -> bool:
    """Sunwell's own `too_large` error, or the SDK's for a server-sent event past `limit`: a CONNECTION_CLOSED
    naming the limit (the SDK gives that one no code of its own; the HTTP tests hold it to this wording)."""
    data = error.data
    if error.code == TOO_LARGE and isinstance(data, dict) and data.get("sunwell") == "too_large":
        return True
    return error.code == types.CONNECTION_CLOSED and f"exceeded the {limit} byte limit" in error.message


class BoundedLines:
    """Splits a byte stream into newline-delimited messages of at most `limit` bytes. `feed` returns, in order, the
    complete lines (bytes) and a `Cut` for each line that passed the limit: as soon as its first bytes say which
    request it answers, else at its end. A cut line is skipped, never held: only its first and last bytes are kept."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self._line = bytearray()
        self._skipping = False
        self._decided = False
        self._seen = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Cut]:
        out: list[bytes | Cut] = []
        view = memoryview(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._take(view[start:] if end < 0 else view[start:end], out)
            if end < 0:
                return out
            self._end_line(out)
            start = end + 1

    def _take(self, piece: memoryview, out: list[bytes | Cut]) -> None:
        if self._skipping:
            self._seen += len(piece)
            self._tail = (self._tail + piece[-TAIL:].tobytes())[-TAIL:]
            return
        self._line += piece
        if len(self._line) <= self.limit:
            return
        head, self._seen, self._tail = bytes(self._line[:HEAD]), len(self._line), bytes(self._line[-TAIL:])
        self._line = bytearray()
        self._skipping = True
        cut = _from_head(head, self._seen)
        self._decided = cut is not None
        if cut is not None:
            out.append(cut)

    def _end_line(self, out: list[bytes | Cut]) -> None:
        if not self._skipping:
            out.append(bytes(self._line))
            self._line.clear()
            return
        if not self._decided:
            out.append(Cut(_id_at_end(self._tail), None, self._seen))
        self._skipping, self._tail = False, b""


def _from_head(head: bytes, size: int) -> Cut | None:
    """What the first bytes of a message say: a request of the server's or a notification (`method`), or the id of
    the request it answers; None when they do not say (an id that may have been cut short does not count)."""
    try:
        start: Any = from_json(head, allow_partial=True)
    except ValueError:
        return None
    if not isinstance(start, dict):
        return None
    if isinstance(start.get("method"), str):
        return Cut(None, start["method"], size)
    keys = list(start)
    if "id" in keys and keys[-1] != "id" and isinstance(start["id"], int | str):
        return Cut(start["id"], None, size)
    return None


def _id_at_end(tail: bytes) -> types.RequestId | None:
    """The id a message ends with (`..., "id": 7}`): the last member of the top-level object, since the `}` after
    it closes that object."""
    found = _ID_AT_END.search(tail)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None
