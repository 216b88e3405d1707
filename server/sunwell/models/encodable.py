"""Model output as text every encoder takes: a lone UTF-16 surrogate becomes U+FFFD.

JSON may spell a lone surrogate as an escape (`"\\ud800"`), and Python's decoders (the SDKs' `json.loads`, our
`json_repair` and `ast.literal_eval` of a model's text) turn it into a str that UTF-8 refuses: the session log,
the event stream, a file written by a tool would each fail the turn. What a model sends is data, so it is made
encodable where it enters: the canonical stream events (`base.py`) and the values read from a model's JSON
(`arguments.load_json`). The session log applies it once more to what it writes, as a last line of defence.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(value: Any) -> Any:
    """`value` with each lone surrogate in its strings (dict keys too, nested in lists and dicts) replaced by U+FFFD.

    A valid pair stays the character it spells, even as two code points. A str is returned as it is when it has no
    surrogate (checked without copying: this runs on every streamed delta); lists and dicts are copied."""
    if isinstance(value, str):
        return _text(value)
    if not isinstance(value, dict | list):
        return value
    # Walked with a stack of our own, not by recursion: a model nests as deep as the JSON reader lets it.
    top: list[Any] = [value]
    todo: list[tuple[Any, Any]] = [(top, 0)]  # (container, key) whose item is still the model's
    while todo:
        container, key = todo.pop()
        item = container[key]
        if isinstance(item, str):
            container[key] = _text(item)
        elif isinstance(item, list):
            container[key] = copy = list(item)
            todo += [(copy, index) for index in range(len(copy))]
        elif isinstance(item, dict):
            container[key] = copy = {_text(k) if isinstance(k, str) else k: v for k, v in item.items()}
            todo += [(copy, k) for k in copy]
    return top[0]


def _text(text: str) -> str:
    if text.isascii() or not _SURROGATE.search(text):
        return text
    # UTF-16 has room for surrogates: the encoder lets them through, the decoder joins each valid pair and replaces
    # what is left alone.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
