"""The `::command` registry: one set of chat commands for `sunwell chat` and the sidecar.

A command reads the engine or changes the chat's `ChatState`, and answers with markdown; only `::compact` calls the
model (to summarise).
`::run` answers with a `prompt` instead: a user line the session runs as an ordinary turn asking the model to use
the skill, so a skill runs with the same streaming, approvals, checkpoints and cancellation as any other call.
Which lines are commands, and how an answer reaches a front end, is the session's (agent/session.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sunwell.agent.chat import ChatState
from sunwell.agent.context_commands import compact_session, describe_context, session_view
from sunwell.agent.lens_commands import (
    activate_lens,
    describe_lenses,
    describe_skills,
    skill_prompt,
)
from sunwell.agent.mcp_commands import prompt_docs, prompt_line
from sunwell.agent.transcript_markdown import transcript_markdown
from sunwell.clipping import clip
from sunwell.commands_spec import COMMAND_DOCS, Command, CommandDoc
from sunwell.errors import SetupError, SunwellError
from sunwell.tools.base import ToolFailure, Trust
from sunwell.tools.workspace.safe_write import prepare_write, write_target
from sunwell.wire.events import Event, PlanEvent

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine
    from sunwell.lens.schema import Lens


@dataclass(frozen=True)
class CommandResult:
    output: str
    """Markdown for the user."""
    exit: bool = False
    """`::exit`: the terminal chat ends."""
    prompt: str | None = None
    """A user line to run as a turn now (`::run`)."""
    events: tuple[Event, ...] = ()
    """Shown before the output (`::compact`: the `compacted` notice and the new `contextUsage`)."""


class CommandError(SunwellError):
    """The command cannot do what was asked; the message is the answer."""


Handler = Callable[["Engine", ChatState, str], Awaitable[CommandResult | str]]
_DOCS: dict[str, CommandDoc] = {doc.name: doc for doc in COMMAND_DOCS}
_HANDLERS: dict[str, Handler] = {}


def commands_catalog(*, terminal: bool = False, engine: Engine | None = None) -> list[CommandDoc]:
    """Every command with its usage and description; terminal-only ones (`::exit`) only for the terminal; with
    `engine`, the prompts of its MCP servers listed so far (`::SERVER:PROMPT`)."""
    return [*(doc for doc in COMMAND_DOCS if terminal or not doc.terminal_only), *(prompt_docs(engine) if engine else [])]


def command(name: str) -> Callable[[Handler], Handler]:
    assert name in _DOCS, f"::{name} has no doc in sunwell.commands_spec"

    def register(handler: Handler) -> Handler:
        _HANDLERS[name] = handler
        return handler

    return register


async def run_command(engine: Engine, state: ChatState, parsed: Command) -> CommandResult:
    """Answer one `::command`, as `parse_command` read its line (once: agent/session.py); errors are answers too."""
    doc = _DOCS.get(parsed.name)
    if doc is None and ":" in parsed.name:  # an MCP prompt: its messages start the turn
        try:
            return CommandResult("", prompt=await prompt_line(engine, parsed.name, parsed.args))
        except SunwellError as exc:
            return CommandResult(str(exc))
    if doc is None:
        return CommandResult(f"Unknown command: ::{clip(parsed.name)}. Try ::help")
    if doc.terminal_only and not state.terminal:
        return CommandResult(f"`::{doc.name}` works in the terminal chat only.")
    try:
        result = await _HANDLERS[parsed.name](engine, state, parsed.args)
    except SunwellError as exc:  # a bad argument, no such session or lens, nothing to undo: the answer says so
        return CommandResult(str(exc))
    return result if isinstance(result, CommandResult) else CommandResult(result)


# ---- the commands ----------------------------------------------------------------------------------------------


@command("help")
async def _help(engine: Engine, state: ChatState, args: str) -> str:
    if args:
        doc = _DOCS.get(args.removeprefix("::").lower())
        if doc is None or (doc.terminal_only and not state.terminal):
            return f"Unknown command: ::{clip(args.removeprefix('::'))}. Try ::help"
        return f"`{doc.usage}`\n\n{doc.description}"
    lines = [f"- `{doc.usage}` — {doc.description}" for doc in commands_catalog(terminal=state.terminal, engine=engine)]
    return "**Chat commands**\n\n" + "\n".join(lines) + "\n\nAny other line goes to the model."


@command("skills")
async def _skills(engine: Engine, state: ChatState, args: str) -> str:
    return describe_skills(_active_lens(engine, state))


@command("lens")
async def _lens(engine: Engine, state: ChatState, args: str) -> str:
    if not args:
        return describe_lenses(engine, _active_lens(engine, state, required=False), rescan=state.terminal)
    if args.lower() in ("off", "none"):
        state.lens = None
        return "No lens is active now."
    state.lens, text = activate_lens(engine, args)
    return text


@command("focus")
async def _focus(engine: Engine, state: ChatState, args: str) -> str:
    state.focus = args or None
    if not args:
        return "Focus cleared."
    return f"Focus: `{clip(args)}`. The next turns ask the model to keep to it; `::focus` alone clears it."


@command("context")
async def _context(engine: Engine, state: ChatState, args: str) -> str:
    lens = _active_lens(engine, state, required=False)
    try:
        view = await session_view(engine, state)  # the next turn's own plan: what it shows is what is sent
        offered, level = view.plan.tools, view.plan.trust
        model, window = f"`{view.plan.spec}`", describe_context(view)
        messages = len(view.history)
    except SetupError as exc:
        offered, _, level = engine.tools(_trust(engine, state), state.tool_names, lens)
        model, window = f"none ({exc})", []
        messages = len(engine.store.messages(state.session)) if state.session else 0
    rows = [("model", model), ("trust", _trust_text(engine, state, level)),
            ("lens", f"**{lens.name}**" if lens else "none"), ("focus", f"`{state.focus}`" if state.focus else "none"),
            ("session", f"`{state.session}`" if state.session else "new (no messages yet)"),
            ("messages", str(messages)), ("tools", ", ".join(f"`{t.name}`" for t in offered) or "none"), *window]
    return "**Context**\n\n" + "\n".join(f"- {name}: {value}" for name, value in rows)


@command("compact")
async def _compact(engine: Engine, state: ChatState, args: str) -> CommandResult:
    text, events = await compact_session(engine, state, args)
    return CommandResult(text, events=tuple(events))


@command("save")
async def _save(engine: Engine, state: ChatState, args: str) -> str:
    path = _one_argument(args, "::save <path>")
    messages = engine.store.messages(state.session, original=True) if state.session else []
    if not messages:
        return "Nothing to save yet: the conversation is empty."
    lens = _active_lens(engine, state, required=False)
    data = transcript_markdown(state.session or "", messages).encode("utf-8")
    try:
        target = prepare_write(engine.jail(lens), path)
        created = await asyncio.to_thread(write_target, target, data)
    except ToolFailure as exc:
        suggestion = f" ({exc.error.suggestion})" if exc.error.suggestion else ""
        return f"Cannot save to `{path}`: {exc.error.message}{suggestion}"
    return f"Saved {len(messages)} messages to `{target.rel}`{'' if created else ' (replaced the old file)'}."


@command("clear")
async def _clear(engine: Engine, state: ChatState, args: str) -> str:
    old, state.session = state.session, None
    if old:
        engine.release(old)
    kept = f" The previous one is session `{old}` (`sunwell sessions show {old}`)." if old else ""
    return "New conversation." + kept


@command("tools")
async def _tools(engine: Engine, state: ChatState, args: str) -> str:
    lens = _active_lens(engine, state, required=False)
    offered, catalogue, level = engine.tools(_trust(engine, state), state.tool_names, lens)
    mode = engine.approval.mode
    lines = [f"- `{tool.name}` — {tool.source} · trust {tool.min_trust.name} · "
             + ("auto" if tool.approval == "auto" else "ask" if mode == "ask" else f"{mode} (--approve {mode})")
             for tool in offered]
    names = {tool.name for tool in offered}
    above = [f"`{tool.name}` ({tool.min_trust.name})" for tool in catalogue
             if tool.name not in names and tool.min_trust > level]
    text = f"**Tools** at trust {_trust_text(engine, state, level)}\n\n" + ("\n".join(lines) or "No tools.")
    if above:
        text += "\n\nNeed a higher trust: " + ", ".join(above) + "."
    if engine.settings.dry_run == "risky":
        text += "\n\nDry run: only read-only calls run; the others are shown, not executed."
    elif engine.settings.dry_run:
        text += "\n\nDry run: calls are shown, none is executed."
    return text


@command("model")
async def _model(engine: Engine, state: ChatState, args: str) -> str:
    if not args:
        spec = engine.models.spec(state.model)
        caps = engine.models.capabilities(spec)
        calls = "native tool calls" if caps.native_tools else f"emulated tool calls ({caps.emulation})"
        return (f"Model: **{spec}** — {calls}, context window {caps.context_window:,} tokens."
                "\n\nSwitch with `::model PROVIDER:MODEL`.")
    spec = engine.models.spec(_one_argument(args, "::model [id]"))
    await asyncio.to_thread(engine.models.provider, spec)  # a missing key is said now; the SDK import takes a second
    state.model = str(spec)
    return f"Model: **{spec}** from the next turn on."


@command("trust")
async def _trust_command(engine: Engine, state: ChatState, args: str) -> str:
    levels = ", ".join(level.name for level in Trust)
    if not args:
        return f"Trust: {_trust_text(engine, state)}.\n\nLevels: {levels}. Change it with `::trust <level>`."
    if args not in Trust.__members__:
        return f"Unknown trust level `{clip(args)}`: use one of {levels}."
    state.trust = args
    return f"Trust: {_trust_text(engine, state)} from the next turn on."


@command("undo")
async def _undo(engine: Engine, state: ChatState, args: str) -> str:
    if args not in ("", "--force", "force"):
        raise CommandError("Usage: `::undo [--force]`")
    if state.session is None:
        return "Nothing to undo: this conversation has not changed any file."
    result = await asyncio.to_thread(engine.undo, state.session, force=bool(args))
    if result.turn is None:
        return "Nothing to undo: no turn of this conversation changed files (or all were undone)."
    lines = ([f"- restored `{path}`" for path in result.restored]
             + [f"- deleted `{path}` (the turn created it)" for path in result.deleted]
             + [f"- overwrote `{path}` (it had changed since)" for path in result.conflicts])
    return f"Undid turn `{result.turn}`:\n\n" + ("\n".join(lines) or "- the files were already as before")


@command("run")
async def _run(engine: Engine, state: ChatState, args: str) -> CommandResult:
    lens = _active_lens(engine, state)
    offered, catalogue, level = engine.tools(_trust(engine, state), state.tool_names, lens)
    return CommandResult("", prompt=skill_prompt(lens, args, offered, catalogue, level))


@command("mcp")
async def _mcp(engine: Engine, state: ChatState, args: str) -> str:
    rows = engine.mcp.status()
    if not rows:
        return "No MCP servers are configured: add them under `mcp_servers` in your user config."
    lines = []
    for row in rows:
        lines.append(f"- **{row.name}** — {row.state} · `{row.launch}` · {row.source} config · trust {row.trust} · "
                     f"approval {row.approval} · sandbox {row.sandbox}")
        if row.state == "awaiting approval":
            lines.append(f"  approve it with `sunwell mcp approve {row.name}`")
        if row.warning:
            lines.append(f"  {row.warning}")
        if row.tools:
            lines.append("  tools: " + ", ".join(f"`{name}`" for name in row.tools))
    return "**MCP servers** (started when a turn may use their tools)\n\n" + "\n".join(lines)


@command("plan")
async def _plan(engine: Engine, state: ChatState, args: str) -> str:
    plan = current_plan(engine, state.session)
    if plan is None:
        return "No plan yet: for a task of several steps the model keeps one with `update_plan`."
    done = sum(item.status == "done" for item in plan.items)
    shown = {"done": "- [x] {}", "in_progress": "- [ ] **{}** (in progress)", "pending": "- [ ] {}"}
    lines = [shown[item.status].format(item.step) for item in plan.items]
    why = f"\n\n{plan.explanation}" if plan.explanation else ""
    return f"**Plan** ({done}/{len(plan.items)} done)\n\n" + "\n".join(lines) + why


def current_plan(engine: Engine, session: str | None) -> PlanEvent | None:
    """The session's plan: as its live state holds it, else (a session reopened from disk) its log's last."""
    if session is None:
        return None
    if session in engine.live and (plan := engine.live.get(session).scratch.plan) is not None:
        return plan
    rows = [row for row in engine.store.events(session) if row.kind == "plan"]
    return PlanEvent.model_validate(rows[-1].data) if rows else None


@command("exit")
async def _exit(engine: Engine, state: ChatState, args: str) -> CommandResult:
    return CommandResult("Bye.", exit=True)


# ---- helpers ---------------------------------------------------------------------------------------------------


def _active_lens(engine: Engine, state: ChatState, *, required: bool = True) -> Lens | None:
    if state.lens:
        return engine.lens(state.lens)
    if required:
        raise CommandError("No lens is active: `::lens` lists them, `::lens <name>` activates one.")
    return None


def _trust(engine: Engine, state: ChatState) -> Trust:
    return Trust[state.trust or engine.settings.trust]


def _trust_text(engine: Engine, state: ChatState, effective: Trust | None = None) -> str:
    chosen = _trust(engine, state)
    if effective is None:
        _, _, effective = engine.tools(chosen, state.tool_names, _active_lens(engine, state, required=False))
    return f"**{chosen.name}**" + (f" (the lens caps it at **{effective.name}**)" if effective < chosen else "")


def _one_argument(args: str, usage: str) -> str:
    if not args:
        raise CommandError(f"Usage: `{usage}`")
    return args


