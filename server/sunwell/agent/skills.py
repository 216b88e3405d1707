"""A lens' skills as tools the model can call.

A skill with a `command` runs it through the sandboxed shell (arguments shell-quoted, so they can't inject); a
skill with only instructions runs as a nested model call with those instructions and no tools. A skill with
neither `parameters` nor `command` is not a tool: the user runs it with `::run`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from sunwell.lens.schema import Lens, Skill, render_command
from sunwell.tools.base import StagedEffects, Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.handlers.shell import RunCommandArguments, command_preview, run_command, stage_command
from sunwell.tools.subject import Command, Subject

Complete = Callable[[str, str], Awaitable[str]]
"""(system instructions, user text) -> the model's answer, with no tools: `ctx.complete`."""

NAME_LIMIT = 64
"""OpenAI's limit on a tool name: a prefixed skill's name is cut to it."""
NO_PARAMETERS = {"type": "object", "properties": {}, "additionalProperties": False}


def skill_tools(lens: Lens, taken: Collection[str]) -> list[Tool]:
    """The callable skills of `lens`; a name that clashes with `taken` gets the lens' name as a prefix."""
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", lens.name)[:30]
    tools = []
    for skill in lens.skills:
        if skill.parameters is None and skill.command is None:
            continue
        name = skill.name if skill.name not in taken else f"{prefix}__{skill.name}"[:NAME_LIMIT]
        description = f"{skill.description} (skill of the {lens.name} lens)"
        parameters = skill.parameters or NO_PARAMETERS
        if skill.command:
            tools.append(Tool.dynamic(parameters, _command_handler(skill.command), name=name, description=description,
                                      preview=_command_preview(skill.command), subject=_command_subject(skill.command),
                                      stage=_command_stage(skill.command), min_trust=Trust.shell, approval="ask",
                                      risk="shell", read_only=False, source=f"lens:{lens.name}", timeout=3700))
        else:
            tools.append(Tool.dynamic(parameters, _nested_handler(lens, skill), name=name, description=description,
                                      min_trust=Trust.read_only, source=f"lens:{lens.name}", timeout=300))
    return tools


def _rendered(template: str, args: dict[str, Any]) -> RunCommandArguments:
    """The skill's command with the call's arguments in it, as run_command takes it (in the workspace root, its
    default time limit)."""
    return RunCommandArguments(command=render_command(template, args))


def _command_handler(template: str):
    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_command(_rendered(template, args), ctx)

    return handler


def _command_subject(template: str):
    """The rendered command is the subject: what runs, whatever the skill's parameters are called."""

    def subject(args: dict[str, Any]) -> Subject:
        return Subject(command=Command(render_command(template, args)), staged=True)

    return subject


def _command_stage(template: str):
    async def stage(args: dict[str, Any], ctx: ToolContext) -> StagedEffects:
        return await stage_command(_rendered(template, args), ctx)

    return stage


def _command_preview(template: str):
    def preview(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return command_preview(_rendered(template, args), ctx)

    return preview


def _nested_handler(lens: Lens, skill: Skill):
    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        complete: Complete | None = ctx.turn.complete
        if complete is None:
            raise ToolFailure("execution", f"skill {skill.name} needs a model to run")
        system = "\n\n".join(part for part in (lens.instructions, skill.instructions or skill.description) if part)
        return await complete(system, f"Run the skill {skill.name} with these arguments:\n{json.dumps(args)}")

    return handler
