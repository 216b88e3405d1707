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


IMAGE_SIDE_UNKNOWN = 1024
"""The side assumed of an image logged without its size."""
ANTHROPIC_IMAGE_CAP = 1600
"""Anthropic scales an image down to about 1.15 megapixels, about this many tokens (its "Vision" guide)."""


def image_tokens(width: int | None, height: int | None, provider: str) -> int:
    """What one image costs as `provider` counts it: Anthropic width × height / 750; OpenAI's rule at `detail: high`
    (fit in 2048 × 2048, the short side down to 768, then 170 a 512-pixel tile and 85) for every other, Ollama's and
    compatible servers' too (they publish none)."""
    width, height = width or IMAGE_SIDE_UNKNOWN, height or IMAGE_SIDE_UNKNOWN
    if provider == "anthropic":
        return min(math.ceil(width * height / 750), ANTHROPIC_IMAGE_CAP)
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    width, height = width * scale, height * scale
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


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
