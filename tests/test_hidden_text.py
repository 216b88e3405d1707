"""The one class of hidden characters (sunwell/hidden_text.py): Unicode's format characters and the rest of what
hides text are in it, what legitimate text needs (emoji sequences, Persian and Indic joiners, a keycap) is not, and
its escapes are the terminal's, which JSON reads back."""

from __future__ import annotations

import json
import unicodedata

import pytest

from sunwell.hidden_text import describe, hidden_runs, reveal, strip_hidden, strip_hidden_in, terminal_visible
from test_hidden_characters import INNOCENT, RAW, SMUGGLED, tags

PREPENDED_MARKS = {0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x110BD, 0x110CD}


def test_every_format_character_but_the_visible_marks_is_hidden():
    """Unicode's own list (category Cf), so a character added to it is not forgotten here."""
    formats = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf" and c not in PREPENDED_MARKS]
    missed = [f"U+{ord(c):04X}" for c in formats if strip_hidden("a" + c + "b") != ("ab", c)]
    assert len(formats) >= 140 and missed == []
    for mark in PREPENDED_MARKS:
        assert strip_hidden(chr(mark) + "1") == (chr(mark) + "1", "")


@pytest.mark.parametrize("text", [INNOCENT, "🏳️‍🌈 ❤️‍🔥 #️⃣ ℹ️ ↔️", "क्‍ष", "tab\tand\r\nlines\n"])
def test_what_legitimate_text_needs_is_kept(text):
    assert strip_hidden(text) == (text, "") and reveal(text) == text and hidden_runs(text) == []


@pytest.mark.parametrize(("text", "count"), [
    ("😀" + "".join(chr(0xFE00 + n % 16) for n in range(40)), 40),  # bytes smuggled after an emoji
    ("😀" + "".join(chr(0xE0100 + n) for n in range(30)), 30),
    ("a\u200db", 1), ("a\u200cb", 1), ("x\ufe0f", 1), ("\u200d😀", 1), ("😀\ufe0f\ufe0f", 1),
    ("soft\u00adhyphen", 1), ("\ufeffstart", 0), ("mid\ufeffdle", 1), ("bell\x07 esc\x1b nel\x85", 3),
    ("\U000e0001\U000e0041", 2), ("filler\u3164\u115f", 2),
])
def test_what_hides_text_is_removed_and_counted(text, count):
    kept, removed = strip_hidden(text)
    assert len(removed) == count and RAW.findall(kept) == [] and "\ufeff" not in kept


def test_reveal_writes_escapes_that_json_reads_back():
    text = f"a\u200bb{tags('x')}\x1b[2K\u202e"
    shown = reveal(text)
    assert shown == r"a\u200bb\udb40\udc78\x1b[2K\u202e"
    assert json.loads(f'"{reveal("z" + tags("hi") + chr(0x202E))}"') == "z" + tags("hi") + "\u202e"
    assert terminal_visible("a\rb") == r"a\rb" and reveal("a\r\nb") == "a\r\nb"


def test_nested_values_are_cleaned_keys_included():
    value = {"description": "Say\u200b it", "properties": {"x\u2060": {"enum": ["a\u202e", 1]}}}
    assert strip_hidden_in(value) == ({"description": "Say it", "properties": {"x": {"enum": ["a", 1]}}}, "\u200b\u2060\u202e")


def test_runs_and_names():
    assert hidden_runs("ab\u200b\u200bc\n\u202ed") == [(2, 4), (6, 7)]
    assert describe("\u202e\u202e\u200b\U000e0041\u2060") == \
        "U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE, U+E0041 TAG LATIN CAPITAL LETTER A, …"


def test_the_terminal_escaping_is_the_same_class():
    from sunwell.cli.rendering import visible

    text = f"{SMUGGLED}\u200b\u00ad\ufe0f\x1b\r{INNOCENT}"
    assert RAW.findall(visible(text)) == [] and "\r" not in visible(text) and visible(text).endswith(INNOCENT)


def test_streamed_text_keeps_a_sequence_split_between_deltas_and_still_escapes_the_rest():
    """A model's answer arrives in pieces; whether a joiner is legitimate depends on the characters on both sides."""
    import io

    from sunwell.cli.rendering import Transcript
    from sunwell.wire.events import DoneEvent, TextEvent, ThinkingEvent

    out = io.StringIO()
    show = Transcript(out)
    for delta in ["👩", "\u200d", "💻 ❤", "\ufe0f", "\u200d🔥 ", "می\u200c", "خواهم a", "\u200bb", tags("hi"), "\u200d"]:
        show(TextEvent(delta=delta))
    show(ThinkingEvent(delta="\u200d"))
    show(DoneEvent(status="completed", tool_calls=0, usage=None))
    assert out.getvalue() == r"👩‍💻 ❤️‍🔥 می‌خواهم a\u200bb\udb40\udc68\udb40\udc69\u200d\u200d" + "\n"
