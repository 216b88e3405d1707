"""The fake provider's script: what a test scripts (Reply, Fail, Call, Thinking), what the server records, and what
both wire formats share (chunking, the prompt's token count). fake_provider.py documents the whole."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fake_cache import Billed


@dataclass
class Call:
    """One tool call of a scripted reply. ``arguments`` is raw JSON text, streamed in pieces."""

    name: str
    arguments: str = "{}"
    id: str | None = None  # default "call_<n>" (openai) / "toolu_<n>" (anthropic), n = 1, 2... per server


@dataclass
class Thinking:
    """One thinking block of a scripted reply (``Reply.blocks``), signed for its text unless told otherwise."""

    text: str
    signature: str = ""  # default: thinking_signature(text)

    def __post_init__(self) -> None:
        self.signature = self.signature or thinking_signature(self.text)


def thinking_signature(text: str) -> str:
    """The signature the fake gives a thinking text (and checks when the block comes back)."""
    return base64.b64encode(b"fake-signature:" + hashlib.sha256(text.encode()).digest()[:9]).decode()


@dataclass
class Reply:
    """A scripted successful model answer (streamed if the request asked for ``stream: true``)."""

    text: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    thinking: str = ""  # Anthropic thinking block (ignored for OpenAI)
    # The answer's parts in this order instead (a str is text): Anthropic content blocks, each Thinking its own
    # signed block; OpenAI streams the texts as `content`, the thinking as `reasoning_content` (as DeepSeek and
    # vLLM do), then the calls. `text` and `tool_calls` are set from it.
    blocks: list[str | Thinking | Call] = field(default_factory=list)
    chunk: int = 7  # text / argument JSON are split into pieces of this many characters
    delay: float = 0.0  # seconds to sleep between SSE events
    cut_after: int | None = None  # drop the connection after this many SSE events (non-stream: at once)
    usage: tuple[int, int] = (10, 5)  # (input/prompt tokens, output/completion tokens)
    cache: tuple[int, int] = (0, 0)  # of the input: tokens read from the prompt cache, tokens written to it
    interleave: bool = False  # OpenAI: round-robin the argument pieces of several tool calls
    truncated: bool = False  # finish_reason "length" / stop_reason "max_tokens"
    # Streams of OpenAI-compatible servers that stray from OpenAI's (each seen in the wild):
    omit_index: bool = False  # tool-call deltas without `index`; interleaved ones then repeat the call's `id`
    send_usage: bool = True  # False: no usage chunk (nor `usage` fields), whatever `stream_options` asks
    arguments_first: bool = False  # a call's id and argument pieces come first, its name last
    # Answer only once this file exists (the request is recorded at once): a test kills the client while the request
    # waits, at an exact step boundary. The fake's stop ends the wait by dropping the connection.
    wait_for: str | os.PathLike[str] | None = None
    # The first token's likeliest alternatives and their probabilities, streamed as `logprobs` on the first content
    # chunk (as OpenAI, llama.cpp and vLLM do) when the request asks with `logprobs` and `top_logprobs`.
    first_tokens: list[tuple[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.blocks:
            assert not (self.text or self.tool_calls or self.thinking), "blocks replace text, tool_calls, thinking"
            self.text = "".join(b for b in self.blocks if isinstance(b, str))
            self.tool_calls = [b for b in self.blocks if isinstance(b, Call)]

    def content(self) -> list[str | Thinking | Call]:
        """The answer's parts in order."""
        if self.blocks:
            return list(self.blocks)
        thinking = [Thinking(self.thinking, FAKE_SIGNATURE)] if self.thinking else []
        return [*thinking, *([self.text] if self.text else []), *self.tool_calls]


@dataclass
class Fail:
    """A scripted HTTP error answered with the vendor's error body (and these extra headers)."""

    status: int
    message: str = "fake provider: scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    wait_for: str | os.PathLike[str] | None = None  # as Reply.wait_for


@dataclass
class Recorded:
    """One request received by the server."""

    path: str
    headers: dict[str, str]  # lower-case keys
    body: Any  # parsed JSON (None if the body was not JSON)
    tokens: int | None = None  # the prompt tokens counted, when the server counts (``context_limit``/``tokenizer``)
    billed: Billed | None = None  # the prompt as the prompt cache billed it (``FakeProvider(cache=True)``)


Scripted = Reply | Fail | Callable[[dict], Reply | Fail]

NO_SCRIPT_LEFT = "fake provider: no scripted response left"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAKE_SIGNATURE = "ZmFrZS1zaWduYXR1cmU="


def is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def chunked(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


# --------------------------------------------------------------------------- context window

# Pieces the way BPE pre-tokenizers split text (words with their leading blank, short runs of digits and symbols,
# blank runs); a long piece costs a token per ~7 characters. Within ~10 % of Qwen2.5's tokenizer on prose, JSON
# and Python (measured on this repository), which is all the fake needs to refuse and report like a server.
_PIECE = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]{1,3}|\s+(?!\S)|\s+")
MESSAGE_OVERHEAD = 4  # the chat template's role markers around each message (`<|im_start|>user\n…<|im_end|>\n`)


def approximate_tokens(text: str) -> int:
    return sum(1 if len(piece) <= 10 else math.ceil(len(piece) / 7) for piece in _PIECE.findall(text))


def count_tokens(body: dict, tokenizer: Callable[[str], int] = approximate_tokens) -> int:
    """The prompt tokens of a Chat Completions or Messages request: system, messages (text, calls, results,
    thinking) and tool definitions, plus each message's template overhead."""
    texts: list[str] = []

    def walk(content: Any) -> None:
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for item in content:
                walk(item)
        elif isinstance(content, dict):
            for key in ("text", "thinking", "content", "arguments", "name"):
                walk(content.get(key))
            if "input" in content:  # an Anthropic tool_use block
                texts.append(json.dumps(content["input"]))
            if "function" in content:
                walk(content["function"])
            walk(content.get("tool_calls"))

    walk(body.get("system"))
    messages = body.get("messages") or []
    for message in messages:
        walk(message)
    if body.get("tools"):
        texts.append(json.dumps(body["tools"]))
    overhead = MESSAGE_OVERHEAD * (len(messages) + (1 if body.get("system") else 0)) + 3  # + the reply's opening
    return overhead + sum(tokenizer(text) for text in texts)
