"""A conversation as a markdown document (`::save`): what was said, and one line per tool call with its result."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import assert_never

from sunwell.agent.sessions import call_line
from sunwell.messages import AssistantMessage, Message, SystemMessage, ToolResultMessage, UserMessage


def transcript_markdown(session: str, messages: Sequence[Message], saved_at: float | None = None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(time.time() if saved_at is None else saved_at))
    results = {m.call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    blocks = [f"# Sunwell conversation {session}".rstrip(), f"_Saved {when}._"]
    speaker = None
    for message in messages:
        match message:
            case SystemMessage():
                blocks.append("> " + message.text.strip().replace("\n", "\n> "))
            case UserMessage():
                blocks.append(f"## You\n\n{message.text.strip()}")
                speaker = "user"
            case AssistantMessage():
                if speaker != "assistant":  # one section for the whole answer, tool rounds included
                    blocks.append("## Sunwell")
                    speaker = "assistant"
                if message.text.strip():
                    blocks.append(message.text.strip())
                if message.tool_calls:
                    blocks.append("\n".join(f"- ↪ `{call_line(call)}` {_outcome(results.get(call.id))}"
                                            for call in message.tool_calls))
            case ToolResultMessage():
                pass  # shown on its call's line
            case _:
                assert_never(message)
    return "\n\n".join(blocks) + "\n"


def _outcome(result: ToolResultMessage | None) -> str:
    if result is None:
        return "(no result)"
    if result.error is not None:
        return f"✘ {result.error.code}: {result.error.message}"
    lines = len(result.output.splitlines())
    return f"✔ {lines} line{'' if lines == 1 else 's'}"
