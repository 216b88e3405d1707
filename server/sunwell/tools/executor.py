"""Run one validated tool call: time limit, output cap, and every failure turned into an error result."""

from __future__ import annotations

import asyncio
import logging

from sunwell.messages import ToolCall, ToolError, ToolResultMessage
from sunwell.tools.base import Tool, ToolContext, ToolFailure
from sunwell.tools.output import truncate

log = logging.getLogger(__name__)


async def execute(tool: Tool, call: ToolCall, ctx: ToolContext) -> ToolResultMessage:
    try:
        async with asyncio.timeout(tool.timeout):  # not wait_for: that runs the handler as a task of its own
            output = await tool.handler(call.arguments, ctx)
    except ToolFailure as failure:  # a command's timeout carries its output so far
        error = failure.error
        if ctx.secrets is not None:
            error = error.model_copy(update={"message": ctx.secrets.mask(error.message)})
        return failed(call, error)
    except TimeoutError:
        return failed(call, ToolError(code="timeout", message=f"{tool.name} ran past its {tool.timeout:g} s limit",
                                      suggestion="narrow the request (a smaller path or pattern)"))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in a handler must not kill the turn: the model and the log both see it
        log.exception("tool %s failed", tool.name)
        return failed(call, ToolError(code="execution", message=f"{tool.name} failed: {exc}"))
    hint = "ask for less (offset/limit, a narrower path or pattern)"
    if ctx.secrets is not None:  # e.g. an unsandboxed command that read /proc/<sunwell>/environ
        output = ctx.secrets.mask(output)
    return ToolResultMessage(call_id=call.id, name=call.name, output=truncate(output, ctx.max_output_bytes, hint))


def failed(call: ToolCall, error: ToolError) -> ToolResultMessage:
    return ToolResultMessage(call_id=call.id, name=call.name, output="", ok=False, error=error)
