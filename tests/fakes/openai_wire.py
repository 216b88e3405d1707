"""The fake provider's OpenAI Chat Completions: request validation, error bodies, the length refusal, and the
answer as a completion or as streamed chat.completion.chunk objects."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

from fakes.script import TOOL_NAME, Reply, Thinking, chunked, is_object_schema

OPENAI_PATH = "/v1/chat/completions"


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
        if "parameters" in function and not is_object_schema(function["parameters"]):
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


OPENAI_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_error_body(status: int, message: str) -> dict:
    kind, code = OPENAI_ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


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


def openai_events(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> Iterator[dict]:
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
            for piece in chunked(part.text, reply.chunk):
                yield chunk({"reasoning_content": piece})
        elif isinstance(part, str):
            for n, piece in enumerate(chunked(part, reply.chunk)):
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

    pieces = [chunked(call.arguments, reply.chunk) for call in reply.tool_calls]
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


def openai_completion(reply: Reply, body: dict, ident: str, call_ids: list[str]) -> dict:
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
