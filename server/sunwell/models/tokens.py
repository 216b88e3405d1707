"""How many tokens a text costs, estimated before sending: the one estimator of the package.

About 4.2 bytes a token for letters and blanks, a digit a token, a symbol a third (`text_tokens`); tool definitions
are their JSON (`tools_tokens`). Fitting the tools to a window (models/fitting.py) and budgeting a whole request
(agent/context.py, which scales this by what the responses' `usage` said) count with it.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Sequence

from sunwell.wire.messages import ToolSpec

BYTES_PER_TOKEN = 4.2
"""Of letters and blanks: prose and code run 3.8-4.3 bytes a token in common tokenizers (Qwen2.5, cl100k)."""
DIGIT_TOKENS, SYMBOL_TOKENS = 1.0, 0.3
"""Digits are a token each in Qwen's and Llama 3's tokenizers, and symbols often one: counted by bytes alone, logs
and numeric code came out 1.6-2.4 times short (measured against Qwen2.5's tokenizer, see BENCHMARKS.md)."""
_DIGITS, _SYMBOLS = "0123456789", string.punctuation


def text_tokens(text: str) -> int:
    return _tokens(*_counts(text)) if text else 0


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return text_tokens(json.dumps([tool.model_dump() for tool in tools], ensure_ascii=False)) if tools else 0


class ToolsTally:
    """`tools_tokens` of a list that changes a tool at a time, kept as running sums: adding, removing or replacing a
    tool serializes that tool alone, not the whole list again. The list's JSON is its tools' JSON joined by `, `
    in `[...]`, and the count is additive in bytes, digits and symbols, so the sums give exactly `tools_tokens`."""

    def __init__(self) -> None:
        self.size = 0
        self._rest = self._digits = self._symbols = 0

    def add(self, tool: ToolSpec) -> tuple[int, int, int]:
        """Count `tool` in; what it counted, for `remove`."""
        counts = _counts(json.dumps(tool.model_dump(), ensure_ascii=False))
        self._move(counts, 1)
        return counts

    def remove(self, counts: tuple[int, int, int]) -> None:
        """Count out the tool `add` counted as `counts`."""
        self._move(counts, -1)

    def _move(self, counts: tuple[int, int, int], sign: int) -> None:
        rest, digits, symbols = counts
        self._rest, self._digits, self._symbols = (self._rest + sign * rest, self._digits + sign * digits,
                                                   self._symbols + sign * symbols)
        self.size += sign

    @property
    def tokens(self) -> int:
        n = self.size
        # n - 1 separators ", " (a symbol and a blank each), and the brackets (two symbols)
        return _tokens(self._rest + n - 1, self._digits, self._symbols + n + 1) if n else 0


def _counts(text: str) -> tuple[int, int, int]:
    """(bytes of letters and blanks, digits, symbols) of `text`."""
    digits = sum(map(text.count, _DIGITS))  # str.count: a pass in C each, far cheaper than a regex
    symbols = sum(map(text.count, _SYMBOLS))
    return len(text.encode("utf-8", "surrogatepass")) - digits - symbols, digits, symbols


def _tokens(rest: int, digits: int, symbols: int) -> int:
    return math.ceil(rest / BYTES_PER_TOKEN + digits * DIGIT_TOKENS + symbols * SYMBOL_TOKENS)
