"""A scripted fake LLM provider: a real local HTTP server for tests.

It speaks both wire formats our product uses, closely enough that the real
``openai`` and ``anthropic`` SDKs consume it unchanged:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (SSE ``data:`` chunks + ``[DONE]``)
* Anthropic Messages:      ``POST /v1/messages`` (SSE ``event:``/``data:`` pairs)

Only the model's answers are scripted; everything else (HTTP, SSE framing,
chunking, ids, usage, error bodies, request validation) behaves like the real
services::

    from fake_provider import Call, Fail, FakeProvider, Reply  # tests/ is on sys.path under pytest

    with FakeProvider() as fake:
        fake.script(
            Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=3),
            Fail(429, headers={"retry-after": "0"}),
            lambda body: Reply(text=f"saw {len(body['messages'])} messages"),
        )
        client = AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="test")  # OpenAI format
        client = AsyncAnthropic(base_url=fake.url, api_key="test")        # Anthropic format
        # a subprocess gets OPENAI_BASE_URL=f"{fake.url}/v1" or ANTHROPIC_BASE_URL=fake.url
        ...
        assert fake.remaining == 0
        assert fake.requests[0].headers["authorization"] == "Bearer test"

Rules:

* ``script()`` appends to ONE FIFO queue shared by both endpoints. A callable
  entry is called with the parsed request body and must return a Reply or Fail.
* Every request is recorded in ``fake.requests`` (also invalid ones).
* A request is first validated like the real service does (``validate_openai`` /
  ``validate_anthropic``); an invalid one is answered 400 with the vendor's error
  body and does NOT consume a scripted response (the model is never reached).
* An empty queue answers 500 "fake provider: no scripted response left".
* Scripted tool call names/arguments are never checked against the offered tools.
* A thinking block sent back to the Anthropic endpoint must carry the signature the
  fake gave that very text (``thinking_signature``; ``FAKE_SIGNATURE`` passes for any).
* Streaming responses use chunked transfer encoding and ``Connection: close``;
  ``Reply.cut_after`` closes the socket mid-body so the client gets a real
  protocol error (incomplete chunked read), exactly like a dropped connection.
* ``Reply(wait_for=path)`` / ``Fail(wait_for=path)`` holds the answer until the file exists (the request is
  recorded at once): a test waits for ``len(fake.requests)`` to grow, then kills the client at that exact step.
* ``FakeProvider(cache=True)`` bills each request's prompt as the service's prompt cache would (fake_cache.py):
  Anthropic from the ``cache_control`` breakpoints it carries, OpenAI from the prefixes of earlier requests; the
  usage reported is that count (``Recorded.billed``), whatever the script says of the input. Without it, a reply
  reports ``Reply.cache`` (read, written) as part of its scripted input. More than 4 breakpoints is always a 400.
* ``FakeProvider(context_limit=N)`` counts every request's prompt tokens (``count_tokens``, with
  ``tokenizer`` or an approximation of a BPE tokenizer) and refuses one that does not fit with the
  vendor's real length refusal (400; not consuming a scripted response); while counting, replies report
  the counted prompt tokens as their input usage, as the real services do. ``Recorded.tokens`` keeps the
  count, ``fake.refusals`` the number of refusals.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import math
import os
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from fake_cache import AnthropicCache, Billed, OpenAICache, anthropic_cache_error

__all__ = ["Call", "Fail", "FakeProvider", "Recorded", "Reply", "Thinking", "approximate_tokens", "count_tokens",
           "thinking_signature", "validate_anthropic", "validate_openai"]


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
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAKE_SIGNATURE = "ZmFrZS1zaWduYXR1cmU="


# --------------------------------------------------------------------------- validation


def _is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def _validate_openai_tools(body: dict) -> str | None:
    if "tools" not in body:
        if "tool_choice" in body:
            return (
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
            )
        return None
    tools = body["tools"]
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array, but got an object instead."
    if not tools:
        return (
            "Invalid 'tools': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead."
        )
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return f"Invalid value for 'tools[{i}].type': expected 'function'."
        function = tool.get("function")
        if not isinstance(function, dict) or "name" not in function:
            return f"Missing required parameter: 'tools[{i}].function.name'."
        name = function["name"]
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return (
                f"Invalid 'tools[{i}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'."
            )
        if "parameters" in function and not _is_object_schema(function["parameters"]):
            got = function["parameters"].get("type") if isinstance(function["parameters"], dict) else None
            return (
                f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                f"'type: \"object\"', got 'type: \"{got}\"'."
            )
    return None


def _validate_openai_message_fields(i: int, msg: Any) -> str | None:
    roles = ("system", "developer", "user", "assistant", "tool", "function")
    if not isinstance(msg, dict):
        return (
            f"Invalid type for 'messages[{i}]': expected an object, but got a {type(msg).__name__} instead."
        )
    role = msg.get("role")
    if role not in roles:
        return (
            f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'."
        )
    content = msg.get("content")
    if role == "assistant":
        if content is None and not msg.get("tool_calls"):
            return f"Invalid value for 'messages[{i}].content': expected a string, got null."
        for j, call in enumerate(msg.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not call.get("id"):
                return f"Missing required parameter: 'messages[{i}].tool_calls[{j}].id'."
            if not isinstance(function, dict) or "name" not in function:
                return f"Missing required parameter: 'messages[{i}].tool_calls[{j}].function.name'."
            if not isinstance(function.get("arguments"), str):
                return (
                    f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': "
                    "expected a string, but got an object instead."
                )
    elif content is None:
        return f"Invalid value for 'messages[{i}].content': expected a string, got null."
    if role == "tool" and not msg.get("tool_call_id"):
        return "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'."
    return None


def validate_openai(body: Any) -> str | None:
    """Reject a malformed Chat Completions request the way OpenAI does; None if valid."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not body.get("model"):
        return "you must provide a model parameter"
    if "messages" not in body:
        return "Missing required parameter: 'messages'."
    messages = body["messages"]
    if not isinstance(messages, list):
        return "Invalid type for 'messages': expected an array, but got an object instead."
    if not messages:
        return (
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead."
        )
    if error := _validate_openai_tools(body):
        return error
    if "prompt_cache_key" in body and not isinstance(body["prompt_cache_key"], str):
        return "Invalid type for 'prompt_cache_key': expected a string, but got an object instead."

    pending: list[str] = []  # tool_call_ids of the last assistant message not answered yet
    answerable: set[str] = set()  # tool_call_ids a 'tool' message may answer right now
    for i, msg in enumerate(messages):
        if error := _validate_openai_message_fields(i, msg):
            return error
        role = msg["role"]
        if role == "tool":
            if msg["tool_call_id"] not in answerable:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if msg["tool_call_id"] in pending:
                pending.remove(msg["tool_call_id"])
            continue
        if pending:
            return _openai_missing_tool_responses(pending)
        answerable = set()
        if role == "assistant" and msg.get("tool_calls"):
            pending = [call["id"] for call in msg["tool_calls"]]
            answerable = set(pending)
    if pending:
        return _openai_missing_tool_responses(pending)
    return None


def _openai_missing_tool_responses(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}"
    )


def _validate_anthropic_tools(body: dict) -> str | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools.{i}: Input should be a valid dictionary"
        if "type" in tool and tool["type"] not in ("custom", None):
            continue  # server / built-in tools (web_search_...): not modelled
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if "input_schema" not in tool:
            return f"tools.{i}.custom.input_schema: Field required"
        if not _is_object_schema(tool["input_schema"]):
            return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
            return "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"
        if choice["type"] == "tool" and not choice.get("name"):
            return "tool_choice.tool.name: Field required"
    return None


def _anthropic_blocks(i: int, msg: dict, last: bool) -> tuple[list[dict] | None, str | None]:
    """The message's content as a list of blocks, or an error."""
    content = msg.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return None, f"messages.{i}.content: Input should be a valid list"
    if not content and not (last and msg["role"] == "assistant"):
        return None, (
            f"messages.{i}: all messages must have non-empty content except for the optional final "
            "assistant message"
        )
    for j, block in enumerate(content):
        if block.get("type") == "text" and not block.get("text"):
            return None, "messages: text content blocks must be non-empty"
        if block.get("type") == "thinking":
            if not block.get("signature"):
                return None, f"messages.{i}.content.{j}.thinking.signature: Field required"
            if block["signature"] not in (FAKE_SIGNATURE, thinking_signature(str(block.get("thinking")))):
                return None, f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        if block.get("type") == "tool_use":
            for key in ("id", "name", "input"):
                if key not in block:
                    return None, f"messages.{i}.content.{j}.tool_use.{key}: Field required"
            if not isinstance(block["input"], dict):
                return None, f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
    return content, None


def _anthropic_missing_results(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )


def validate_anthropic(body: Any) -> str | None:
    """Reject a malformed Messages request the way Anthropic does; None if valid."""
    if not isinstance(body, dict):
        return "There was an issue with the JSON body of your request."
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if body["max_tokens"] <= budget:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
    if error := _validate_anthropic_tools(body):
        return error
    if error := anthropic_cache_error(body):
        return error
    messages = body["messages"]
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    if not messages:
        return "messages: at least one message is required"

    pending: list[str] = []  # tool_use ids of the previous assistant message
    pending_index = -1
    previous_role = None
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "system":
            return (
                'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                'parameter, not "system" as an input message role.'
            )
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        if role == previous_role:
            return (
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row'
            )
        previous_role = role
        blocks, error = _anthropic_blocks(i, msg, last=i == len(messages) - 1)
        if error:
            return error
        assert blocks is not None
        if role == "assistant":
            pending = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            pending_index = i
            continue
        answered = []
        for j, block in enumerate(blocks):
            if block.get("type") != "tool_result":
                continue
            if block.get("tool_use_id") not in pending:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
            answered.append(block["tool_use_id"])
        if missing := [tool_id for tool_id in pending if tool_id not in answered]:
            return _anthropic_missing_results(pending_index, missing)
        if any(b.get("type") != "tool_result" for b in blocks[: len(pending)]):
            return (
                f"messages.{i}: Did not find {len(pending)} `tool_result` block(s) at the beginning of this "
                "message. Messages following `tool_use` blocks must begin with a matching number of "
                "`tool_result` blocks."
            )
        pending = []
    if pending:
        return _anthropic_missing_results(pending_index, pending)
    return None


# --------------------------------------------------------------------------- wire formats

OPENAI_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def openai_error_body(status: int, message: str) -> dict:
    kind, code = OPENAI_ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error_body(status: int, message: str, request_id: str) -> dict:
    kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


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


def openai_length_refusal(limit: int, prompt: int, completion: int, functions: int) -> dict:
    """OpenAI's 400 `context_length_exceeded`, worded as it words it (with the completion when that tips it)."""
    parts = f"{prompt - functions} in the messages" + (f", {functions} in the functions" if functions else "")
    if prompt > limit:
        said = (f"your messages resulted in {prompt} tokens" + (f" ({parts})" if functions else "")
                + ". Please reduce the length of the messages" + (" or functions." if functions else "."))
    else:
        said = (f"you requested {prompt + completion} tokens ({parts}, and {completion} in the completion). "
                "Please reduce the length of the messages or completion.")
    message = f"This model's maximum context length is {limit} tokens. However, {said}"
    return {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}


def anthropic_length_refusal(limit: int, prompt: int, max_tokens: int, request_id: str) -> dict:
    """Anthropic's 400 invalid_request_error for a prompt (or a prompt and `max_tokens`) over the window."""
    if prompt > limit:
        message = f"prompt is too long: {prompt} tokens > {limit} maximum"
    else:
        message = (f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > {limit}, "
                   "decrease input length or `max_tokens` and try again")
    return anthropic_error_body(400, message, request_id)


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _openai_events(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> Iterator[dict]:
    """The chat.completion.chunk objects of one streamed OpenAI answer."""
    include_usage = reply.send_usage and bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict, finish: str | None = None) -> dict:
        out = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            out["usage"] = None
        return out

    first_content = "" if reply.text or not reply.tool_calls else None  # like OpenAI: null before tool calls
    yield chunk({"role": "assistant", "content": first_content, "refusal": None})
    for part in reply.blocks or [reply.text]:
        if isinstance(part, Thinking):
            for piece in _pieces(part.text, reply.chunk):
                yield chunk({"reasoning_content": piece})
        elif isinstance(part, str):
            for n, piece in enumerate(_pieces(part, reply.chunk)):
                event = chunk({"content": piece})
                if n == 0 and reply.first_tokens and body.get("logprobs"):
                    tops = [{"token": token, "logprob": math.log(p), "bytes": None}
                            for token, p in reply.first_tokens[: body.get("top_logprobs") or 0]]
                    first = {"token": piece, "logprob": 0.0, "bytes": None, "top_logprobs": tops}
                    event["choices"][0]["logprobs"] = {"content": [first]}
                yield event

    def tool_delta(i: int, part: dict) -> dict:
        if reply.omit_index:
            # Without an index, interleaved pieces can only be told apart by the id (servers that omit the
            # index and interleave repeat it); otherwise a piece continues the one open call.
            return chunk({"tool_calls": [{"id": call_ids[i], **part} if reply.interleave else part]})
        return chunk({"tool_calls": [{"index": i, **part}]})

    def header(i: int) -> dict:
        function = {"arguments": ""}
        if not reply.arguments_first:
            function = {"name": reply.tool_calls[i].name, **function}
        return tool_delta(i, {"id": call_ids[i], "type": "function", "function": function})

    def argument(i: int, piece: str) -> dict:
        return tool_delta(i, {"function": {"arguments": piece}})

    def name(i: int) -> Iterator[dict]:
        if reply.arguments_first:
            yield tool_delta(i, {"function": {"name": reply.tool_calls[i].name}})

    pieces = [_pieces(call.arguments, reply.chunk) for call in reply.tool_calls]
    if reply.interleave:
        for i in range(len(reply.tool_calls)):
            yield header(i)
        for round_ in range(max(map(len, pieces), default=0)):
            for i, call_pieces in enumerate(pieces):
                if round_ < len(call_pieces):
                    yield argument(i, call_pieces[round_])
        for i in range(len(reply.tool_calls)):
            yield from name(i)
    else:
        for i, call_pieces in enumerate(pieces):
            yield header(i)
            for piece in call_pieces:
                yield argument(i, piece)
            yield from name(i)

    yield chunk({}, _openai_finish(reply))
    if include_usage:
        yield {**chunk({}), "choices": [], "usage": _openai_usage(reply)}


def _openai_finish(reply: Reply) -> str:
    return "length" if reply.truncated else "tool_calls" if reply.tool_calls else "stop"


def _openai_usage(reply: Reply) -> dict:
    prompt, completion = reply.usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cache[0], "audio_tokens": 0}}


def _openai_completion(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> dict:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": (reply.text or None) if reply.tool_calls else reply.text,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call, call_id in zip(reply.tool_calls, call_ids)
        ]
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _openai_finish(reply)}
        ],
        "usage": _openai_usage(reply),
    }


def _anthropic_stop(reply: Reply) -> str:
    return "max_tokens" if reply.truncated else "tool_use" if reply.tool_calls else "end_turn"


def _parse_input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return arguments  # scripted invalid JSON is passed through as-is


def _anthropic_input(reply: Reply) -> dict:
    """Anthropic's input usage: what was read from and written to the cache apart from the rest."""
    read, written = reply.cache
    return {"input_tokens": reply.usage[0] - read - written, "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read}


def _anthropic_events(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> Iterator[dict]:
    """The (typed) events of one streamed Anthropic answer."""
    output_tokens = reply.usage[1]
    yield {
        "type": "message_start",
        "message": {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**_anthropic_input(reply), "output_tokens": 1},
        },
    }
    yield {"type": "ping"}
    index = 0

    def block(start: dict, deltas: list[dict]) -> Iterator[dict]:
        yield {"type": "content_block_start", "index": index, "content_block": start}
        for delta in deltas:
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}

    ids = iter(call_ids)
    for part in reply.content():
        if isinstance(part, Thinking):
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(part.text, reply.chunk)]
            deltas.append({"type": "signature_delta", "signature": part.signature})
            yield from block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        elif isinstance(part, str):
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(part, reply.chunk)]
            yield from block({"type": "text", "text": ""}, deltas)
        else:
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(part.arguments, reply.chunk)]
            start = {"type": "tool_use", "id": next(ids), "name": part.name, "input": {}}
            yield from block(start, deltas or [{"type": "input_json_delta", "partial_json": ""}])
        index += 1
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    yield {"type": "message_stop"}


def _anthropic_message(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> dict:
    content: list[dict] = []
    ids = iter(call_ids)
    for part in reply.content():
        if isinstance(part, Thinking):
            content.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, str):
            content.append({"type": "text", "text": part})
        else:
            content.append({"type": "tool_use", "id": next(ids), "name": part.name,
                            "input": _parse_input(part.arguments)})
    return {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {**_anthropic_input(reply), "output_tokens": reply.usage[1]},
    }


# --------------------------------------------------------------------------- server


class _Cut(Exception):
    """The connection was dropped (on purpose or by the client); stop answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each SSE event must leave at once
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing

    def _send_head(self, status: int, content_type: str, extra: dict[str, str], length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("x-request-id", self.request_id)  # openai SDK: _request_id
        self.send_header("request-id", self.request_id)  # anthropic SDK: _request_id
        for key, value in extra.items():
            self.send_header(key, value)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()

    def _send_json(self, status: int, payload: dict, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_head(status, "application/json", extra or {}, len(data))
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        if self.vendor == "anthropic":
            payload = anthropic_error_body(status, message, self.request_id)
        else:
            payload = openai_error_body(status, message)
        self._send_json(status, payload, extra)

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as exc:  # the client went away (cancellation)
            raise _Cut from exc

    def _cut(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()
        raise _Cut

    # -- request handling

    def do_POST(self) -> None:
        try:
            self._handle()
        except _Cut:
            self.close_connection = True

    def _handle(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        self.vendor = "anthropic" if path == ANTHROPIC_PATH else "openai"
        self.request_id = f"req_fake{fake._next_number('req')}"
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body)
        fake._record(recorded)

        if path not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send_error(404, f"fake provider: unknown endpoint POST {self.path}")
            return
        validate = validate_anthropic if self.vendor == "anthropic" else validate_openai
        if error := validate(body):
            self._send_error(400, error)
            return
        if fake.counting:
            recorded.tokens = count_tokens(body, fake.tokenizer)
            if (refusal := self._length_refusal(body, recorded.tokens)) is not None:
                fake._refused()
                self._send_json(400, refusal)
                return
        if fake.caches is not None:
            recorded.billed = fake._bill(self.vendor, body)
        try:
            response = fake._next_response(body)
        except Exception as exc:  # noqa: BLE001 - a scripted callable blew up: make the test fail loudly
            self._send_error(500, f"fake provider: scripted callable raised {exc!r}")
            return
        if response is None:
            self._send_error(500, NO_SCRIPT_LEFT)
            return
        if response.wait_for is not None:
            self._wait(response.wait_for)
        if isinstance(response, Fail):
            self._send_error(response.status, response.message, response.headers)
            return
        if recorded.tokens is not None:  # the real services report what they counted, not what a test scripted
            said = response.text + "".join(call.arguments for call in response.tool_calls)
            response = copy.copy(response)  # a scripted Reply may be answered again (a callable's)
            response.usage = (recorded.tokens, max(1, fake.tokenizer(said)))
        if recorded.billed is not None:
            response = copy.copy(response)
            response.usage = (recorded.billed.total, response.usage[1])
            response.cache = (recorded.billed.cache_read, recorded.billed.cache_write)
        self._answer(response, body)

    def _wait(self, path: str | os.PathLike[str]) -> None:
        """Hold the answer until `path` exists; a stopped fake drops the connection instead."""
        while not os.path.exists(path):
            if self.server.fake.stopping.is_set():
                self._cut()
            time.sleep(0.02)

    def _length_refusal(self, body: dict, prompt: int) -> dict | None:
        """The vendor's refusal when `prompt` tokens (and the completion asked for) do not fit the limit."""
        limit = self.server.fake.context_limit
        if limit is None:
            return None
        completion = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        if prompt + completion <= limit:
            return None
        if self.vendor == "anthropic":
            return anthropic_length_refusal(limit, prompt, completion, self.request_id)
        functions = self.server.fake.tokenizer(json.dumps(body["tools"])) if body.get("tools") else 0
        return openai_length_refusal(limit, prompt, completion, functions)

    def _answer(self, reply: Reply, body: dict) -> None:
        fake = self.server.fake
        anthropic = self.vendor == "anthropic"
        prefix = "toolu_" if anthropic else "call_"
        call_ids = [call.id or f"{prefix}{fake._next_number('call')}" for call in reply.tool_calls]
        number = fake._next_number("msg")
        ident = f"msg_fake{number}" if anthropic else f"chatcmpl-fake{number}"

        if not body.get("stream"):
            if reply.delay:
                time.sleep(reply.delay)
            if reply.cut_after is not None:
                self._cut()
            build = _anthropic_message if anthropic else _openai_completion
            self._send_json(200, build(reply, body, ident, call_ids))
            return

        if anthropic:
            events = [
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                for e in _anthropic_events(reply, body, ident, call_ids)
            ]
        else:
            events = [f"data: {json.dumps(c)}\n\n" for c in _openai_events(reply, body, ident, call_ids)]
            events.append("data: [DONE]\n\n")
        self._send_head(200, "text/event-stream; charset=utf-8", {}, None)
        for n, event in enumerate(events):
            if n == reply.cut_after:
                self._cut()
            if n and reply.delay:
                time.sleep(reply.delay)
            self._write_chunk(event.encode())
        if reply.cut_after is not None:
            self._cut()  # never a complete body when a cut was asked for
        self._write_chunk(b"")  # terminal chunk


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeProvider


class FakeProvider:
    """The scripted fake provider server. Use as a context manager or call start()/stop()."""

    def __init__(self, *, context_limit: int | None = None, tokenizer: Callable[[str], int] | None = None,
                 cache: bool = False) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Scripted] = deque()
        self._counters: dict[str, int] = {}
        self.requests: list[Recorded] = []
        self.context_limit = context_limit
        """The window in tokens: longer requests (prompt + the completion asked for) are refused; None: no limit."""
        self.tokenizer = tokenizer or approximate_tokens
        self._count = tokenizer is not None
        self.refusals = 0
        self.caches = {"anthropic": AnthropicCache(), "openai": OpenAICache()} if cache else None
        """Each vendor's prompt cache (fake_cache.py), when the fake bills by it."""
        self.stopping = threading.Event()
        """Set by stop(): answers waiting on a file (``wait_for``) give up."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- public API

    def script(self, *responses: Scripted) -> None:
        """Append answers to the FIFO queue shared by both endpoints."""
        for response in responses:
            if not (isinstance(response, (Reply, Fail)) or callable(response)):
                raise TypeError(f"cannot script {response!r}: expected Reply, Fail or a callable")
        with self._lock:
            self._queue.extend(responses)

    @property
    def counting(self) -> bool:
        """Whether prompts are counted (and usage reported from the count): with a context limit or a tokenizer."""
        return self._count or self.context_limit is not None

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    def start(self) -> Self:
        if self._server is None:
            self.stopping.clear()
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.fake = self
            host, port = self._server.server_address[:2]
            self.url = f"http://{host}:{port}"
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.01,), name="fake-provider", daemon=True
            )  # a short poll interval keeps stop() (and each test's teardown) fast
            self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- used by the handler threads

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _refused(self) -> None:
        with self._lock:
            self.refusals += 1

    def _bill(self, vendor: str, body: dict) -> Billed:
        assert self.caches is not None
        with self._lock:  # requests in order: a cache is a sequence of writes and reads
            return self.caches[vendor].bill(body)

    def _next_number(self, kind: str) -> int:
        """1, 2, 3... per kind ("call", "msg", "req"), so ids are predictable in tests."""
        with self._lock:
            self._counters[kind] = self._counters.get(kind, 0) + 1
            return self._counters[kind]

    def _next_response(self, body: dict) -> Reply | Fail | None:
        with self._lock:
            if not self._queue:
                return None
            response = self._queue.popleft()
        if not isinstance(response, (Reply, Fail)):
            response = response(body)
            if not isinstance(response, (Reply, Fail)):
                raise TypeError(f"scripted callable returned {response!r}, expected Reply or Fail")
        return response
