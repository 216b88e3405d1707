"""task: a read-only sub-agent that explores on its own and hands back only its answer.

The agent layer runs it (ToolContext.subagent, agent/subagent.py): a nested turn with its own context window budget,
only the harmless read tools, trust capped at read_only, never `task` again. Its events reach the user marked with
the call's id; the parent's context receives its final answer alone, which is what the tool is for: twenty file
reads that would fill the main context become a paragraph.
"""

from __future__ import annotations

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Output, Tool, ToolContext, ToolFailure, ToolReturn, Trust
from sunwell.wire.results import SubagentAnswer


class TaskArguments(ToolArguments):
    description: str = Field(min_length=1, max_length=100, description="What the sub-agent does, in 3-8 words.")
    prompt: str = Field(min_length=1, max_length=20_000, description=(
        "Its instructions, complete: it sees nothing of this conversation. Say what to find and what to report."))


async def task(arguments: TaskArguments, ctx: ToolContext) -> Output:
    if ctx.turn.subagent is None:
        raise ToolFailure("unsupported", "a sub-agent cannot start another one", "do the work with your own tools")
    description = arguments.description.strip()
    answer = await ctx.turn.subagent(ctx.call.id, description, arguments.prompt)
    return ToolReturn.text(answer, SubagentAnswer(description=description, answer=answer))


TASK = Tool.of(
    TaskArguments, task,
    name="task",
    description=(
        "Hand a research job to a read-only sub-agent (list, search, read) that returns only its final answer: "
        "to find where something is handled or survey code without filling your context. It sees nothing of this "
        "conversation: `prompt` must say everything, and what to report. Several run in parallel. "
        'Example: {"description": "Find the retry logic", "prompt": "Where are HTTP requests retried? Report '
        'files, functions, lines."}.'
    ),
    min_trust=Trust.read_only,
    expendable=True,  # the agent can do without (it can read, or decide, itself): a small window drops it first
    timeout=1800.0,  # up to subagent.max_tool_turns model requests; cancelled with its turn
)
