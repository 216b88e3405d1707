"""Calls written as Python (`Read_file(path="a.txt")`, Llama 3.2's `[f(a=1), g(b=2)]`): read only when they are the
whole reply, streamed or not, and never shown as text."""

from __future__ import annotations

import json

import pytest

from sunwell.models.base import Notice, TextDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CallDetector
from text_calls import extract_tool_calls

NAMES = ["read_file", "list_files", "write_file"]


def stream(text: str, chunks: int = 1) -> list:
    detector = CallDetector(NAMES)
    events = []
    for i in range(0, len(text), chunks):
        events += detector.feed(text[i:i + chunks])
    return events + detector.finish()


def calls(events) -> list[tuple[str, dict]]:
    return [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallDone)]


def shown(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize(("text", "expected"), [
    ('Read_file(path="a.txt", offset=1, limit=2000)', [("Read_file", {"path": "a.txt", "offset": 1, "limit": 2000})]),
    ("  read_file(path='src/app.py')\n", [("read_file", {"path": "src/app.py"})]),
    ('[read_file(path="a.txt"), list_files(path=".", recursive=True)]',
     [("read_file", {"path": "a.txt"}), ("list_files", {"path": ".", "recursive": True})]),
    ('functions.write_file(path="x.md", content="# Title\\n(draft)")',
     [("functions.write_file", {"path": "x.md", "content": "# Title\n(draft)"})]),
])
@pytest.mark.parametrize("chunks", [1, 4, 1000])
def test_a_reply_that_is_python_calls_is_read_as_calls(text, expected, chunks):
    events = stream(text, chunks)
    assert calls(events) == expected
    assert shown(events).strip() == ""
    assert any(isinstance(e, Notice) and "Python" in e.message for e in events)
    one_shot = extract_tool_calls(text, NAMES)
    assert [(c.name, c.arguments) for c in one_shot.calls] == expected and one_shot.remaining_text.strip() == ""


@pytest.mark.parametrize("text", [
    "print() writes a line; read_file(path) reads one.",  # prose after the call
    "add(a=1, b=2)",  # not an offered tool
    "read_file('a.txt')",  # positional: which parameter is meant is a guess
    "read_file(path=open('x').read())",  # not a literal: never evaluated
    "read_file(path=",  # cut off
    "The launch code is 4417.",
])
def test_anything_else_stays_text(text):
    events = stream(text, 3)
    assert calls(events) == [] and shown(events) == text
    assert extract_tool_calls(text, NAMES).calls == []


def test_prose_is_not_held_back():
    detector = CallDetector(NAMES)
    assert detector.feed("The") == []  # could still be The(...)
    assert detector.feed(" launch") == [TextDelta("The launch")]
    assert detector.feed(" code") == [TextDelta(" code")]
