"""The fake provider's Anthropic Messages: request validation (thinking signatures and cache breakpoints among it),
error bodies, the length refusal, and the answer as a message or as streamed (typed) SSE events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fake_cache import anthropic_cache_error
from fakes.script import (
    FAKE_SIGNATURE,
    TOOL_NAME,
    Reply,
    Thinking,
    chunked,
    is_object_schema,
    thinking_signature,
)

ANTHROPIC_PATH = "/v1/messages"


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
        if not is_object_schema(tool["input_schema"]):
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


def anthropic_error_body(status: int, message: str, request_id: str) -> dict:
    kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def anthropic_length_refusal(limit: int, prompt: int, max_tokens: int, request_id: str) -> dict:
    """Anthropic's 400 invalid_request_error for a prompt (or a prompt and `max_tokens`) over the window."""
    if prompt > limit:
        message = f"prompt is too long: {prompt} tokens > {limit} maximum"
    else:
        message = (f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > {limit}, "
                   "decrease input length or `max_tokens` and try again")
    return anthropic_error_body(400, message, request_id)


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


def anthropic_events(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> Iterator[dict]:
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
            deltas = [{"type": "thinking_delta", "thinking": p} for p in chunked(part.text, reply.chunk)]
            deltas.append({"type": "signature_delta", "signature": part.signature})
            yield from block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        elif isinstance(part, str):
            deltas = [{"type": "text_delta", "text": p} for p in chunked(part, reply.chunk)]
            yield from block({"type": "text", "text": ""}, deltas)
        else:
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in chunked(part.arguments, reply.chunk)]
            start = {"type": "tool_use", "id": next(ids), "name": part.name, "input": {}}
            yield from block(start, deltas or [{"type": "input_json_delta", "partial_json": ""}])
        index += 1
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    yield {"type": "message_stop"}


def anthropic_message(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> dict:
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
