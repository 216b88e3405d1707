"""Run one validated tool call: time limit, output cap, and every failure turned into an error result.

`answered` and `failed` make every result a model reads: what a tool returns passes through them, whatever the tool.

`attempt` is one step of a call under those rules (the handler; or a staged tool's stage, preview and apply, each a
step of its own); `execute` is the plain call: its handler as one attempt, its output the result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sunwell.hidden_text import reveal
from sunwell.tools.base import Tool, ToolContext, ToolFailure
from sunwell.tools.output import truncate
from sunwell.wire.messages import ToolCall, ToolError, ToolResultMessage

log = logging.getLogger(__name__)
T = TypeVar("T")


async def attempt(tool: Tool, ctx: ToolContext, step: Callable[[], Awaitable[T]]) -> T | ToolError:
    """What `step` returns, or the error it ended with (a ToolFailure's, the time limit, a bug in the tool)."""
    seconds = tool.timeout if tool.timeout is not None else ctx.tool_timeout  # its own limit, else the user's
    try:
        async with asyncio.timeout(seconds):  # not wait_for: that runs the step as a task of its own
            return await step()
    except ToolFailure as failure:  # a command's timeout carries its output so far
        return masked(failure.error, ctx)
    except TimeoutError:
        return ToolError(code="timeout", message=f"{tool.name} ran past its {seconds:g} s limit",
                         suggestion="narrow the request (a smaller path or pattern)")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in a handler must not kill the turn: the model and the log both see it
        log.exception("tool %s failed", tool.name)
        return ToolError(code="execution", message=f"{tool.name} failed: {exc}")


async def execute(tool: Tool, call: ToolCall, ctx: ToolContext) -> ToolResultMessage:
    own = ctx.calling(call.id)  # a question or a sub-agent names the call it belongs to
    output = await attempt(tool, ctx, lambda: tool.handler(call.arguments, own))
    return failed(call, output) if isinstance(output, ToolError) else answered(call, output, ctx)


def answered(call: ToolCall, output: str, ctx: ToolContext) -> ToolResultMessage:
    """A call's output as its result: secrets masked, characters that hide text shown as escapes (a file, a page or
    a server's answer may spell instructions in them), cut to the output cap."""
    hint = "ask for less (offset/limit, a narrower path or pattern)"
    if ctx.secrets is not None:  # e.g. an unsandboxed command that read /proc/<sunwell>/environ
        output = ctx.secrets.mask(output)
    return ToolResultMessage(call_id=call.id, name=call.name,
                             output=truncate(reveal(output), ctx.max_output_bytes, hint))


def masked(error: ToolError, ctx: ToolContext) -> ToolError:
    if ctx.secrets is None:
        return error
    return error.model_copy(update={"message": ctx.secrets.mask(error.message)})


def failed(call: ToolCall, error: ToolError) -> ToolResultMessage:
    """An error result; its message may quote what a tool read (a server's error, a page), shown as `answered` does."""
    if (shown := reveal(error.message)) != error.message:
        error = error.model_copy(update={"message": shown})
    return ToolResultMessage(call_id=call.id, name=call.name, output="", ok=False, error=error)
