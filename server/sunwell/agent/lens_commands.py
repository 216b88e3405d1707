"""What `::lens`, `::skills` and `::run` say and do: the chat's view of lenses and their skills.

`::run <skill> [args]` runs a skill as the user line that asks the model for it. A skill that is a tool (it has `parameters` or a `command`) becomes "call this tool with exactly these arguments":
the call then goes through the loop like any other (validation, approval, sandbox, checkpoints, cancellation) and
the model reports the result. A skill with only instructions is no tool: its instructions become the request.
The arguments are checked against the skill's JSON Schema here, so a typo is answered at once, not by the model.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from sunwell.errors import SetupError, SunwellError
from sunwell.lens.check import format_diagnostic
from sunwell.lens.schema import Lens
from sunwell.tools.base import Tool, Trust

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine


class LensCommandError(SunwellError):
    """The lens or skill cannot be used as asked; the message says why, for the user."""


def describe_lenses(engine: Engine, current: Lens | None, *, rescan: bool = False) -> str:
    """`::lens`: the active lens and every lens file found; `rescan` looks for them again first (the terminal chat
    has no watcher keeping the registry current, as the sidecar does)."""
    if rescan:
        engine.lenses.refresh()
    head = f"Active lens: **{current.name}** — {current.description}" if current else "No lens is active."
    active = engine.lenses.active()
    lines = [f"- **{lens.name}** — {lens.description} (`{_shown(engine, path)}`)" for path, lens in active.items()]
    lines += [f"- `{_shown(engine, path)}` has errors (`sunwell lens check` shows them)"
              for path in engine.lenses.paths() if path not in active]
    available = "\n".join(lines) or "No lens files found (`**/*.lens` here, or your lens folder)."
    return f"{head}\n\n**Lenses**\n\n{available}\n\nActivate one with `::lens <name|path>`, or `::lens off`."


def activate_lens(engine: Engine, name_or_path: str) -> tuple[str, str]:
    """`::lens NAME`: (the lens file's path, what to tell the user); a lens with errors is refused with them all."""
    try:
        lens = engine.lens(name_or_path)
    except SetupError as exc:
        path = engine.lenses.file_of(name_or_path)
        lines = [format_diagnostic(_shown(engine, path), d) for d in engine.lenses.diagnostics(path)] if path else []
        raise LensCommandError(f"{exc}" + ("\n\n```\n" + "\n".join(lines) + "\n```" if len(lines) > 1 else ""))
    path = engine.lenses.find(name_or_path)
    text = f"Lens **{lens.name}** is active: {lens.description}"
    if skills := ", ".join(f"`{skill.name}`" for skill in lens.skills):
        text += f"\n\nSkills: {skills} (`::skills` lists them)."
    if (policy := lens.tool_policy) and policy.trust_level:
        text += f"\n\nIt caps the trust level at `{policy.trust_level}`."
    if path is not None and any(d.severity == "error" for d in engine.lenses.diagnostics(path)):
        text += "\n\nThe file has errors now; its last valid version is the one in use."
    return str(path) if path is not None else name_or_path, text


def describe_skills(lens: Lens) -> str:
    lines = []
    for skill in lens.skills:
        how = (f"runs `{skill.command}`" if skill.command else "a tool" if skill.parameters is not None
               else "instructions only")
        params = ", ".join((skill.parameters or {}).get("properties", {}))
        lines.append(f"- `{skill.name}` — {skill.description} ({how}{'; args: ' + params if params else ''})")
    body = "\n".join(lines) or "This lens has no skills."
    return f"**Skills of {lens.name}**\n\n{body}\n\nRun one with `::run <skill> [args]`."


def skill_prompt(lens: Lens, args: str, offered: Sequence[Tool], catalogue: Sequence[Tool], trust: Trust) -> str:
    """The user line for `::run <args>`, given the tools this chat offers and knows (Engine.tools)."""
    name, _, rest = args.strip().partition(" ")
    skill = lens.skill(name)
    if skill is None:
        known = ", ".join(f"`{s.name}`" for s in lens.skills) or "none"
        raise LensCommandError(f"Usage: `::run <skill> [args]`. Skills of {lens.name}: {known}.")
    arguments = parse_skill_arguments(rest, skill.parameters)
    given = json.dumps(arguments, ensure_ascii=False)
    if skill.parameters is None and skill.command is None:
        body = skill.instructions or skill.description
        return f"Run the skill `{skill.name}` of the {lens.name} lens:\n\n{body}" + (
            f"\n\nArguments: {given}" if arguments else "")
    # a skill's tool is named after it, with the lens' name as a prefix when it clashes (agent/skills.py)
    tool = next(t for t in catalogue if t.source == f"lens:{lens.name}"
                and (t.name == skill.name or t.name.endswith(f"__{skill.name}")))
    if tool.name not in {t.name for t in offered}:
        reason = (f"it needs trust {tool.min_trust.name} (the chat has {trust.name}; `::trust` changes it)"
                  if tool.min_trust > trust else "the tool is not allowed here (--tools, --no-tools or the lens)")
        raise LensCommandError(f"Cannot run `{skill.name}`: {reason}.")
    return f"Call the tool `{tool.name}` once with exactly these arguments: {given}. Then report what it returned."


def parse_skill_arguments(text: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """`{"path": "a.py"}` or `path=a.py count=3`, validated against the skill's JSON Schema.

    A `key=value` stays text when the schema says the property is a string; otherwise it is read as JSON when it
    parses (`3`, `true`, `[1, 2]`) and kept as text when it does not. Quote values with spaces: `msg="a b"`."""
    text = text.strip()
    if text.startswith("{"):
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LensCommandError(f"The arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise LensCommandError("The arguments must be one JSON object or key=value pairs.")
    else:
        try:
            pairs = [word.partition("=") for word in shlex.split(text)]
        except ValueError as exc:
            raise LensCommandError(f"Cannot read the arguments: {exc}") from None
        if bad := [key for key, eq, _ in pairs if not eq or not key]:
            raise LensCommandError(f"Write the arguments as key=value (not `{bad[0]}`), or as one JSON object.")
        properties = (schema or {}).get("properties", {})
        arguments = {key: value if properties.get(key, {}).get("type") == "string" else _json_or_text(value)
                     for key, _, value in pairs}
    if schema is not None:
        errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(map(str, e.path)))
        if errors:
            where = "/".join(map(str, errors[0].path))
            raise LensCommandError(f"Invalid arguments{' at ' + where if where else ''}: {errors[0].message}")
    return arguments


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _shown(engine: Engine, path: Path) -> str:
    return path.relative_to(engine.workspace).as_posix() if path.is_relative_to(engine.workspace) else str(path)
