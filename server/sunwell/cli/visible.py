"""Model text made safe to print in a terminal.

A model (or a file it read) can put escape sequences in a command, a file's content or its answer; printed raw they
would move the cursor, erase lines, retitle the window or reorder text, so that an approval prompt shows something
other than what will run. Everything the terminal shows from a model goes through `visible`. A module of its own, so
that a command that prints only stored text (`sunwell sessions list`) does not load the transcript's machinery.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline (multi-line text keeps its shape), DEL, the C1 controls (U+009B is a one-character
# "ESC ["), and the bidi embeddings, overrides and isolates that reorder what is read (Trojan Source)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r":
        return r"\r"
    # C0 the way a shell user reads it (\x1b); the rest as \uXXXX, which JSON reads too, so that `sessions export`
    # on a terminal stays valid JSON
    return f"\\x{ord(char):02x}" if char < "\x7f" else f"\\u{ord(char):04x}"


def visible(text: str) -> str:
    """`text` with every terminal control character written out as an escape (`\\x1b`, `\\r`, `\\u202e`)."""
    return _UNSAFE.sub(_escape, text)
