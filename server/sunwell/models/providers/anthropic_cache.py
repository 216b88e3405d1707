"""Where a Messages request asks Anthropic to cache its prefix: four `cache_control` breakpoints at most.

Anthropic renders a request as its tools, its system blocks, then its messages' blocks, and caches a prefix only at
a block that carries a breakpoint; a later request reads the longest cached prefix it finds at one of its own
breakpoints or at most 20 blocks before one (read at 0.1× the input price, written at 1.25×, kept 5 minutes from
its last use; a prefix under the model's minimum, 1,024 tokens for most models, is not cached). Sunwell marks:

1. the last tool: the tool definitions, which outlive a changed system prompt (`::focus`, an edited AGENTS.md);
2. the system block: the tools and the instructions;
3. the user turn before the model's last reply: where the conversation's last request ended, so the prefix that
   request wrote is read back whole, however many blocks the reply and its results added since;
4. the last block: what this request adds, written for the next one.

Copilot Chat (vscode PR 315505) marks the last two messages after the tools and the system, Cline the last two user
turns; in a tool loop all three read the same prefix, but an anchor on the reply only finds the last request's entry
while the reply and its results stay within the 20-block look-back. Thinking blocks cannot carry a breakpoint.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
_UNMARKABLE = ("thinking", "redacted_thinking")


def with_breakpoints(params: dict[str, Any]) -> dict[str, Any]:
    """Messages `params` (the system a string) with the system as one text block and the breakpoints above; every
    other byte of the request is as it was."""
    out = dict(params)
    if tools := params.get("tools"):
        out["tools"] = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]
    if system := params.get("system"):
        out["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    messages = list(params["messages"])
    for index in _anchors(messages):
        if (marked := _marked(messages[index])) is not None:
            messages[index] = marked
    out["messages"] = messages
    return out


def _anchors(messages: list[dict[str, Any]]) -> list[int]:
    """The last message, and the user turn before the last reply before it."""
    if not messages:
        return []
    last = len(messages) - 1
    reply = next((i for i in range(last - 1, -1, -1) if messages[i]["role"] == "assistant"), None)
    before = None if reply is None else next(
        (i for i in range(reply - 1, -1, -1) if messages[i]["role"] == "user"), None)
    return [last] if before is None else [before, last]


def _marked(message: dict[str, Any]) -> dict[str, Any] | None:
    """`message` with its last block that may carry one marked; None when it has none."""
    content = message["content"]
    at = next((i for i in range(len(content) - 1, -1, -1) if content[i].get("type") not in _UNMARKABLE), None)
    if at is None:
        return None
    return {**message, "content": [*content[:at], {**content[at], "cache_control": EPHEMERAL}, *content[at + 1:]]}
