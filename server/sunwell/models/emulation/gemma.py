"""Gemma's call syntax, read from its text: FunctionGemma's `<start_function_call>call:f{a:<escape>x<escape>}
<end_function_call>` and Gemma 4's `<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|>`.

The arguments are an object with bare keys; a string stands between two string delimiters (`<escape>`, `<|"|>`) or
in JSON quotes; numbers, `true`, `false` and `null` are bare, and so is a word the model forgot to quote (read as the
string it spells). Nothing is evaluated.

Gemma 4 also writes its call without the `<|tool_call>` token (vLLM's offline reader falls back to these): `call:f{…}`
(or `<call>f{…}`, the token split) at the start of a line or right after its thought channel closes (`<channel|>`),
read when `f` is an offered tool and its object closes (`bare_call`); `<tool_call>f{…}</tool_call>` (plain tags);
`<|tool_call>:call:` (a stray colon); and `<turn|>`, the end of its turn, where `<tool_call|>` belongs. Its thought
channel, `<|channel>thought\n…<channel|>`, is thinking (`THOUGHT`). A string's closing delimiter is told from one
written inside it by what follows (`_delimited`), as vLLM's parser versions test it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, schema_typed

OPENERS = {"<start_function_call>": "<end_function_call>", "<|tool_call>": "<tool_call|>"}
THOUGHT = {"<|channel>": "<channel|>"}
TURN_END = "<turn|>"
_DELIMITERS = ("<escape>", '<|"|>')
_CALL = re.compile(r"\s*:?\s*(?:call:|<call>)([^\s{]+)\s*\{", re.DOTALL)
_KEY_BEFORE = re.compile(r",\s*[^\W\d][\w.\-]*\s*:\s*\Z")
_KEY_AFTER = re.compile(r"[^\W\d][\w.\-]*\s*:")
_BARE_START = re.compile(r"[ \t]*(?:call:|<call>)([^\s{]*)(\{?)")
BARE_PREFIXES = ("call:", "<call>")


class _Unreadable(ValueError):
    pass


def read_gemma(span: str, tools: Offered) -> Extraction | None:
    """The calls between one pair of Gemma's markers (or of a bare call); None when the text says no call."""
    opener = next((o for o in OPENERS if span.startswith(o)), "")
    body = span[len(opener):].removesuffix(OPENERS.get(opener, ""))
    body = body.rstrip().removesuffix(TURN_END)
    calls, at = [], 0
    while body[at:].strip():  # one call, or several with nothing between them (mlx-lm's test)
        m = _CALL.match(body, at)
        if m is None:
            return None
        try:
            arguments, at = _object(body, m.end())
        except (ValueError, IndexError):  # _Unreadable is a ValueError; so is a key without its colon
            return None
        calls.append(schema_typed(tools, FoundCall(m[1], arguments)))  # FunctionGemma escapes numbers too
    return Extraction(calls=calls) if calls else None


def bare_call(buf: str, pos: int, final: bool, is_tool: Callable[[str], bool]) -> tuple[str, int] | None:
    """A scanner step for a bare call on a line of its own (`call:f{…}`): `candidate` through its object when `f` is
    offered and the object closed, `wait` while the text may still become one, None when it is no call."""
    m = _BARE_START.match(buf, pos)
    if m is None or not m[2]:
        rest = buf[pos:].lstrip(" \t")
        may_grow = (m is not None and m.end() == len(buf)) or any(p.startswith(rest) for p in BARE_PREFIXES)
        return ("wait", pos) if not final and rest and may_grow else None
    if not is_tool(m[1]):
        return None
    try:
        end = _object(buf, m.end())[1]
    except (ValueError, IndexError):  # not closed yet (or never): undecided until the text ends, then prose
        return None if final else ("wait", pos)
    line = buf.find("\n", end)
    open_line = line < 0 and not final
    rest = buf[end : line if line >= 0 else len(buf)].strip()
    if rest and not any(t.startswith(rest) if open_line else t == rest for t in (TURN_END, OPENERS["<|tool_call>"])):
        return None  # prose after it on its line: a call mentioned, as a Python call is
    return ("wait", pos) if open_line else ("candidate", end)


def thought(span: str) -> str:
    """The thinking in Gemma 4's thought channel (closed or not); the channel opened twice is opened once
    (llama.cpp's test)."""
    body = re.sub(r"^(?:<\|channel>)+", "", span).removesuffix("<channel|>")
    return re.sub(r"^thought\s*", "", body)


def _object(text: str, i: int) -> tuple[dict[str, Any], int]:
    """The object whose `{` is just before `i`, and where it ends."""
    out: dict[str, Any] = {}
    i = _space(text, i)
    while text[i] != "}":
        key_end = text.index(":", i)
        key = text[i:key_end].strip().strip('"')
        key = next((key[len(d):-len(d)] for d in _DELIMITERS if len(key) > 2 * len(d) and key.startswith(d)
                    and key.endswith(d)), key)  # a key in string delimiters (vLLM's test_delimited_keys_stripped)
        if not key or any(c in key for c in "{}[],"):
            raise _Unreadable(key)
        out[key], i = _value(text, _space(text, key_end + 1))
        delimited = text.endswith(_DELIMITERS, 0, i)
        i = _space(text, i)
        if text[i] == ",":
            i = _space(text, i + 1)
        elif text[i] != "}" and not delimited:  # a closing delimiter ends its value: a comma may be left out
            raise _Unreadable(text[i:i + 20])
    return out, i + 1


def _value(text: str, i: int) -> tuple[Any, int]:
    for delimiter in _DELIMITERS:
        if text.startswith(delimiter, i):
            return _delimited(text, i + len(delimiter), delimiter)
    if text[i] == "{":
        return _object(text, i + 1)
    if text[i] == "[":
        items: list[Any] = []
        i = _space(text, i + 1)
        while text[i] != "]":
            item, i = _value(text, i)
            items.append(item)
            i = _space(text, i)
            if text[i] == ",":
                i = _space(text, i + 1)
            elif text[i] != "]":
                raise _Unreadable(text[i:i + 20])
        return items, i + 1
    if text[i] == '"':
        decoder = json.JSONDecoder()
        try:
            return decoder.raw_decode(text, i)
        except ValueError:
            raise _Unreadable("a JSON string") from None
    word = _bare_word(text, i)
    try:
        value = json.loads(word.strip())
    except ValueError:
        value = word.strip()
    return value, i + len(word)


def _delimited(text: str, start: int, delimiter: str) -> tuple[str, int]:
    """The string from `start` to its closing delimiter: the first one that the value's end follows (`,`, `}`, `]`,
    or the next key where FunctionGemma left out the comma). One that a value follows is text inside the string,
    unless `,key:` stands just before it: then the model left the string open and began the next key (vLLM's repair),
    and the string ends before that comma."""
    end = text.find(delimiter, start)
    while end >= 0:
        after = _space(text, end + len(delimiter)) if text[end + len(delimiter):].strip() else len(text)
        if after == len(text) or text[after] in ",}]" or _KEY_AFTER.match(text, after):
            return text[start:end], end + len(delimiter)
        if key := _KEY_BEFORE.search(text, start, end):
            return text[start:key.start()], key.start()
        end = text.find(delimiter, end + len(delimiter))
    raise _Unreadable("a string never closed")


def _bare_word(text: str, i: int) -> str:
    """A value the model left unquoted: through the `,`, `}` or `]` at its own depth (`call:f{x:1}` is one value)."""
    depth, j = 0, i
    while j < len(text):
        if delimiter := next((d for d in _DELIMITERS if text.startswith(d, j)), None):
            end = text.find(delimiter, j + len(delimiter))
            if end < 0:
                break
            j = end + len(delimiter)
            continue
        if text[j] in ",}]" and depth == 0:
            break
        depth += (text[j] in "{[") - (text[j] in "}]")
        j += 1
    return text[i:j]


def _space(text: str, i: int) -> int:
    while text[i].isspace():
        i += 1
    return i
