"""Run one validated tool call: time limit, output cap, and every failure turned into an error result.

`answered` and `failed` make every result a model reads: what a tool returns passes through them, whatever the tool.

`attempt` is one step of a call under those rules (the handler; or a staged tool's stage, preview and apply, each a
step of its own); `execute` is the plain call: its handler, given the call's arguments as the tool took them
(`Tool.bind`), as one attempt, what it returned the result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sunwell.hidden_text import reveal
from sunwell.tools.base import Output, Tool, ToolContext, ToolFailure, ToolReturn
from sunwell.tools.output import truncate
from sunwell.wire.messages import ToolCall, ToolError, ToolResultMessage
from sunwell.wire.results import map_data

log = logging.getLogger(__name__)
T = TypeVar("T")
A = TypeVar("A")


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


async def execute(tool: Tool[A], call: ToolCall, arguments: A, ctx: ToolContext) -> ToolResultMessage:
    own = ctx.calling(call.id)  # a question or a sub-agent names the call it belongs to
    output = await attempt(tool, ctx, lambda: tool.handler(arguments, own))
    return failed(call, output) if isinstance(output, ToolError) else answered(call, output, ctx)


def answered(call: ToolCall, output: Output, ctx: ToolContext) -> ToolResultMessage:
    """What a call returned as its result: secrets masked, characters that hide text shown as escapes (a file, a
    page or a server's answer may spell instructions in them), cut to the output cap. A result whose text passes
    the cap is cut to one text part (an image it held is then left out; its note stays in the text)."""
    hint = "ask for less (offset/limit, a narrower path or pattern)"
    secrets = ctx.secrets  # e.g. an unsandboxed command that read /proc/<sunwell>/environ

    def shown(text: str) -> str:
        return reveal(secrets.mask(text) if secrets is not None else text)

    returned = (ToolReturn.text(output) if isinstance(output, str) else output).changed(shown)
    data = map_data(returned.data, shown) if returned.data is not None else None
    result = ToolResultMessage.of(call.id, call.name, returned.parts, data)
    if result.parts is None or len(result.output.encode("utf-8", "surrogatepass")) > ctx.max_output_bytes:
        return result.model_copy(update={"parts": None, "output": truncate(result.output, ctx.max_output_bytes, hint)})
    return result


def masked(error: ToolError, ctx: ToolContext) -> ToolError:
    if ctx.secrets is None:
        return error
    return error.model_copy(update={"message": ctx.secrets.mask(error.message)})


def failed(call: ToolCall, error: ToolError) -> ToolResultMessage:
    """An error result; its message may quote what a tool read (a server's error, a page), shown as `answered` does."""
    if (shown := reveal(error.message)) != error.message:
        error = error.model_copy(update={"message": shown})
    return ToolResultMessage(call_id=call.id, name=call.name, output="", ok=False, error=error)
