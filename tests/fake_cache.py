"""Prompt caching as Anthropic and OpenAI bill it, for the fake provider (fake_provider.py) and bench/bench_cache.py.

Both services cache a prompt's prefix: the exact rendered bytes from its start. Tokens here are a deterministic
estimate, a quarter of the bytes of each piece's canonical JSON (keys sorted, no blanks), so that any two runs and
any two placements of breakpoints count the same request the same way.

Anthropic (explicit breakpoints, "Prompt caching"): the prompt renders as tools, then system blocks, then message
blocks. A block carrying `cache_control` is a breakpoint (at most 4 in a request, else a 400). For each breakpoint
the service looks for a live cache entry at that block's prefix or at any of the 20 block boundaries before it,
and reads the longest it finds (`cache_read_input_tokens`, billed 0.1×); then it writes an entry at every
breakpoint whose prefix reaches the model's minimum (1,024 tokens for most models), billing what lies between the
read and the last entry written as `cache_creation_input_tokens` (1.25×); the rest is `input_tokens` (1×). An entry
lives 5 minutes from its last use. A changed `tool_choice` invalidates the messages' entries, not the tools' or
the system's.

OpenAI (automatic): a request whose prompt shares a prefix of at least 1,024 tokens with a recent request routed to
the same cache (same model and `prompt_cache_key`) reads it in steps of 128 tokens (`cached_tokens`); nothing is
billed for writing.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

TOKEN_BYTES = 4
TTL = 300.0
LOOKBACK = 20
MAX_BREAKPOINTS = 4
OPENAI_MIN = 1024
OPENAI_STEP = 128


@dataclass(frozen=True)
class Billed:
    """One request's prompt tokens as the service bills them."""

    uncached: int
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.uncached + self.cache_read + self.cache_write

    def price(self, read: float = 0.1, write: float = 1.25) -> float:
        """The prompt's cost in input-token units: read and written tokens at their multiples."""
        return self.uncached + read * self.cache_read + write * self.cache_write


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tokens(text: str) -> int:
    return math.ceil(len(text.encode()) / TOKEN_BYTES)


def anthropic_min_tokens(model: str) -> int:
    """The shortest prefix a breakpoint caches, by model (Anthropic's table)."""
    name = model.lower()
    if any(f"{family}-4-{minor}" in name for family in ("opus", "haiku") for minor in range(5, 10)):
        return 4096
    if "haiku-3" in name or "3-haiku" in name or "3-5-haiku" in name:
        return 2048
    return 1024


def _unmarked(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def anthropic_pieces(body: dict) -> list[tuple[str, bool]]:
    """(canonical text, carries a breakpoint) for every block of a Messages request, in render order."""
    pieces = [(canonical({"tool": _unmarked(t)}), isinstance(t, dict) and "cache_control" in t)
              for t in body.get("tools") or []]
    pieces += [(canonical({"system": _unmarked(b)}), isinstance(b, dict) and "cache_control" in b)
               for b in _blocks(body.get("system"))]
    # what invalidates the messages' entries without touching the tools' or the system's
    settings = {"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")}
    for message in body.get("messages") or []:
        for n, block in enumerate(_blocks(message.get("content"))):
            head = {"role": message.get("role"), **settings} if n == 0 else {}
            pieces.append((canonical({**head, "block": _unmarked(block)}),
                           isinstance(block, dict) and "cache_control" in block))
            settings = {}
    return pieces


def breakpoints(body: dict) -> list[int]:
    """The block indexes (render order) that carry `cache_control`."""
    return [i for i, (_, marked) in enumerate(anthropic_pieces(body)) if marked]


def anthropic_cache_error(body: dict) -> str | None:
    """The 400 Anthropic answers for breakpoints it does not take; None if they are fine."""
    count = len(breakpoints(body))
    if count > MAX_BREAKPOINTS:
        return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {count}."
    for message in body.get("messages") or []:
        for block in _blocks(message.get("content")):
            if isinstance(block, dict) and "cache_control" in block and block.get("type") in (
                    "thinking", "redacted_thinking"):
                return "messages: thinking blocks cannot be marked with cache_control"
    return None


def _chain(seed: str, texts: Iterable[str]) -> tuple[list[str], list[int]]:
    """The hash of each prefix (ending at each text) and its tokens."""
    state = hashlib.sha256(seed.encode())
    hashes, sizes, total = [], [], 0
    for text in texts:
        state.update(b"\x00" + text.encode())
        total += tokens(text)
        hashes.append(state.hexdigest())
        sizes.append(total)
    return hashes, sizes


class _Entries:
    """Live cache entries: prefix hash -> when it expires."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl, self.clock = ttl, clock
        self._until: dict[str, float] = {}

    def live(self, key: str, now: float) -> bool:
        return self._until.get(key, -math.inf) > now

    def keep(self, key: str, now: float) -> None:
        self._until[key] = now + self.ttl


class AnthropicCache:
    """One account's Anthropic prompt cache."""

    def __init__(self, *, ttl: float = TTL, lookback: int = LOOKBACK, min_tokens: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.entries = _Entries(ttl, clock)
        self.lookback, self.min_tokens = lookback, min_tokens

    def bill(self, body: dict) -> Billed:
        pieces = anthropic_pieces(body)
        hashes, sizes = _chain(str(body.get("model")), (text for text, _ in pieces))
        if not pieces:
            return Billed(0)
        marks = [i for i, (_, marked) in enumerate(pieces) if marked]
        minimum = self.min_tokens if self.min_tokens is not None else anthropic_min_tokens(str(body.get("model")))
        now = self.entries.clock()
        read = 0
        for mark in marks:
            for at in range(mark, max(mark - self.lookback, 0) - 1, -1):
                if self.entries.live(hashes[at], now):
                    self.entries.keep(hashes[at], now)  # a read refreshes the entry
                    read = max(read, sizes[at])
                    break
        written = 0
        for mark in marks:
            if sizes[mark] >= minimum:
                self.entries.keep(hashes[mark], now)
                written = max(written, sizes[mark])
        write = max(written - read, 0)
        return Billed(uncached=sizes[-1] - read - write, cache_read=read, cache_write=write)


def openai_prompt(body: dict) -> str:
    """What OpenAI renders before the messages (tools, a reply schema), then the messages."""
    head = canonical({"tools": body.get("tools"), "response_format": body.get("response_format")})
    return head + "".join(canonical(message) for message in body.get("messages") or [])


class OpenAICache:
    """One account's OpenAI prompt cache: prefixes held per model and `prompt_cache_key`."""

    def __init__(self, *, ttl: float = TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.entries = _Entries(ttl, clock)

    def bill(self, body: dict) -> Billed:
        data = openai_prompt(body).encode()
        total = math.ceil(len(data) / TOKEN_BYTES)
        state = hashlib.sha256(canonical([body.get("model"), body.get("prompt_cache_key")]).encode())
        now = self.entries.clock()
        read, done = 0, 0
        for size in range(OPENAI_MIN, total + 1, OPENAI_STEP):  # prefixes are cached in steps of 128 tokens
            state.update(data[done * TOKEN_BYTES:size * TOKEN_BYTES])
            done = size
            key = state.hexdigest()
            if self.entries.live(key, now):
                read = size
            self.entries.keep(key, now)
        return Billed(uncached=total - read, cache_read=read)
