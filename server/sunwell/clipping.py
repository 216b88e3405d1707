"""How much of an input a message or a log record may carry: a prefix and the input's size, never the whole.

One oversized input (60 MB in a request's parameter) once came back whole in the error answering it, in each
event about it, and twice in the log, where masking credentials ran over every byte: the sidecar was silent for a
minute. So what a message quotes of what it was given is `clip`ped, an answer's whole message is capped at
`MESSAGE_LIMIT`, and a log record at `LOG_LIMIT` (`CappedLogRecords`; tools/policy/audit.py's `MaskedLogRecords`
masks within the same bound).
"""

from __future__ import annotations

import logging
import traceback

QUOTE_LIMIT = 200
"""Characters of an input a message quotes: enough to recognise it."""
MESSAGE_LIMIT = 2_000
"""Characters of one message for the user (an error answer, a turn's error): a few lines."""
LOG_LIMIT = 8_192
"""Characters of a log record's message, and (four times this) of its traceback."""


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` if it is at most `limit` characters, else its first `limit` and its size: `abc… (60,000,000 bytes)`."""
    return text if len(text) <= limit else cut(text[:limit], text)


def cut(head: str, whole: str) -> str:
    """`head` (what is kept of `whole`, perhaps changed) and the size of `whole`."""
    return f"{head}… ({len(whole.encode('utf-8', 'surrogatepass')):,} bytes)"


class CappedLogRecords(logging.Filter):
    """A log handler's filter that caps every record it writes (a library's too): the message at `LOG_LIMIT`
    characters, each part of the traceback at that and the whole at four times that."""

    def shorten(self, text: str, limit: int) -> str:
        return clip(text, limit)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is logging's to report, as it does
            return True
        if (short := self.shorten(message, LOG_LIMIT)) != message:
            record.msg, record.args = short, None
        if record.exc_info and not record.exc_text:  # each part apart: a huge message leaves the frames after it
            parts = traceback.format_exception(*record.exc_info)
            record.exc_text = "".join(self.shorten(part, LOG_LIMIT) for part in parts).rstrip("\n")
        if record.exc_text:
            record.exc_text = self.shorten(record.exc_text, 4 * LOG_LIMIT)
        return True
