"""A conversation as a markdown document (`::save`): what was said, and one line per tool call with its result; where
the history was compacted, the summary the model went on from."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import assert_never

from sunwell.agent.log_lines import call_line
from sunwell.agent.prompts import SUMMARY_HEADING, is_summary
from sunwell.wire.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)


def transcript_markdown(session: str, messages: Sequence[Message], saved_at: float | None = None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(time.time() if saved_at is None else saved_at))
    results = {m.call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    blocks = [f"# Sunwell conversation {session}".rstrip(), f"_Saved {when}._"]
    speaker = None
    for message in messages:
        match message:
            case SystemMessage():
                blocks.append("> " + message.text.strip().replace("\n", "\n> "))
            case UserMessage() if is_summary(message):
                summary = message.text.removeprefix(SUMMARY_HEADING).strip()
                blocks.append("---\n\n_Conversation compacted: from here on the model read this summary instead of "
                              "what came before._\n\n> " + summary.replace("\n", "\n> "))
                speaker = None
            case UserMessage():
                blocks.append(f"## You\n\n{message.content_for_model().strip()}")
                speaker = "user"
            case AssistantMessage():
                if speaker != "assistant":  # one section for the whole answer, tool rounds included
                    blocks.append("## Sunwell")
                    speaker = "assistant"
                blocks += _answer_blocks(message, results)
            case ToolResultMessage():
                pass  # shown on its call's line
            case _:
                assert_never(message)
    return "\n\n".join(blocks) + "\n"


def _answer_blocks(message: AssistantMessage, results: dict[str, ToolResultMessage]) -> list[str]:
    """The message's text, and its calls as lists (calls in a row are one list), in the order the model gave them;
    thinking is left out."""
    blocks: list[str | list[str]] = []
    for part in message.parts:
        match part:
            case TextPart():
                if part.text.strip():
                    blocks.append(part.text.strip())
            case ThinkingPart():
                pass
            case ToolCallPart(call=call):
                line = f"- ↪ `{call_line(call)}` {_outcome(results.get(call.id))}"
                if blocks and isinstance(blocks[-1], list):
                    blocks[-1].append(line)
                else:
                    blocks.append([line])
            case _:
                assert_never(part)
    return [block if isinstance(block, str) else "\n".join(block) for block in blocks]


def _outcome(result: ToolResultMessage | None) -> str:
    if result is None:
        return "(no result)"
    if result.error is not None:
        return f"✘ {result.error.code}: {result.error.message}"
    lines = len(result.output.splitlines())
    return f"✔ {lines} line{'' if lines == 1 else 's'}"
