"""What one turn is made of, put together from the engine (`Engine.run_turn`): its model and provider stack, its
log, its tool context (the capabilities its calls get, tools/base.py `ToolContext`), the MCP servers and hooks it may
use, its plan (agent/plan.py) and its config, then the loop (agent/loop.py).

The sidecar imports this with a turn's machinery, at its first turn, not at start-up (agent/engine.py). What it
takes from the engine is the `Engine` protocol below (the engine module is not imported here: it imports this).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sunwell.agent.attached_images import ImageInput, attach_images
from sunwell.agent.compaction import Summariser
from sunwell.agent.gate import Gate
from sunwell.agent.live import LiveSessions
from sunwell.agent.loop import Turn, TurnConfig
from sunwell.agent.mentions import Mention, read_mentions
from sunwell.agent.model_access import Models
from sunwell.agent.plan import Retool, first_notices, starting_notices
from sunwell.agent.questions import TurnClient
from sunwell.agent.resource_mentions import attach_resources
from sunwell.agent.sessions import SessionStore
from sunwell.agent.subagent import Subagents
from sunwell.agent.turn import Sink, TurnLog
from sunwell.config import Settings
from sunwell.hooks import Hooks
from sunwell.lens.schema import Lens
from sunwell.model_strings import ModelSpec
from sunwell.models.base import ModelRequest, Provider, TextDelta
from sunwell.tools.base import (
    CallIdentity,
    CommandSettings,
    Limits,
    SearchSettings,
    Tool,
    ToolContext,
    TurnServices,
    UndoHooks,
)
from sunwell.tools.learned.registry import LearnedApis
from sunwell.tools.mcp import McpHub
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.policy import network_for
from sunwell.tools.policy.approval import ApprovalPolicy
from sunwell.tools.policy.audit import AuditLog
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.policy.ratelimit import RateLimiter, stricter
from sunwell.tools.scratch import Scratch
from sunwell.tools.workspace.checkpoints import Checkpoints
from sunwell.tools.workspace.jail import Jail
from sunwell.vocabulary import Trust
from sunwell.wire.client import Client
from sunwell.wire.events import DoneEvent, NoticeEvent
from sunwell.wire.messages import UserMessage

if TYPE_CHECKING:
    from sunwell.agent.plan import Grant, TurnPlan
    from sunwell.agent.resume import ResumePoint
    from sunwell.tools.processes import ProcessTable


class Engine(Protocol):
    """What a turn takes from its engine (agent/engine.py), which hands itself in."""

    settings: Settings
    client: Client
    live: LiveSessions
    mcp: McpHub
    approval: ApprovalPolicy
    hooks: Hooks
    host_rules: HostRules
    models: Models

    @property
    def store(self) -> SessionStore: ...
    @property
    def learned(self) -> LearnedApis: ...
    @property
    def checkpoints(self) -> Checkpoints: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def processes(self) -> ProcessTable: ...
    def lens(self, name_or_path: str) -> Lens: ...
    def grant(self, trust: Trust, names: Sequence[str] | None, lens: Lens | None) -> Grant: ...
    def open_session(self, session: str | None, title: str) -> str: ...
    def jail(self, lens: Lens | None = None) -> Jail: ...
    def catalogue(self, lens: Lens | None) -> list[Tool]: ...
    async def plan(self, spec: ModelSpec, session: str | None, lens: Lens | None, grant: Grant,
                   instructions: Sequence[str], *, text: str = "", window: tuple[int, str] | None = None
                   ) -> TurnPlan: ...


async def run_turn(engine: Engine, text: str, sink: Sink, *, session: str | None, model: str | None, trust: str | None,
                   tool_names: Sequence[str] | None, lens: str | None, instructions: Sequence[str],
                   mentions: Sequence[Mention], mentions_in_text: bool, resume: ResumePoint | None,
                   images: Sequence[ImageInput] = ()) -> DoneEvent:
    """`Engine.run_turn`, which says what each argument means."""
    settings = engine.settings
    spec = engine.models.spec(model)
    engine.models.provider(spec)  # a missing key or bad endpoint is a setup error, before any session exists
    active_lens = engine.lens(lens) if lens else None
    grant = engine.grant(Trust[trust or settings.trust], tool_names, active_lens)
    session = engine.open_session(session, text)
    live = engine.live.get(session)
    window = await engine.models.window(spec, session)
    stack = engine.models.stack(spec, session, window[0])

    def learned(size: int) -> None:  # a refusal taught the window: this session keeps it
        live.window, live.window_model, stack.windowed.window = size, str(spec), size

    log = TurnLog(engine.store, session, sink, resume and resume.turn, secrets=EnvSecrets(
        os.environ, settings.env_passthrough), seq=resume.next_seq if resume else 0)
    ctx = tool_context(engine, log, grant[0], active_lens, stack.calls, spec.model)
    found = await attach_resources(engine.mcp, mentions, ctx.jail, text if mentions_in_text and not resume else "")
    pictures = attach_images(images, found, ctx.jail, settings.images)
    said = [NoticeEvent(level="warning", code="image_refused", message=refused)  # the line goes on without them
            for refused in pictures.refused]  # and by MCP servers starting: all shown when the turn starts
    line = UserMessage(text=text, attachments=read_mentions(pictures.mentions, ctx.jail, window[0]),
                       images=pictures.images)
    if resume is None:  # what a resumed turn runs with again
        engine.store.append(session, log.turn, 0, "settings", f"{spec}, trust {trust or settings.trust}",
                            {"model": str(spec), "trust": trust or settings.trust, "lens": lens, "tools": tool_names,
                             "instructions": list(instructions)})
    if engine.mcp.servers:  # started lazily, once a turn may use their tools: then their tools join the catalogue
        await engine.mcp.start(*grant, starting_notices(said, log), asking=engine.approval.mode == "ask",
                               ask_timeout=settings.approval_timeout_sec, session=session, turn=log.turn)
    audit = AuditLog(engine.data_dir, passthrough=settings.env_passthrough)
    hooks = await engine.hooks.start_turn(engine.approval, log, grant[0].name, audit, said.append)
    retool = Retool(lambda: engine.catalogue(active_lens), lambda: engine.learned.changes)  # learned from now on
    plan = await engine.plan(spec, session, active_lens, grant, instructions, text=line.content_for_model(),
                             window=window)
    own = Summariser(stack.windowed, spec.model, plan.window, settings.provider_attempts, live.context)
    config = TurnConfig(
        plan=plan, provider=stack.turn, tool_ctx=ctx, summariser=await summariser(engine, session, own),
        gate=Gate(engine.approval, dry_run=settings.dry_run, limiter=limiter(engine, session, active_lens)),
        audit=audit, notices=first_notices(plan, ctx, active_lens, said, settings.ignored_workspace_keys),
        max_tool_turns=settings.max_tool_turns, on_window_learned=learned, hooks=hooks, retool=retool)
    # the turn's sub-agents start from its config: the config they see is this one, without sub-agents of their own
    config = dataclasses.replace(config, tool_ctx=ctx.lending(subagent=Subagents(config, log, settings).run))
    turn = Turn(config, log, engine.store.messages(session, open_tail=resume is not None))
    return await (turn.resume(resume) if resume else turn.run(line))


def tool_context(engine: Engine, log: TurnLog, trust: Trust, lens: Lens | None, provider: Provider,
                 model: str) -> ToolContext:
    """The capabilities the calls of a turn of `log.session` get (tools/base.py `ToolContext`)."""
    settings, checkpoints, session, turn = engine.settings, engine.checkpoints, log.session, log.turn
    data_dir, live = engine.data_dir, engine.live.get(session)
    processes = engine.processes.attach(session, log)

    async def complete(system: str, user: str) -> str:  # a skill's nested call: one answer, no tools
        request = ModelRequest(model=model, system=system, messages=[UserMessage(text=user)],
                               max_tokens=settings.max_tokens)
        return "".join([event.text async for event in provider.stream(request) if isinstance(event, TextDelta)])

    def notify(level: str, code: str, message: str) -> None:
        log.emit(NoticeEvent(level=level, code=code, message=message))  # type: ignore[arg-type]

    return ToolContext(
        jail=engine.jail(lens),
        limits=Limits(
            max_output_bytes=settings.max_output_bytes, tool_timeout=settings.tool_timeout_sec,
            search=SearchSettings(ripgrep_path=settings.ripgrep_path), images=settings.images,
            commands=CommandSettings(
                sandbox=settings.sandbox, network=trust >= Trust.full, max_timeout=settings.max_command_timeout_sec,
                env_passthrough=tuple(settings.env_passthrough), env=tuple(engine.command_env.items()), quarantine_dir=data_dir / "quarantine",
                staging_dir=data_dir / "staging", staging_max_bytes=settings.staging.max_bytes,
                staging_max_files=settings.staging.max_files)),
        client=TurnClient(engine.client, settings),
        network=network_for(settings, engine.host_rules, lambda: engine.approval.session_hosts(session), live.pages,
                            processes),
        scratch=Scratch(live.scratch, show_plan=log.emit),
        undo=UndoHooks(
            before_write=lambda path, rel: checkpoints.save(session, turn, path, rel),
            after_write=lambda path, rel, data: checkpoints.record_after(session, turn, rel, data),
            before_changes=lambda files: checkpoints.save_changes(session, turn, files)),
        turn=TurnServices(notify=notify, secrets=log.secrets, complete=complete, processes=processes),
        call=CallIdentity(session=session, turn=turn),
    )


async def summariser(engine: Engine, session: str | None, own: Summariser) -> Summariser:
    """Who writes summaries when a session's history is compacted: `compaction_model` when configured, else `own`
    (the session's model)."""
    if not engine.settings.compaction_model:
        return own
    spec = engine.models.spec(engine.settings.compaction_model)
    window, _ = await engine.models.window(spec, session)
    return Summariser(engine.models.provider(spec), spec.model, window, engine.settings.provider_attempts)


def limiter(engine: Engine, session: str, lens: Lens | None) -> RateLimiter:
    """The session's usage so far, judged by this turn's limits: the user's, narrowed by the lens'."""
    usage = engine.live.get(session).limiter
    return usage.with_limits(stricter(engine.settings.rate_limits, lens.tool_policy.rate_limits
                                      if lens and lens.tool_policy else None))
