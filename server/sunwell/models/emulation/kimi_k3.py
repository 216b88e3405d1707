"""Kimi K3's calls (its XTML channels): `<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument
key="a" type="number"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>`; the answer stands in
`<|open|>response<|sep|>…<|close|>response<|sep|>`, thinking in `<|open|>think<|sep|>…<|close|>think<|sep|>`.

An attribute is HTML-escaped (`tool="a&amp;b"`); a `string` value stands as written, any other is JSON, and stays the
text it was where it is none (sglang's reader).
"""

from __future__ import annotations

import html
import json
import re

from sunwell.models.emulation.found_calls import Extraction, FoundCall

OPEN, CLOSE = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
CALL_END = "<|close|>call<|sep|>"
OPENERS = {OPEN: CLOSE}
THINKING = {"<|open|>think<|sep|>": "<|close|>think<|sep|>"}
CONTROL = ("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|open|>", "<|close|>")
"""The answer's own wrapper, and a marker's start whatever follows it: no text of their own."""

_CALL = re.compile(r'<\|open\|>call\s+tool="([^"]*)"[^<]*?<\|sep\|>(.*?)<\|close\|>call<\|sep\|>', re.DOTALL)
_ARGUMENT = re.compile(r'<\|open\|>argument\s+key="([^"]*)"(?:\s+type="([^"]*)")?\s*<\|sep\|>(.*?)'
                       r"<\|close\|>argument<\|sep\|>", re.DOTALL)


def marker_end(buf: str, body: int, final: bool) -> int | None:
    """Where a marker that `<|open|>` or `<|close|>` (ending at `body`) begins ends: through its `<|sep|>`, or else
    through its word (`done<|open|>tool`: a marker the reply ended inside, or quoted); None while it may grow."""
    word = re.match(r"[a-z_]*", buf[body:])
    end = body + word.end()
    if buf.startswith("<|sep|>", end):
        return end + len("<|sep|>")
    if not final and (end == len(buf) or "<|sep|>".startswith(buf[end:])):
        return None
    return end


def read(span: str) -> Extraction:
    """The calls whose own end came (a section the reply ended inside keeps those)."""
    calls = [FoundCall(html.unescape(name).strip(), {html.unescape(key): _value(kind, text)
                                                     for key, kind, text in _ARGUMENT.findall(body)})
             for name, body in _CALL.findall(span)]
    return Extraction(calls=calls)


def _value(kind: str, text: str) -> object:
    if kind in ("", "string"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
