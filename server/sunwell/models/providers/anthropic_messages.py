"""Anthropic Messages, streaming.

The wire conversation must alternate user / assistant, and every `tool_use` block must be answered by a
`tool_result` block at the start of the next user turn; the mapping below guarantees both. Every request of a
session asks for its prefix to be cached (anthropic_cache.py), and the usage read back tells the prompt tokens read
from the cache and written to it apart from the rest. The `anthropic` SDK is imported when an adapter is built, not when this module is.

A tool result's content is its text, as for every provider, when the tool gave one text (almost always: the request
stays byte for byte what it was); a result of several parts is a list of blocks: text, JSON data as indented text,
a resource link as a line, an image as an `image` block of base64 bytes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, assert_never

from sunwell.models.base import (
    Finished,
    ModelRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.providers.anthropic_cache import with_breakpoints
from sunwell.models.providers.retry import StreamCut, fault_for_status, one_line
from sunwell.models.providers.window import length_refusal
from sunwell.wire.messages import (
    AssistantMessage,
    AssistantPart,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sunwell.wire.results import DataPart, ImagePart, ResourceLinkPart

# An `error` event inside a 200 stream carries only a type; it means what this HTTP status would.
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicMessages:
    """A `Provider` over `messages.create(stream=True)`."""

    name = "anthropic"

    def __init__(self, *, base_url: str, api_key: str, key_env: str = "ANTHROPIC_API_KEY") -> None:
        from anthropic import AsyncAnthropic

        self.base_url = base_url
        self._key_env = key_env
        self._client = AsyncAnthropic(base_url=base_url, api_key=api_key, max_retries=0)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from anthropic import AnthropicError, APIConnectionError

        reducer = MessagesStreamReducer()
        streaming = began = False
        try:
            response = await self._client.messages.create(**self._params(request))
            async with response:
                streaming = True
                async for event in response:
                    began = True
                    for out in reducer.feed(event):
                        yield out
        except (APIConnectionError, *_transport_errors()) as exc:
            raise self._map_error(exc, mid_stream=streaming) from exc
        except AnthropicError as exc:
            raise self._map_error(exc) from exc
        if not reducer.stopped:
            raise StreamCut("the anthropic stream ended before the answer was complete", began=began)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = map_conversation(request)
        params: dict[str, Any] = {
            "model": request.model, "max_tokens": request.max_tokens, "messages": messages, "stream": True,
        }
        if system:
            params["system"] = system
        if request.temperature is not None:
            params["temperature"] = min(request.temperature, 1.0)  # Anthropic's range is 0-1
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            params["tool_choice"] = map_tool_choice(request.tool_choice)
        # a request of no session (a summary's, a skill's) is never repeated: writing it would cost 1.25x for nothing
        return with_breakpoints(params) if request.cache_key else params

    def _map_error(self, exc: Exception, *, mid_stream: bool = False) -> ProviderError:
        from anthropic import APIConnectionError, APIStatusError, APITimeoutError

        if isinstance(exc, APITimeoutError):
            return ProviderError(f"timed out waiting for {self.base_url}", retryable=True)
        if isinstance(exc, (APIConnectionError, *_transport_errors())):
            reason = one_line(str(exc.__cause__ or exc) if isinstance(exc, APIConnectionError) else str(exc))
            if mid_stream:
                return ProviderError(f"the connection to {self.base_url} was lost mid-answer: {reason}",
                                     retryable=True)
            return ProviderError(f"cannot reach {self.base_url}: {reason}", retryable=True)
        if isinstance(exc, APIStatusError):
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            error = error if isinstance(error, dict) else {}
            status = exc.status_code
            if status < 400:  # an `error` event mid-stream
                status = _ERROR_TYPE_STATUS.get(str(error.get("type")), 500)
            detail = error.get("message") if isinstance(error.get("message"), str) else exc.message
            return length_refusal(self.name, status, detail, str(error.get("type") or "")) or fault_for_status(
                self.name, status, detail, key_env=self._key_env, headers=exc.response.headers)
        return ProviderError(f"anthropic client error: {one_line(str(exc))}")


def _transport_errors() -> tuple[type[Exception], ...]:
    """The SDK lets a connection dropped mid-stream escape as its HTTP library's own error, unwrapped."""
    return tuple(module.TransportError for name in ("httpx2", "httpx") if (module := sys.modules.get(name)))


def map_tool_choice(choice: str) -> dict[str, Any]:
    match choice:
        case "auto" | "none":
            return {"type": choice}
        case "required":
            return {"type": "any"}
        case _:
            return {"type": "tool", "name": choice}


def map_conversation(request: ModelRequest) -> tuple[str, list[dict[str, Any]]]:
    """Canonical messages -> (the `system` parameter, alternating user / assistant turns of blocks)."""
    system = [request.system] if request.system else []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # e.g. an assistant message that only thought without a signature
        if turns and turns[-1]["role"] == role:
            content = turns[-1]["content"]  # merged, so that roles alternate
        else:
            content = []
            turns.append({"role": role, "content": content})
        for block in blocks:
            if block["type"] == "tool_result":  # results must open their user turn
                at = next((i for i, b in enumerate(content) if b["type"] != "tool_result"), len(content))
                content.insert(at, block)
            else:
                content.append(block)

    for msg in request.messages:
        match msg:
            case SystemMessage():
                system.append(msg.text)
            case UserMessage():
                text = msg.content_for_model()
                add("user", [{"type": "text", "text": text}] if text else [])
            case AssistantMessage():
                add("assistant", [block for part in msg.parts if (block := _assistant_block(part)) is not None])
            case ToolResultMessage():
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.call_id,
                                         "is_error": not msg.ok}
                if content := _result_content(msg):
                    block["content"] = content
                add("user", [block])
            case _:
                assert_never(msg)
    return "\n\n".join(system), turns


def _result_content(msg: ToolResultMessage) -> str | list[dict[str, Any]]:
    """A tool_result block's `content`: the text every provider reads, or, for a result of several parts, its blocks
    (an empty text block is a 400: none is sent)."""
    if msg.error is not None or msg.parts is None:
        return msg.content_for_model()
    blocks: list[dict[str, Any]] = []
    for part in msg.parts:
        match part:
            case TextPart(text=text):
                blocks += [{"type": "text", "text": text}] if text else []
            case DataPart() | ResourceLinkPart():
                blocks.append({"type": "text", "text": part.as_text()})
            case ImagePart(media_type=media_type, data=data):
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
            case _:
                assert_never(part)
    return blocks


def _assistant_block(part: AssistantPart) -> dict[str, Any] | None:
    """One part of an assistant message as a content block, in the order the model gave them (each thinking block
    with its own signature); None for a part that must not go back."""
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text} if text else None  # an empty text block is a 400
        case ThinkingPart(text=text, signature=signature):
            # Unsigned thinking (another provider's, or cut off) is rejected.
            return {"type": "thinking", "thinking": text, "signature": signature} if text and signature else None
        case ToolCallPart(call=call):
            return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        case _:
            assert_never(part)


@dataclass
class _ToolBlock:
    call_id: str
    name: str
    initial_input: dict[str, Any]
    arguments: list[str] = field(default_factory=list)


@dataclass
class MessagesStreamReducer:
    """Raw stream events -> canonical events, keyed by the content block `index`."""

    tool_blocks: dict[int, _ToolBlock] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    stopped: bool = False

    def feed(self, event: Any) -> Iterator[StreamEvent]:
        match event.type:
            case "message_start":
                usage = event.message.usage
                read, written = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
                # Anthropic's `input_tokens` is only what the cache did not hold; Sunwell's counts every token
                self.usage = Usage(input_tokens=usage.input_tokens + read + written, output_tokens=usage.output_tokens,
                                   cache_read_tokens=read, cache_write_tokens=written)
            case "content_block_start":
                yield from self._start(event.index, event.content_block)
            case "content_block_delta":
                yield from self._delta(event.index, event.delta)
            case "content_block_stop":
                if (tool := self.tool_blocks.pop(event.index, None)) is not None:
                    arguments = "".join(tool.arguments) or json.dumps(tool.initial_input)
                    yield ToolCallDone(tool.call_id, tool.name, arguments)
            case "message_delta":
                self.stop_reason = event.delta.stop_reason
                if event.usage.output_tokens is not None:
                    self.usage.output_tokens = event.usage.output_tokens
            case "message_stop":
                self.stopped = True
                yield Finished(self.usage, self.stop_reason)

    def _start(self, index: int, block: Any) -> Iterator[StreamEvent]:
        match block.type:
            case "tool_use":
                self.tool_blocks[index] = _ToolBlock(block.id, block.name, dict(block.input or {}))
                yield ToolCallStarted(block.id, block.name)
            case "text" if block.text:
                yield TextDelta(block.text)
            case "thinking" if block.thinking:
                yield ThinkingDelta(block.thinking)

    def _delta(self, index: int, delta: Any) -> Iterator[StreamEvent]:
        match delta.type:
            case "text_delta":
                yield TextDelta(delta.text)
            case "thinking_delta":
                yield ThinkingDelta(delta.thinking)
            case "signature_delta":
                yield ThinkingDelta("", signature=delta.signature)
            case "input_json_delta":
                tool = self.tool_blocks.get(index)
                if tool is not None and delta.partial_json:
                    tool.arguments.append(delta.partial_json)
                    yield ToolCallArgs(tool.call_id, delta.partial_json)
