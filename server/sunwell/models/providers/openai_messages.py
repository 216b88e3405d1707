"""Canonical messages -> Chat Completions messages, for OpenAI, Ollama's `/v1` and any OpenAI-compatible server
(models/providers/openai_chat.py sends them).

A user's images go in its message as `image_url` parts (a `data:` URL of the bytes, `detail: high`), after its text;
Ollama's `/v1` and other compatible servers take the same shape. A tool result is a `role: tool` message, text only
(Chat Completions refuses an image in any role but `user`): its parts one a line, each image as a line that points
on, and the images of a run of results follow that run in one `user` message of their own, so that the run stays
whole (every call answered before anything else). A model that cannot see never gets here with an image
(models/vision.py).
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from sunwell.models.base import ModelRequest
from sunwell.wire.messages import (
    AssistantMessage,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from sunwell.wire.results import ImagePart, part_text


def map_tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def map_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Canonical messages -> Chat Completions messages (the request's `system` first)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    shown: list[ImagePart] = []  # the images of the run of tool results being mapped

    def show_results_images() -> None:
        if shown:
            out.append({"role": "user", "content": [{"type": "text", "text": RESULT_IMAGES}, *map(image_url, shown)]})
            shown.clear()

    for msg in request.messages:
        if not isinstance(msg, ToolResultMessage):
            show_results_images()
        match msg:
            case SystemMessage():
                out.append({"role": "system", "content": msg.text})
            case UserMessage():
                text = msg.content_for_model()
                out.append({"role": "user", "content": [*([{"type": "text", "text": text}] if text else []),
                                                         *map(image_url, msg.images)] if msg.images else text})
            case AssistantMessage():
                if wire := _assistant(msg):
                    out.append(wire)
            case ToolResultMessage():
                out.append({"role": "tool", "tool_call_id": msg.call_id, "content": _result_text(msg, shown)})
            case _:
                assert_never(msg)
    show_results_images()
    return out


RESULT_IMAGES = "[The images the tool results above returned, in order]"
"""Opens the user message that carries a run of tool results' images."""


def image_url(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}",
                                               "detail": "high"}}


def _result_text(msg: ToolResultMessage, shown: list[ImagePart]) -> str:
    """A tool message's text; each image it held a line saying where it is, and added to `shown`."""
    if msg.error is not None or msg.parts is None or not any(isinstance(p, ImagePart) for p in msg.parts):
        return msg.content_for_model()
    lines = []
    for part in msg.parts:
        if isinstance(part, ImagePart):
            shown.append(part)
            lines.append(f"{part.as_text()} (image {len(shown)} of the next message)")
        elif text := part_text(part):
            lines.append(text)
    return "\n".join(lines)


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
