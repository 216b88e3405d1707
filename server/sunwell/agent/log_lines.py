"""Messages and calls as the one line a person reads: the session log's `content` column, `::save`, compaction's
transcript of older turns, the elision line of an old result."""

from __future__ import annotations

import json
from typing import assert_never

from sunwell.wire.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)


def call_line(call: ToolCall) -> str:
    """`read_file(path="a.txt")`: a tool call as one line."""
    args = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()
    )
    return _one_line(f"{call.name}({args or call.raw or ''})")


def message_line(message: Message) -> str:
    """A message as the one line a person reads in the log: `user: Read a.txt`, `✔ read_file 12 lines`."""
    match message:
        case SystemMessage():
            return _one_line(f"{message.role}: {message.text}")
        case UserMessage():
            return _one_line(f"{message.role}: {message.content_for_model()}")
        case AssistantMessage():
            said = [_part_line(part) for part in message.parts]
            return _one_line("assistant: " + ("; ".join(filter(None, said)) or
                                              ("(thinking)" if message.thinking else "")))
        case ToolResultMessage():
            if message.error is not None:
                return _one_line(f"✘ {message.name} {message.error.code}: {message.error.message}")
            lines = len(message.output.splitlines())
            return _one_line(f"✔ {message.name} {lines} line{'' if lines == 1 else 's'}")
        case _:
            assert_never(message)


def _part_line(part: AssistantPart) -> str:
    match part:
        case TextPart():
            return part.text
        case ThinkingPart():
            return ""  # said only when nothing else was
        case ToolCallPart():
            return call_line(part.call)
        case _:
            assert_never(part)


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
