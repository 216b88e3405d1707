"""The sidecar's stdin, checked frame by frame before pygls reads it.

pygls' reader trusts every header: `Content-Length: 1000000000000` makes it allocate that much and die, a length
that is not a number leaves it reading bodies as headers forever, and a line without a newline grows without
bound. `FrameReader` stands in for stdin: it reads each frame itself, in bounded pieces, and hands pygls only a
canonical header and a body under the cap. A frame it cannot use is logged once and skipped up to the next line
that ends in a Content-Length header (a body without a newline runs straight into the next frame's header).
"""

from __future__ import annotations

import io
import logging
import re
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 * 2**20
"""The largest body accepted, in bytes; a bigger one is skipped unread (pygls would allocate it whole)."""

MAX_LINE = 4096
"""Header lines are short; a longer one is junk, read in pieces of this size so it cannot fill memory."""

_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*([^\r\n]*?)[ \t]*\r?\n", re.IGNORECASE)
_OTHER_HEADER = re.compile(rb"[A-Za-z0-9-]+:[^\r\n]*\r?\n")
"""Content-Type, or any header a client may add; only Content-Length matters."""


class _BadFrame(Exception):
    """A frame that cannot be used: why (for the log), and the line where that became clear."""

    def __init__(self, why: str, line: bytes) -> None:
        super().__init__(why)
        self.line = line


class FrameReader:
    """What pygls reads instead of stdin. pygls asks for header lines until a blank one, then `read(length)`:
    so this holds one checked frame at a time, and `read` never reaches past it."""

    def __init__(self, raw: BinaryIO, max_message: int = MAX_MESSAGE) -> None:
        self._raw = raw
        self._max = max_message
        self._frame = io.BytesIO()
        """The checked frame pygls is reading, in canonical form."""

    def readline(self) -> bytes:
        line = self._frame.readline()
        if not line:
            body = self.next_body()
            self._frame = io.BytesIO(b"" if body is None else b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
            line = self._frame.readline()
        return line

    def read(self, size: int) -> bytes:
        return self._frame.read(size)

    def next_body(self) -> bytes | None:
        """The next usable message body; None at the end of the input."""
        line = self._raw.readline(MAX_LINE)
        while line:
            try:
                length = self._headers(line)
            except _BadFrame as bad:
                log.warning("skipped a frame from the client: %s", bad)
                # Without its first byte, so a bad Content-Length line is not found again, but a good header
                # glued to the end of junk is.
                line = self._skip_to_header(bad.line[1:])
                continue
            if length is None:
                return None
            body = self._raw.read(length)
            return body if len(body) == length else None  # short: the input ended inside the body
        return None

    def _headers(self, line: bytes) -> int | None:
        """The Content-Length of the header block that starts with `line`; None if the input ends first."""
        length: int | None = None
        seen = False
        while line:
            if line in (b"\r\n", b"\n"):
                if length is not None:
                    return length
                if seen:
                    raise _BadFrame("headers without a Content-Length", line)
                # else a stray blank line between frames: harmless
            elif not line.endswith(b"\n"):
                if len(line) < MAX_LINE:
                    return None  # the input ended inside the line
                raise _BadFrame(f"a header line longer than {MAX_LINE} bytes", line)
            elif match := _CONTENT_LENGTH.fullmatch(line):
                length, seen = self._length(match[1], line), True
            elif _OTHER_HEADER.fullmatch(line):
                seen = True
            else:
                raise _BadFrame(f"not a header: {line[:80]!r}", line)
            line = self._raw.readline(MAX_LINE)
        return None

    def _length(self, value: bytes, line: bytes) -> int:
        if not value.isdigit():
            raise _BadFrame(f"Content-Length is not a number: {value[:40]!r}", line)
        length = int(value)  # safe: int() takes up to 4300 digits, and a line holds at most MAX_LINE bytes
        if length > self._max:
            shown = value.decode() if len(value) <= 20 else f"{value[:20].decode()}... ({len(value)} digits)"
            raise _BadFrame(f"a message of {shown} bytes is over the {self._max // 2**20} MiB limit", line)
        if length == 0:
            raise _BadFrame("an empty message", line)
        return length

    def _skip_to_header(self, rest: bytes) -> bytes:
        """Reads on from `rest` (what is left of the bad line) to the next line that ends in a Content-Length
        header, and returns that header; b"" at the end of the input. Only a line's last bytes are kept."""
        tail = rest[-MAX_LINE:]
        while True:
            if tail.endswith(b"\n"):
                start = tail.lower().rfind(b"content-length:")
                if start >= 0:
                    return tail[start:]
                tail = b""
            chunk = self._raw.readline(MAX_LINE)
            if not chunk:
                return b""
            tail = (tail + chunk)[-MAX_LINE:]
