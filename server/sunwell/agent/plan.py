"""One turn's plan: what every request of the turn carries, decided once, before the first request.

The tools (allowed by trust, narrowed by the lens and the user's tool list, fitted to the window), the window and
where it came from, the system prompt (Sunwell's words or the configured prompt; AGENTS.md and
.sunwell/instructions.md within their budget; the lens' and `::focus`'s instructions; for a small model the hints
and the workspace's files) and the budget requests are fitted to. `Engine.run_turn` makes one and the loop sends
it; `::context` makes the very same one (`Engine.plan`) for its figures, so what it shows is what is sent.
A tool round that changes what Sunwell knows (`learn_api`) has the turn's tools offered, narrowed and fitted again
by the same rules (`Retool`), from the next request on; the rest of the plan holds for the whole turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sunwell.agent.context import PROJECT_MAX_TOKENS, Budget, SessionContext
from sunwell.agent.prompts import (
    LoadedInstructions,
    named_files,
    named_files_note,
    project_instructions,
    system_prompt,
    workspace_files,
)
from sunwell.config import Settings, user_config_path
from sunwell.hidden_text import removed_message
from sunwell.model_strings import ModelSpec
from sunwell.models.capabilities import Capabilities
from sunwell.models.fitting import fit_again
from sunwell.models.tokens import BYTES_PER_TOKEN
from sunwell.tools.base import Tool, ToolContext, Trust
from sunwell.tools.handlers.shell import sandbox_warning
from sunwell.tools.registry import select_tools
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.events import NoticeEvent
from sunwell.wire.messages import ToolSpec

if TYPE_CHECKING:
    from sunwell.agent.turn import TurnLog
    from sunwell.lens.schema import Lens

Grant = tuple[Trust, Collection[str] | None]
"""The trust level a turn runs at and the tools it may use (None: all that level allows): what the user granted,
narrowed by the lens (`Engine.grant`)."""


@dataclass(frozen=True)
class TurnPlan:
    spec: ModelSpec
    trust: Trust
    """The user's trust level, narrowed by the lens."""
    tools: tuple[Tool, ...]
    """Offered this turn: allowed at `trust`, by the lens and by the user's tool list."""
    catalogue: tuple[Tool, ...]
    """Every tool Sunwell knows, so that a call above the trust level is `permission`, not `unknown_tool`."""
    specs: list[ToolSpec]
    """What the model is shown of `tools`, fitted to a small window (calls are still validated against, and may
    use, the full tools). One list for the whole turn: the context keeper counts it once, by identity."""
    fitted: tuple[str, ...]
    """What fitting gave up, one note per kind of trimming (the `tools_fitted` notice)."""
    system: str
    loaded: tuple[LoadedInstructions, ...]
    """The project instructions read into `system`."""
    budget: Budget
    """The window (a refusal for length corrects it mid-turn), the answer's reserve, `compact_at` and the session's
    calibration of the estimate."""
    window_source: str
    """Where the window came from: "config", "server (…)", "registry", "refusal"."""
    capabilities: Capabilities
    """`small`: the small-model hints are in `system` and the loop nudges the model to answer; `temperature` goes
    with every request."""
    grant: Grant
    """What `tools` were chosen by (`trust` is its level), kept to choose them again (`Retool`)."""
    text: str
    """The user's line the tools were fitted for."""
    read_first: bool = False
    """The line names workspace files and a tool reads them, and the model is a small one emulated under a reply
    schema: its first reply of the turn must be a call. Free to answer first (models/emulation/choice.py), the 0.5B
    model told "read it with read_file" answered "What does a.txt say?" with words of its own (BENCHMARKS.md,
    "Answering under the constraint")."""
    note: str = ""
    """For a small model whose line names workspace files: that they exist and which tool reads them, said after
    the line in the turn's first request (`named_files_note`); "": none."""

    @property
    def window(self) -> int:
        return self.budget.window


def offered_tools(catalogue: Sequence[Tool], grant: Grant) -> list[Tool]:
    """The tools of `catalogue` a turn with `grant` is offered."""
    trust, allowed = grant
    return select_tools(catalogue, trust, None if allowed is None else sorted(allowed))


async def plan_turn(settings: Settings, spec: ModelSpec, capabilities: Capabilities, window: tuple[int, str],
                    catalogue: Sequence[Tool], grant: Grant, *, jail: Jail, lens: Lens | None,
                    instructions: Sequence[str], context: SessionContext, text: str = "") -> TurnPlan:
    """The plan of a turn of `spec` for the user's line `text` (as the model reads it, attachments included; ""
    for `::context`, which has no line yet): `window` is (tokens, source) as `Engine.context_window` gives it,
    `catalogue` every tool known, `jail` the turn's (the lens' blocked paths added), `context` the session's."""
    size, source = window
    tools, specs, fitted = _fitted(catalogue, grant, size, text, context)
    lens_words = [lens.instructions] if lens and lens.instructions else []
    system, loaded, named = await asyncio.to_thread(_system, settings.system_prompt, jail,
                                                    [*lens_words, *instructions], capabilities.small, size, text)
    read_first = bool(named) and _reader(specs) is not None and capabilities.constrained and \
        not capabilities.native_tools  # fmt: skip
    note = named_files_note(named, _reader(specs)) if named and not settings.system_prompt else ""
    return TurnPlan(spec=spec, trust=grant[0], tools=tuple(tools), catalogue=tuple(catalogue), specs=specs,
                    fitted=tuple(fitted), system=system, loaded=tuple(loaded), read_first=read_first, note=note,
                    budget=Budget(size, settings.max_tokens, settings.compact_at, context), window_source=source,
                    capabilities=capabilities, grant=grant, text=text)


def _fitted(catalogue: Sequence[Tool], grant: Grant, window: int, text: str,
            context: SessionContext) -> tuple[list[Tool], list[ToolSpec], list[str]]:
    """The tools of `catalogue` offered with `grant`, what the model is shown of them in `window`, what was trimmed:
    the session's last fitting while it holds for `text` (its requests' prefix stays the same), else a new one."""
    tools = offered_tools(catalogue, grant)
    # the user's words decide which tools keep their detail longest when they must be trimmed
    context.tools = fit_again(context.tools, [tool.spec for tool in tools], context_window=window, user_text=text,
                              expendable={tool.name for tool in tools if tool.expendable},
                              topical={tool.name for tool in tools if tool.source == "learned"})
    return tools, context.tools.specs, list(context.tools.notes)


@dataclass
class Retool:
    """The turn's tools chosen again when the tools Sunwell knows changed during it (`learn_api` stored an API):
    the loop asks after each tool round, and sends the new ones from the next request on. Only the tools change:
    offered by the plan's grant (trust, the lens, the user's list) and fitted to the window as it is now."""

    catalogue: Callable[[], Sequence[Tool]]
    """Every tool known now (`Engine.catalogue`)."""
    version: Callable[[], object]
    """Changes whenever the catalogue may have (`LearnedApis.changes`)."""
    seen: object = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.seen = self.version()

    def __call__(self, plan: TurnPlan) -> TurnPlan | None:
        """`plan` with its tools chosen again, or None if nothing changed since it (or the last) was made."""
        if (now := self.version()) == self.seen:
            return None
        self.seen, catalogue = now, tuple(self.catalogue())
        tools, specs, fitted = _fitted(catalogue, plan.grant, plan.window, plan.text, plan.budget.context)
        return replace(plan, tools=tuple(tools), catalogue=catalogue, specs=specs, fitted=tuple(fitted))


def _system(configured: str | None, jail: Jail, extra: list[str], small: bool, window: int,
            text: str) -> tuple[str, list[LoadedInstructions], list[str]]:
    """The system prompt, the project instructions in it, and (for a small model) the workspace files the user's
    line names. They are read from disk for every plan: they are words for the model, never settings, and may have
    changed since the last turn."""
    project, loaded = project_instructions(jail, int(min(PROJECT_MAX_TOKENS, window // 10) * BYTES_PER_TOKEN))
    named = named_files(jail, text) if small else []
    if configured:  # the user's own prompt replaces Sunwell's words, the lens' and the focus' too
        return "\n\n".join([configured, *project]), loaded, named
    files = workspace_files(jail) if small else None
    return system_prompt(jail.root, [*project, *extra], small, files), loaded, named


def _reader(specs: Sequence[ToolSpec]) -> str | None:
    """The offered tool that reads a file, if any."""
    return "read_file" if any(spec.name == "read_file" for spec in specs) else None


def first_notices(plan: TurnPlan, ctx: ToolContext, lens: Lens | None, servers: list[NoticeEvent],
                  ignored: Sequence[str]) -> list[NoticeEvent]:
    """What a turn says before anything else: commands unsandboxed, what the MCP servers said on starting,
    settings a lens or the workspace (`ignored`) may not widen, hidden characters taken out of the project
    instructions, tools fitted to the window."""
    warning = sandbox_warning(ctx) if any(t.risk == "shell" for t in plan.tools) else None
    notices = [NoticeEvent(level="warning", code="sandbox_off", message=warning)] if warning else []
    notices += servers
    if lens and lens.tool_policy and lens.tool_policy.command_allowlist:
        notices.append(NoticeEvent(level="warning", code="workspace_config_ignored",
                                   message=f"the lens {lens.name} may only narrow what you allowed; "
                                           "ignored: tool_policy.command_allowlist"))
    if ignored:
        notices.append(NoticeEvent(level="warning", code="workspace_config_ignored",
                                   message=f"the workspace config (.sunwell/config.yaml) may only narrow what you "
                                           f"allowed; ignored: {', '.join(ignored)}. Set these in your user "
                                           f"config ({user_config_path()}), on the command line or in VS Code."))
    notices += [NoticeEvent(level="warning", code="hidden_characters",
                            message=removed_message(item.path, item.hidden))
                for item in plan.loaded if item.hidden]
    if plan.fitted:
        notices.append(NoticeEvent(level="info", code="tools_fitted",
                                   message=f"tool definitions fitted to the {plan.window}-token "
                                           f"context window: {'; '.join(plan.fitted)}"))
    return notices


def starting_notices(said: list[NoticeEvent], log: TurnLog) -> Callable[[str, str, str], None]:
    """What MCP servers say as a turn starts them: held in `said` for `first_notices`, but for a sign-in's page
    (tools/mcp/oauth.py), which the user needs while the start waits for them: that one is said at once."""

    def heard(level: str, code: str, message: str) -> None:
        notice = NoticeEvent(level=level, code=code, message=message)
        if code == "mcp_auth":
            log.emit(notice)
        else:
            said.append(notice)

    return heard
