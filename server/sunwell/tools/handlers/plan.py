"""update_plan: the agent's visible checklist for a longer task.

Each call sends the whole plan; it replaces the session's (tools/scratch.py) and goes out as a `plan` event, which
the terminal prints, the VS Code chat pins above its input and the session's log keeps (so `::plan` finds it in a
session reopened later).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.wire.events import PlanEvent, PlanItem

MAX_STEPS = 50


class PlanStepArguments(ToolArguments):
    step: str = Field(min_length=1, max_length=500, description="What to do, in a few words.")
    status: Literal["pending", "in_progress", "done"] = Field(description="Where the step is.")


class UpdatePlanArguments(ToolArguments):
    items: list[PlanStepArguments] = Field(min_length=1, max_length=MAX_STEPS,
                                           description="The whole plan, in order, every step with its status.")
    explanation: str | None = Field(None, max_length=2_000, description="Why the plan changed, in a sentence.")

    @field_validator("items")
    @classmethod
    def _one_step_at_a_time(cls, items: list[PlanStepArguments]) -> list[PlanStepArguments]:
        if sum(item.status == "in_progress" for item in items) > 1:  # what the schema cannot say
            raise ValueError("at most one step may be in_progress at a time: mark the step you are working on "
                             "in_progress and the others pending or done")
        return items


def checklist(plan: PlanEvent) -> str:
    """The plan as text, one line per step: `[x]` done, `[>]` in progress, `[ ]` pending."""
    marks = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}
    done = sum(item.status == "done" for item in plan.items)
    lines = [f"Plan ({done}/{len(plan.items)} done)", *(f"{marks[item.status]} {item.step}" for item in plan.items)]
    return "\n".join([*lines, *([plan.explanation] if plan.explanation else [])])


async def update_plan(arguments: UpdatePlanArguments, ctx: ToolContext) -> str:
    if ctx.scratch is None:
        raise ToolFailure("unsupported", "there is no session to keep a plan in here")
    plan = PlanEvent(items=[PlanItem(step=item.step, status=item.status) for item in arguments.items],
                     explanation=arguments.explanation)
    ctx.scratch.state.plan = plan
    ctx.scratch.show_plan(plan.model_copy())  # the stream numbers its copy; the session keeps its own
    current = next((item.step for item in plan.items if item.status == "in_progress"), None)
    done = sum(item.status == "done" for item in plan.items)
    return f"Plan updated: {done} of {len(plan.items)} steps done" + (f"; now: {current}" if current else "") + "."


UPDATE_PLAN = Tool.of(
    UpdatePlanArguments, update_plan,
    name="update_plan",
    description=(
        "Show the user your plan for a task of several steps, as a checklist, and keep it current. Use it for "
        "work of three steps or more: call it first with every step pending (or the first in_progress), then "
        "again whenever a step starts or is done. Send the whole plan each time; at most one step is in_progress. "
        f"At most {MAX_STEPS} steps. Example: {{\"items\": [{{\"step\": \"Read the failing test\", \"status\": "
        '"done"}, {"step": "Fix the parser", "status": "in_progress"}, {"step": "Run the tests", "status": '
        '"pending"}]}.'
    ),
    min_trust=Trust.discovery,
    read_only=False,  # two updates in one response must land in the order they were made
    harmless=True,
    expendable=True,
)
