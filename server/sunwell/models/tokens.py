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
    if not text:
        return 0
    digits = sum(map(text.count, _DIGITS))  # str.count: a pass in C each, far cheaper than a regex
    symbols = sum(map(text.count, _SYMBOLS))
    rest = len(text.encode("utf-8", "surrogatepass")) - digits - symbols
    return math.ceil(rest / BYTES_PER_TOKEN + digits * DIGIT_TOKENS + symbols * SYMBOL_TOKENS)


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return text_tokens(json.dumps([tool.model_dump() for tool in tools], ensure_ascii=False)) if tools else 0
