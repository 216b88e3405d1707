"""OpenAI Chat Completions, streaming: OpenAI itself, Ollama's `/v1` and any OpenAI-compatible server.

The `openai` SDK is imported when an adapter is built, not when this module is: the sidecar's cold start must
not pay for it. It sends the request, decodes the event stream and raises its errors, but hands each chunk over as
the JSON the server sent (`cast_to=object`): building its typed `ChatCompletionChunk` per delta cost ~65 µs, about
two thirds of the relay's CPU per token (BENCHMARKS.md, "Speed"). A `ConstrainedRequest` (emulated tool calls)
goes out with its reply schema in the form this endpoint takes, learned from its refusals (`constrained.py`); one
that takes none gets the request without it. One the model may answer goes out free first, and with its schema
only when the reply opens a call (`choice.py`). OpenAI caches a prompt's prefix on its own; it is sent a key per
session to keep a session's requests on one cache (`prompt_cache_key`), other servers are not (one that checks its
parameters may refuse it; llama.cpp and Ollama reuse a prefix without being asked).

A tool result is a `role: tool` message, text only: its parts one a line, an image as a note (wire/results.py
`part_text`; an `image_url` user message after the results would split their run and reach models that cannot see).
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, assert_never

from sunwell.models.base import (
    Finished,
    ModelRequest,
    Notice,
    ProviderError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.emulation.choice import answer_or_call
from sunwell.models.emulation.constrained import (
    ConstrainedRequest,
    ServerConstraints,
    refuses_constraint,
    with_constraint,
)
from sunwell.models.providers.retry import StreamCut, fault_for_status, one_line
from sunwell.models.providers.window import length_refusal
from sunwell.wire.messages import (
    AssistantMessage,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)


class OpenAIChat:
    """A `Provider` over `chat.completions`; `name` is the provider (openai, ollama, openai-compatible)."""

    def __init__(self, *, base_url: str, api_key: str, name: str = "openai",
                 key_env: str = "OPENAI_API_KEY") -> None:
        from openai import AsyncOpenAI, Omit

        self.name = name
        self.base_url = base_url
        self._key_env = key_env
        # Both are passed explicitly: the SDK would otherwise read OPENAI_API_KEY / OPENAI_BASE_URL itself.
        # For other providers the environment's OpenAI identity must not travel either: pin Authorization
        # (OPENAI_CUSTOM_HEADERS could carry one) and drop OPENAI_ORG_ID / OPENAI_PROJECT_ID headers.
        headers: dict[str, Any] = {}
        if name != "openai":
            headers = {"Authorization": f"Bearer {api_key}", "OpenAI-Organization": Omit(),
                       "OpenAI-Project": Omit()}
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, default_headers=headers)
        self.constraints = ServerConstraints()
        """What this endpoint does with a reply schema: one adapter per endpoint, so it is learned once."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The response's events. A constrained request the model may answer goes out free first while this
        endpoint takes a schema, and again with it only when the reply opens a call (`choice.py`); any other
        request's events come straight from `_stream`, with no generator in between on the relay's hot path."""
        if isinstance(request, ConstrainedRequest) and request.answer and self.constraints.dialect() is not None:
            return answer_or_call(self._stream, request)
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from openai import APIConnectionError, OpenAIError

        reducer = ChatStreamReducer()
        streaming = False
        notices: list[Notice] = []
        try:
            response = await self._open(request, notices)
            for notice in notices:
                yield notice
            async with response:
                streaming = True
                async for chunk in response:
                    for event in reducer.feed(chunk):
                        yield event
        except APIConnectionError as exc:
            raise self._map_error(exc, mid_stream=streaming) from exc
        except OpenAIError as exc:
            raise self._map_error(exc) from exc
        for event in reducer.finish(self.name):
            yield event

    async def _open(self, request: ModelRequest, notices: list[Notice]) -> Any:
        """The response stream; a constrained request in each form the endpoint may take, then without."""
        from openai import APIStatusError

        params = self._params(request)
        schema = request.reply_schema if isinstance(request, ConstrainedRequest) else None
        while schema is not None and (dialect := self.constraints.dialect()) is not None:
            try:
                response = await self._create(with_constraint(params, dialect, schema))
            except APIStatusError as exc:
                detail = _detail(exc.body, exc.message)
                if length_refusal(self.name, exc.status_code, detail, _code(exc.body)) or not refuses_constraint(
                        exc.status_code, detail):
                    raise
                if notice := self.constraints.refuse(dialect, f"{exc.status_code}: {one_line(detail)[:200]}"):
                    notices.append(notice)
                continue
            self.constraints.took(dialect)
            return response
        return await self._create(params)

    async def _create(self, params: dict[str, Any]) -> Any:
        from openai import APIConnectionError, AsyncStream

        async def post() -> Any:
            # `chat.completions.create` as the SDK makes it, with the chunks left as the server's JSON (`object`)
            return await self._client.post("/chat/completions", body=params, cast_to=object, stream=True,
                                           stream_cls=AsyncStream[object], options=_BEARER)

        try:
            return await post()
        except APIConnectionError as exc:
            if type(exc.__cause__).__name__ not in _STALE_CONNECTION:
                raise
        # The server closed the kept-alive connection this request went out on before answering: llama-cpp-python
        # closes it just after a stream it cut (a request too long for it), and the next request, sent at once,
        # finds it dead. Once more, at once, on a fresh connection.
        return await post()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": map_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI deprecated `max_tokens` (its reasoning models reject it); Ollama and others read only that.
        params["max_completion_tokens" if self.name == "openai" else "max_tokens"] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.first_tokens:
            params.update(logprobs=True, top_logprobs=request.first_tokens)
        if request.cache_key and self.name == "openai":  # derived: the session's own id stays on this machine
            key = hashlib.blake2b(request.cache_key.encode(), digest_size=12).hexdigest()
            params["prompt_cache_key"] = f"sunwell-{key}"
        # "none" sends no tools at all: the history's tool messages stay valid without them (docs/events.md).
        if request.tools and request.tool_choice != "none":
            params["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools
            ]
            params["tool_choice"] = map_tool_choice(request.tool_choice)
        return params

    def _map_error(self, exc: Exception, *, mid_stream: bool = False) -> ProviderError:
        from openai import APIConnectionError, APIStatusError, APITimeoutError

        if isinstance(exc, APITimeoutError):
            return ProviderError(f"timed out waiting for {self.base_url}", retryable=True)
        if isinstance(exc, APIConnectionError):
            reason = one_line(str(exc.__cause__ or exc.message))
            if mid_stream:
                return ProviderError(f"the connection to {self.base_url} was lost mid-answer: {reason}",
                                     retryable=True)
            return ProviderError(f"cannot reach {self.base_url}: {reason}", retryable=True)
        if isinstance(exc, APIStatusError):
            detail = _detail(exc.body, exc.message)
            return length_refusal(self.name, exc.status_code, detail, _code(exc.body)) or fault_for_status(
                self.name, exc.status_code, detail, key_env=self._key_env, headers=exc.response.headers)
        # An `error` object inside the stream (no HTTP status): the server failed while answering.
        body = getattr(exc, "body", None)
        detail = one_line(_detail(body, str(exc)))
        return length_refusal(self.name, None, detail, _code(body)) or ProviderError(
            f"{self.name} failed mid-answer: {detail}", retryable=True)


_BEARER: Any = {"security": {"bearer_auth": True}}
"""The request option by which the SDK's own `create` sends the API key."""

_STALE_CONNECTION = ("ReadError", "RemoteProtocolError")
"""What httpx raises when a kept-alive connection turns out closed before any answer."""


def _code(body: object) -> str:
    """The error's `code` and `type` (`context_length_exceeded`, `invalid_request_error`), when the body has them."""
    error = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return ""
    return " ".join(str(error[key]) for key in ("code", "type") if error.get(key))


def _detail(body: object, fallback: str) -> str:
    """The provider's own message from an error body: `{"error": {"message"}}` or `{"error": "..."}`."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str) and error.strip():
        return error
    return fallback


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def map_tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def map_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Canonical messages -> Chat Completions messages (the request's `system` first)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for msg in request.messages:
        match msg:
            case SystemMessage():
                out.append({"role": "system", "content": msg.text})
            case UserMessage():
                out.append({"role": "user", "content": msg.content_for_model()})
            case AssistantMessage():
                if wire := _assistant(msg):
                    out.append(wire)
            case ToolResultMessage():
                out.append({"role": "tool", "tool_call_id": msg.call_id, "content": msg.content_for_model()})
            case _:
                assert_never(msg)
    return out


def _assistant(msg: AssistantMessage) -> dict[str, Any] | None:
    """One assistant message: its text parts as `content`, its calls as `tool_calls`; None when it has neither (an
    empty assistant message is a 400)."""
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in msg.parts:
        match part:
            case TextPart():
                text.append(part.text)
            case ThinkingPart():
                pass  # Chat Completions has no way to send thinking back
            case ToolCallPart(call=call):
                calls.append({"id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": _arguments_text(call)}})
            case _:
                assert_never(part)
    content = "".join(text)
    if not content and not calls:
        return None
    wire: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        wire["tool_calls"] = calls
    return wire


def _arguments_text(call: ToolCall) -> str:
    """The arguments as the model wrote them when they could not be parsed, so the history stays truthful."""
    return call.raw if call.raw is not None else json.dumps(call.arguments)


@dataclass
class _Call:
    call_id: str
    name: str = ""
    started: bool = False
    arguments: list[str] = field(default_factory=list)


@dataclass
class ChatStreamReducer:
    """Chunks (the server's JSON) -> canonical events, keyed by `tool_calls[i].index` (a call's id and name come
    only once). Every field may be missing or null: servers differ."""

    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    chunks: int = 0
    texts: int = 0

    def feed(self, chunk: Any) -> Iterator[StreamEvent]:
        self.chunks += 1
        if not isinstance(chunk, dict):
            return
        if isinstance(usage := chunk.get("usage"), dict):
            cached = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
            self.usage = Usage(input_tokens=_count(usage.get("prompt_tokens")),
                               output_tokens=_count(usage.get("completion_tokens")),
                               cache_read_tokens=_count(cached.get("cached_tokens")),
                               cache_write_tokens=_count(cached.get("cache_write_tokens")))
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or (choice.get("index") or 0) != 0 or self.finish_reason is not None:
                continue
            delta = choice.get("delta") or {}
            # Not in OpenAI's schema: DeepSeek and vLLM send `reasoning_content`, Ollama `reasoning`.
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                yield ThinkingDelta(thinking)
            for key in ("content", "refusal"):
                if isinstance(text := delta.get(key), str) and text:
                    self.texts += 1
                    yield TextDelta(text, _first_tokens(choice.get("logprobs")) if self.texts == 1 else ())
            for tool_call in delta.get("tool_calls") or ():
                if isinstance(tool_call, dict):
                    yield from self._tool_call_delta(tool_call)
            if (finish := choice.get("finish_reason")) is not None:
                self.finish_reason = str(finish)
                yield from self._close_calls()

    def _tool_call_delta(self, tool_call: dict[str, Any]) -> Iterator[StreamEvent]:
        call_id = tool_call.get("id") or None
        index = tool_call.get("index")
        if not isinstance(index, int):
            index = self._index_without_one(call_id)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _Call(call_id=call_id or f"call_{uuid.uuid4().hex[:24]}")
        function = tool_call.get("function") or {}
        if isinstance(name := function.get("name"), str):
            call.name += name
        if not call.started and call.name:
            call.started = True
            yield ToolCallStarted(call.call_id, call.name)
            if call.arguments:  # fragments that came before the name
                yield ToolCallArgs(call.call_id, "".join(call.arguments))
        if isinstance(arguments := function.get("arguments"), str) and arguments:
            call.arguments.append(arguments)
            if call.started:
                yield ToolCallArgs(call.call_id, arguments)

    def _index_without_one(self, call_id: str | None) -> int:
        """Some servers omit `index`: a new id is a new call, no id continues the last one."""
        for index, call in self.calls.items():
            if call_id is not None and call.call_id == call_id:
                return index
        if call_id is None and self.calls:
            return max(self.calls)
        return len(self.calls)

    def _close_calls(self) -> Iterator[StreamEvent]:
        for index in sorted(self.calls):
            call = self.calls.pop(index)
            if not call.started:  # a call without a name: announce it so it can be answered
                yield ToolCallStarted(call.call_id, call.name)
            yield ToolCallDone(call.call_id, call.name, "".join(call.arguments))

    def finish(self, provider: str) -> Iterator[StreamEvent]:
        """The stream ended without a transport error. It is complete if the choice finished or the closing
        usage chunk came (the SDK hides `[DONE]`); otherwise it was cut and open calls are not complete."""
        if self.finish_reason is None and self.usage is None:
            raise self._cut(provider)
        yield from self._close_calls()
        yield Finished(usage=self.usage, stop_reason=self.finish_reason)

    def _cut(self, provider: str) -> StreamCut:
        if not self.chunks:
            return StreamCut(f"the {provider} server ended the stream before its first token", began=False)
        why = "" if provider == "openai" else (
            ": the server stopped answering, as llama-cpp-python does when another client's request interrupts this "
            "one (let one client use it at a time, or start it with --interrupt_requests false)")
        return StreamCut(f"the {provider} stream ended before the answer was complete{why}", began=True)


def _first_tokens(logprobs: Any) -> tuple[tuple[str, float], ...]:
    """The alternatives of a chunk's first token (`logprobs.content[0].top_logprobs`), as probabilities."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    first = content[0] if isinstance(content, list) and content and isinstance(content[0], dict) else {}
    tops = first.get("top_logprobs") if isinstance(first.get("top_logprobs"), list) else []
    return tuple((top["token"], math.exp(top["logprob"])) for top in tops
                 if isinstance(top, dict) and isinstance(top.get("token"), str)
                 and isinstance(top.get("logprob"), int | float) and top["logprob"] <= 0)
