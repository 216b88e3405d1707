"""A logged history made valid for every provider: each tool call answered right after its message, in call order
(a call the process died in gets an `interrupted` result), and old tool outputs elided as the log says."""

from __future__ import annotations

from sunwell.wire.messages import AssistantMessage, Message, ToolCall, ToolError, ToolResultMessage


def repair_history(history: list[Message], *, open_tail: bool = False) -> list[Message]:
    """Make a logged history valid for every provider.

    Each tool call must be answered right after its assistant message, before anything else, and the results go in
    the order of the calls (each is logged when it finishes, which for calls run together is any order). A call left
    without a result (the process died mid-tool) gets an `interrupted` error result there — with `open_tail`, except
    the calls of the last assistant message, left for a resumed turn to answer; a result that answers no pending
    call (stray, duplicated, or out of place) is dropped.
    """
    repaired: list[Message] = []
    pending: dict[str, ToolCall] = {}
    answers: dict[str, ToolResultMessage] = {}

    def close(last: bool) -> None:
        for call in pending.values():
            if call.id in answers:
                repaired.append(answers[call.id])
            elif not (last and open_tail):
                repaired.append(_interrupted(call))

    for message in history:
        if isinstance(message, ToolResultMessage):
            if message.call_id in pending:
                answers.setdefault(message.call_id, message)
            continue
        close(last=False)
        pending = (
            {call.id: call for call in message.tool_calls} if isinstance(message, AssistantMessage) else {}
        )
        answers = {}
        repaired.append(message)
    close(last=True)
    return repaired


def apply_elision(history: list[Message], outputs: dict[str, str]) -> None:
    """Replace, in place, the output of each tool result whose call id is in `outputs` by the line given there."""
    for index, message in enumerate(history):
        if isinstance(message, ToolResultMessage) and message.call_id in outputs:
            history[index] = message.model_copy(update={"output": outputs[message.call_id], "parts": None})


def _interrupted(call: ToolCall) -> ToolResultMessage:
    error = ToolError(code="interrupted", message="the tool did not finish: the turn was interrupted")
    return ToolResultMessage(call_id=call.id, name=call.name, output="", ok=False, error=error)
