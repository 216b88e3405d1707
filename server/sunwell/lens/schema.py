"""The lens file format as pydantic models, plus the rules that need the whole lens.

Field docstrings are the user-facing docs (hover, completion). Per-skill rules (a valid `parameters` schema,
`{placeholders}` that name parameters) are validators, so a programmatic `Lens.model_validate` enforces them;
rules across the lens (duplicate skill names, unknown tools) are `lens_problems`, which works on the raw data
so the loader can report them even when the shape is wrong elsewhere.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, SchemaError
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from sunwell.lens.vocabulary import CORE_TOOLS
from sunwell.vocabulary import TrustName

SKILL_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$")
# `{name}` not preceded by `$`, so shell `${VAR}` stays literal; `{a,b}` brace expansion never matches.
PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][\w-]*)\}")


_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RateLimits(BaseModel):
    """Per-session limits while the lens is active; they apply on top of the user's own."""

    model_config = _CONFIG

    tool_calls_per_min: int | None = Field(None, ge=0, strict=True)
    """Most tool calls of any kind per minute."""
    writes_per_min: int | None = Field(None, ge=0, strict=True)
    """Most `write_file`/`edit_file` calls per minute."""
    shell_per_min: int | None = Field(None, ge=0, strict=True)
    """Most `run_command` calls per minute."""
    bytes_written: int | None = Field(None, ge=0, strict=True)
    """Most bytes written to files in one session."""


class ToolPolicy(BaseModel):
    """What the model may do while the lens is active. It can only narrow what the user granted."""

    model_config = _CONFIG

    trust_level: TrustName | None = None
    """Cap on the trust level: discovery < read_only < workspace < shell < full. The lower of this and the
    user's level applies."""
    allowed_tools: list[str] | None = None
    """Tools the model may use: core tools (`list_files`, `search_files`, `read_file`, `write_file`, `edit_file`,
    `run_command`) and this lens' skills. Omitted: every tool the user allows."""
    blocked_paths: list[str] = Field(default_factory=list)
    """Extra path patterns (globs) the tools may not touch, added to the built-in ones."""
    command_allowlist: list[str] = Field(default_factory=list)
    """Ignored: a lens may only narrow what you allowed, and only your user config's `command_allowlist` lets a
    command run without asking. Accepted so that older lens files still load (with a notice)."""
    rate_limits: RateLimits | None = None
    """Per-session limits on tool calls, writes, shell calls and bytes written."""


class Skill(BaseModel):
    """A named piece of expertise; the model can call it as a tool."""

    model_config = _CONFIG

    name: str
    """Tool name of the skill: a letter, then letters, digits, `_` or `-` (64 at most)."""
    description: str
    """What the skill does; the model reads it to decide when to call the skill."""
    instructions: str | None = None
    """Instructions of the nested model call that runs the skill (when it has no `command`)."""
    parameters: dict[str, Any] | None = None
    """JSON Schema (type `object`) of the skill's arguments; makes the skill a callable tool with arguments."""
    command: str | None = None
    """Shell command run through `run_command`; `{param}` placeholders are replaced by the arguments, quoted."""

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not SKILL_NAME.match(value):
            raise PydanticCustomError("skill_name", "Skill name must start with a letter and hold only letters, "
                                      "digits, '_' or '-' (64 characters at most)")
        return value

    @field_validator("parameters")
    @classmethod
    def _parameters_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise PydanticCustomError("invalid_json_schema", "Invalid JSON Schema in parameters: {detail}",
                                      {"detail": exc.message, "path": list(exc.path)}) from None
        if value.get("type") != "object":
            path = ["type"] if "type" in value else []
            raise PydanticCustomError("invalid_json_schema", "Invalid JSON Schema in parameters: {detail}",
                                      {"detail": "the type must be 'object'", "path": path})
        return value

    @field_validator("command")
    @classmethod
    def _placeholders_declared(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or "parameters" not in info.data:
            return value  # parameters failed validation: that error is enough
        declared = set((info.data["parameters"] or {}).get("properties", {}))
        unknown = [name for name in command_placeholders(value) if name not in declared]
        if unknown:
            raise PydanticCustomError(
                "unknown_placeholder", "Placeholder {names} names no parameter (declared: {declared})",
                {"names": ", ".join(f"{{{n}}}" for n in unknown), "placeholders": unknown,
                 "declared": ", ".join(sorted(declared)) or "none"})
        return value


class Lens(BaseModel):
    """A `.lens` file: instructions, skills and a tool policy that package expertise."""

    model_config = _CONFIG

    name: str = Field(min_length=1)
    """Name of the lens, used by `::lens NAME` and `--lens NAME`."""
    description: str
    """One line: what the lens is for."""
    version: str | None = None
    """Version of the lens, free text (for example `1.2`)."""
    instructions: str | None = None
    """System instructions added to the conversation while the lens is active."""
    skills: list[Skill] = Field(default_factory=list)
    """Skills the model can call as tools: each has a name, description and instructions or a command."""
    tool_policy: ToolPolicy | None = None
    """Narrows the tools, trust level, paths and rates the model gets while the lens is active."""

    def skill(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)


SECTIONS: dict[tuple[str, ...], type[BaseModel]] = {
    (): Lens, ("skills", "-"): Skill, ("tool_policy",): ToolPolicy, ("tool_policy", "rate_limits"): RateLimits,
}
"""The model describing the mapping at each YAML path (`-` stands for any list item)."""


def section_at(loc: Iterable[str | int]) -> type[BaseModel] | None:
    return SECTIONS.get(tuple("-" if isinstance(part, int) else part for part in loc))


@dataclass(frozen=True)
class Problem:
    loc: tuple[str | int, ...]
    code: str
    message: str


def lens_problems(data: Mapping[str, Any], known_tools: Iterable[str] = ()) -> list[Problem]:
    """Duplicate skill names (at the second one) and unknown names in `allowed_tools`, on raw lens data. A known
    name ending in `*` stands for every name it starts (`docs__*`: the tools of the MCP server docs, known only
    once it runs)."""
    problems: list[Problem] = []
    skills = data.get("skills")
    names: list[str] = []
    if isinstance(skills, list):
        for index, skill in enumerate(skills):
            name = skill.get("name") if isinstance(skill, dict) else None
            if not isinstance(name, str):
                continue
            if name in names:
                problems.append(Problem(("skills", index, "name"), "duplicate-skill",
                                        f"Duplicate skill name '{name}' (skill {names.index(name) + 1} has it)"))
            names.append(name)
    policy = data.get("tool_policy")
    tools = policy.get("allowed_tools") if isinstance(policy, dict) else None
    if isinstance(tools, list):
        known = [*CORE_TOOLS, *names, *known_tools]
        for index, tool in enumerate(tools):
            if isinstance(tool, str) and tool not in known and not any(
                    k.endswith("*") and tool.startswith(k[:-1]) for k in known):
                problems.append(Problem(("tool_policy", "allowed_tools", index), "unknown-tool",
                                        f"Unknown tool '{tool}'{did_you_mean(tool, known)}; "
                                        f"known: {', '.join(dict.fromkeys(known))}"))
    return problems


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def command_placeholders(template: str) -> list[str]:
    """The parameter names a command template uses, in order, without repeats."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def render_command(template: str, arguments: Mapping[str, Any]) -> str:
    """Fill a skill's command: each value shell-quoted, a list as several words, a missing one as nothing."""

    def fill(match: re.Match[str]) -> str:
        value = arguments.get(match[1])
        if value is None:
            return ""
        if isinstance(value, bool):
            value = "true" if value else "false"
        if isinstance(value, list):
            return " ".join(shlex.quote(str(item)) for item in value)
        return shlex.quote(str(value))

    return PLACEHOLDER.sub(fill, template)
