"""Characters that hide text: the one list of them, and the three things Sunwell does with them.

What a person cannot see but a model reads: Unicode tag characters (U+E0000-E007F, an invisible copy of ASCII that
models read as text: "ignore previous instructions" spelled in them shows as nothing), zero-width characters,
bidi controls (they reorder what is read: Trojan Source), variation selectors but one after a visible character
(bytes can be smuggled as runs of them), the soft hyphen, the other format characters (Unicode category Cf) but
the prepended concatenation marks (U+0600-0605 and the like), which are visible signs, invisible fillers, and the
C0 and C1 controls but tab, newline and carriage return. A terminal also escapes the carriage return (it moves the
cursor back over what was written): `terminal_visible`.

What legitimate text needs is kept: one text or emoji presentation selector (U+FE0E, U+FE0F) after a visible
character outside ASCII (⚠️, ❤️) or in a keycap (1️⃣), and a zero-width joiner or non-joiner between two visible
characters outside ASCII: emoji sequences (👩‍💻) and the scripts that spell with them (Persian می‌خواهم, Indic
conjuncts). Each carries a bit at most, next to a character one sees; none can spell hidden words. A byte order
mark at the start of a text is an encoding mark: `strip_hidden` drops it without counting it.

- `strip_hidden`: instructions (AGENTS.md, an MCP tool's description, a learned API's summaries) lose them before a
  model reads them; what was removed is for the warning that tells the user (`removed_message`).
- `reveal`: what a model reads as data (a tool's result) and a terminal prints shows them as escapes, `\\x1b` for a
  C0 control, `\\u200b` for the rest (a character beyond the BMP as its UTF-16 pair, `\\udb40\\udc41`, so that
  escaped JSON stays JSON).
- `hidden_runs`: where they are, for a lens file's diagnostics.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

_RANGES = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but tab, newline, carriage return; DEL; C1
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"  # soft hyphen, grapheme joiner, fillers, Mongolian
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"  # zero-width, marks, bidi, invisible operators
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"  # Hangul filler, variation selectors, BOM, annotations
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"  # hieroglyph, shorthand, musical formats
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"  # tags; the supplementary variation selectors
)
_HIDDEN = re.compile(f"[{_RANGES}]")
_TERMINAL = re.compile(f"[{_RANGES}\r]")
_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""The same classes for ASCII text, which is most of it: the small class is searched 2-3 times faster."""
_PRESENTATION = "\ufe0e\ufe0f"
_JOINERS = "\u200c\u200d"
_KEYCAP = "\u20e3"
BOM = "\ufeff"


def _seen(char: str) -> bool:
    """A visible character outside ASCII: what a selector or a joiner may stand next to."""
    return char > "\x7f" and not _HIDDEN.match(char)


def _needed(text: str, at: int) -> bool:
    """Whether the hidden-class character at `at` is one legitimate text needs (module docstring)."""
    char = text[at]
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    if char in _PRESENTATION:
        return _seen(before) or (before != "" and before in "0123456789#*" and after == _KEYCAP)
    if char in _JOINERS:
        selected = before == "\ufe0f" and at > 1 and _seen(text[at - 2])  # ❤️‍🔥: joined after its selector
        return (_seen(before) or selected) and _seen(after)
    return False


def _pattern(text: str, terminal: bool = False) -> re.Pattern[str]:
    if text.isascii():
        return _ASCII_TERMINAL if terminal else _ASCII_HIDDEN
    return _TERMINAL if terminal else _HIDDEN


def _hidden_at(text: str) -> Iterator[int]:
    for match in _pattern(text).finditer(text):
        at = match.start()
        if not _needed(text, at) and not (at == 0 and text[0] == BOM):
            yield at


def strip_hidden(text: str) -> tuple[str, str]:
    """`text` without its hidden characters (a leading byte order mark too, uncounted), and those it held."""
    if _pattern(text).search(text) is None:
        return text, ""
    pieces, removed, start = [], [], 0
    for at in _hidden_at(text):
        pieces.append(text[start:at])
        removed.append(text[at])
        start = at + 1
    pieces.append(text[start:])
    return "".join(pieces).removeprefix(BOM), "".join(removed)


def strip_hidden_in(value: Any) -> tuple[Any, str]:
    """A JSON-shaped value (a tool's schema, an API document) with `strip_hidden` applied to every string in it,
    keys included, and the hidden characters it held."""
    if isinstance(value, str):
        return strip_hidden(value)
    if isinstance(value, dict):
        out, removed = {}, []
        for key, item in value.items():
            if isinstance(key, str):
                key, dropped = strip_hidden(key)
                removed.append(dropped)
            out[key], inner = strip_hidden_in(item)
            removed.append(inner)
        return out, "".join(removed)
    if isinstance(value, list | tuple):
        pairs = [strip_hidden_in(item) for item in value]
        return type(value)(item for item, _ in pairs), "".join(removed for _, removed in pairs)
    return value, ""


def escape(char: str) -> str:
    """One character as the terminal writes it: `\\r`, `\\x1b`, `\\u200b`, `\\udb40\\udc41`."""
    code = ord(char)
    if char == "\r":
        return r"\r"
    if code < 0x7F:
        return f"\\x{code:02x}"  # a C0 control the way a shell user reads it
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _revealed(text: str, terminal: bool) -> str:
    pattern = _pattern(text, terminal)
    if pattern.search(text) is None:
        return text

    def shown(match: re.Match[str]) -> str:
        at = match.start()
        return match.group() if match.group() in _PRESENTATION + _JOINERS and _needed(text, at) else \
            escape(match.group())

    return pattern.sub(shown, text)


def reveal(text: str) -> str:
    """`text` with every hidden character written as its escape (what a model reads of a file, a page, a result)."""
    return _revealed(text, terminal=False)


def terminal_visible(text: str) -> str:
    """`reveal`, and carriage returns too: what a terminal may print of text it did not write."""
    return _revealed(text, terminal=True)


def hidden_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each run of hidden characters, in code points; a run never spans a line break."""
    runs: list[tuple[int, int]] = []
    for at in _hidden_at(text):
        if runs and runs[-1][1] == at:
            runs[-1] = (runs[-1][0], at + 1)
        else:
            runs.append((at, at + 1))
    return runs


def describe(chars: str, most: int = 3) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE, U+E0069 TAG LATIN SMALL LETTER I, …`: the first `most` different ones."""
    named = [f"U+{ord(c):04X} {unicodedata.name(c, 'control')}" for c in dict.fromkeys(chars)]
    return ", ".join(named[:most]) + (", …" if len(named) > most else "")


def removed_message(where: str, removed: str) -> str:
    """The words of the `hidden_characters` warning: `AGENTS.md: removed 3 invisible characters (U+200B ZERO WIDTH
    SPACE, …) …`."""
    count = len(removed)
    return (f"{where}: removed {count} invisible character{'s' if count != 1 else ''} ({describe(removed)}) before "
            "the model read it; such characters can carry instructions you cannot see")
