"""The engine under every session: settings + workspace in, turns out.

Front ends hand a line to a `Session` (agent/session.py), which answers `::commands` and runs turns here
(`run_turn`: the turn's plan, agent/plan.py, the provider stack, models/factory.py, then the loop, agent/loop.py);
the engine holds what they share: the providers, lenses, MCP servers, learned APIs, the session store. Per-session
state (allow-for-session rules, rate limits, the emulation fallback, the chat state) lives in `live`, kept across
turns by a long-lived front end and released when a session is cleared.

The sidecar builds an Engine before it answers `sunwell/models` (bench_sidecar.py: ready <= 1.5x a bare pygls
start), so this module imports only what that needs; the rest is imported where first needed: a turn's machinery
(the loop, jsonschema, the gate, the plan, the tool registry, the web's policy, the session store), the lenses
(YAML, jsonschema), the provider adapters, the learned APIs (the HTTP client, YAML), bashlex (command allowlist).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sunwell.agent.context import SessionContext
from sunwell.agent.live import LiveSessions
from sunwell.agent.mentions import Mention, read_mentions
from sunwell.agent.questions import Questioner, question_asker
from sunwell.agent.resource_mentions import attach_resources
from sunwell.agent.windows import ServerWindows, calibrated_estimate, configured_window
from sunwell.clipping import clip
from sunwell.config import Settings, user_config_path
from sunwell.errors import SetupError
from sunwell.hooks import Hooks
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec, parse_model_string
from sunwell.models.base import ModelRequest, Provider, TextDelta
from sunwell.models.capabilities import Capabilities, capabilities_for
from sunwell.tools.base import CommandSettings, SearchSettings, Tool, ToolContext, Trust, UndoHooks
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.policy.approval import ApprovalPolicy, Asker
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.policy.ratelimit import RateLimiter, stricter
from sunwell.tools.scratch import Scratch
from sunwell.tools.workspace.checkpoints import Checkpoints, UndoResult
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.events import DoneEvent, NoticeEvent
from sunwell.wire.messages import UserMessage

if TYPE_CHECKING:
    from sunwell.agent.compaction import Summariser
    from sunwell.agent.plan import Grant, TurnPlan
    from sunwell.agent.resume import ResumePoint
    from sunwell.agent.sessions import SessionStore
    from sunwell.agent.turn import Sink, TurnLog
    from sunwell.lens.registry import LensRegistry
    from sunwell.lens.schema import Lens
    from sunwell.models.factory import Adapters, ProviderStack
    from sunwell.tools.learned.registry import LearnedApis
    from sunwell.tools.processes import ProcessTable


class Engine:
    def __init__(self, settings: Settings, workspace: Path, *, asker: Asker | None = None,
                 questioner: Questioner | None = None) -> None:
        if not workspace.is_dir():
            raise SetupError(f"workspace does not exist or is not a directory: {workspace}")
        self.settings = settings
        self.workspace = workspace.resolve()
        self.asker, self.questioner = asker, questioner
        self.code_intel: Callable[[dict[str, Any]], Awaitable[Any]] | None = None  # the editor's, via the sidecar
        self._store: SessionStore | None = None  # these four are made on first use
        self._lenses: LensRegistry | None = None
        self._adapters: Adapters | None = None
        self._learned: LearnedApis | None = None
        self.windows = ServerWindows()
        self.approval = ApprovalPolicy(mode=settings.approval or "deny", ask=asker,
                                       timeout=settings.approval_timeout_sec)
        self.live = LiveSessions(lambda: RateLimiter(self.settings.rate_limits), on_release=lambda session: (
            self.approval.forget([session]), self.processes.end_session(session)))
        self.host_rules = HostRules.configured(settings.network)
        self.mcp = McpHub(self._mcp_surroundings(settings))
        self.hooks = Hooks(settings, self.workspace)
        self.reconfigure(settings)

    def reconfigure(self, settings: Settings) -> None:
        """New settings for the next turn; allow-for-session rules and rate-limit windows are kept."""
        self.host_rules = HostRules.configured(settings.network)
        self.settings = settings
        self.mcp.configure(settings.mcp_servers, settings.proposed_mcp_servers, self._mcp_surroundings(settings))
        if self._learned is not None:
            self._learned.configure(settings)
        self.hooks.configure(settings)
        self.approval.mode = settings.approval or "deny"
        self.approval.timeout = settings.approval_timeout_sec
        self.approval.is_allowlisted = lambda command: False
        if settings.command_allowlist:
            from sunwell.tools.policy.allowlist import CommandAllowlist

            try:
                self.approval.is_allowlisted = CommandAllowlist(settings.command_allowlist).allows
            except ValueError as exc:
                raise SetupError(f"invalid setting 'command_allowlist': {exc}") from None

    @property
    def learned(self) -> LearnedApis:
        if self._learned is None:  # a turn's tools, `::context`, the editor's list
            from sunwell.tools.learned.registry import LearnedApis, remember_learned

            learned = LearnedApis(Path(self.settings.data_dir or "."), on_learned=remember_learned)
            self._learned = learned.configure(self.settings)
        return self._learned

    @cached_property
    def processes(self) -> ProcessTable:  # the sessions' background processes (tools/processes/)
        from sunwell.tools.processes import ProcessTable

        return ProcessTable(self.data_dir / "processes", lambda: self.settings.background)

    @property
    def data_dir(self) -> Path:
        return Path(self.settings.data_dir)

    @property
    def store(self) -> SessionStore:
        if self._store is None:  # opened on first use, so lens features work even when the data dir is broken
            from sunwell.agent.sessions import SessionStore

            self._store = SessionStore(self.data_dir / "sessions.db")
        return self._store

    @property
    def lenses(self) -> LensRegistry:
        if self._lenses is None:
            from sunwell.lens.registry import LensRegistry
            from sunwell.tools.registry import CORE_TOOLS

            self._lenses = LensRegistry(self.workspace, user_config_path().parent / "lenses",
                                        known_tools=[*(tool.name for tool in CORE_TOOLS), *self.mcp.tool_patterns(),
                                                     *self.learned.tool_patterns()])
        return self._lenses

    def lens(self, name_or_path: str) -> Lens:
        """An active lens by name or path; a lens with errors, or none at all, is a setup error."""
        result = self.lenses.reload(path) if (path := self.lenses.file_of(name_or_path)) is not None else None
        if result is None:
            known = ", ".join(lens.name for lens in self.lenses.active().values()) or "none found"
            raise SetupError(f"no lens '{clip(name_or_path)}' (lenses: {known})")
        errors = [d for d in result.diagnostics if d.severity == "error"]
        if errors and (previous := self.lenses.get(path)) is not None:
            return previous  # an edit broke it: the last valid version stays active
        if result.lens is None or errors:
            first = errors[0] if errors else None
            where = f"{path}:{first.line + 1}:{first.col + 1}: {first.message}" if first else str(path)
            raise SetupError(f"lens has errors and was not activated: {where}")
        return result.lens

    @property
    def checkpoints(self) -> Checkpoints:
        return Checkpoints(self.data_dir / "checkpoints")

    def model_spec(self, model: str | None = None) -> ModelSpec:
        try:
            return parse_model_string(model or self.settings.model or "")
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def provider(self, spec: ModelSpec) -> Provider:
        """The SDK adapter for `spec`, made once per endpoint and key (models/factory.py `Adapters`)."""
        from sunwell.models.factory import Adapters

        self._adapters = self._adapters or Adapters()
        try:
            return self._adapters.get(spec, self.settings.base_url)
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def provider_stack(self, spec: ModelSpec, session: str, window: int) -> ProviderStack:
        """What a turn of `session` streams from (models/factory.py `provider_for`); a server that refuses native
        tools is remembered for the session."""
        from sunwell.models.factory import provider_for

        live = self.live.get(session)
        return provider_for(spec, self.capabilities(spec), adapter=self.provider(spec), window=window,
                            estimate=calibrated_estimate(live.context), attempts=self.settings.provider_attempts,
                            emulating=live.emulating, on_fallback=lambda: setattr(live, "emulating", True))

    def capabilities(self, spec: ModelSpec) -> Capabilities:
        overrides = {key: value.model_dump(exclude_none=True) for key, value in self.settings.models.items()}
        return capabilities_for(spec.model, spec.provider, overrides)

    async def context_window(self, spec: ModelSpec, session: str | None = None) -> tuple[int, str]:
        """The window a turn of `spec` budgets against, and where it came from (agent/windows.py): what a refusal
        taught `session` ("refusal"), the user's config ("config"), what the server says ("server (…)", asked once
        per endpoint and model), the capability registry ("registry")."""
        live = self.live.get(session) if session else None
        if live is not None and live.window and live.window_model == str(spec):
            return live.window, "refusal"
        if (size := configured_window(self.settings.models, spec)) is not None:
            return size, "config"
        if spec.provider in LOCAL_PROVIDERS and (said := await self.windows.ask(spec, self.endpoint(spec))):
            return said
        return self.capabilities(spec).context_window, "registry"

    def endpoint(self, spec: ModelSpec, *, made_only: bool = False) -> str | None:
        """The endpoint `spec`'s requests go to; with `made_only`, only if its adapter exists (importing an SDK
        to make one takes a second)."""
        if made_only and not (self._adapters and self._adapters.made(spec, self.settings.base_url)):
            return None
        try:
            return getattr(self.provider(spec), "base_url", None)
        except SetupError:  # no endpoint configured: nothing to ask
            return None

    def open_session(self, session: str | None, title: str) -> str:
        if session is None:
            session = self.store.create(title=title[:80])
            self.store.append(session, "", 0, "workspace", str(self.workspace), {"workspace": str(self.workspace)})
            return session
        if not self.store.exists(session):
            raise SetupError(f"unknown session '{clip(session)}': see `sunwell sessions list`")
        return session

    def release(self, session: str) -> None:
        """Forget the live state of `session` (rate limits, allow-for-session rules, chat state): `::clear`."""
        self.live.release(session)

    def jail(self, lens: Lens | None = None) -> Jail:
        """The workspace jail: the built-in blocked patterns, the user's, and the active lens' (which only add)."""
        return Jail(self.workspace, [*self.settings.blocked_paths, *(lens.tool_policy.blocked_paths
                                                                     if lens and lens.tool_policy else [])])

    def session_workspace(self, session: str) -> Path | None:
        row = next((r for r in self.store.events(session) if r.kind == "workspace"), None)
        return Path(row.data["workspace"]) if row else None

    def undo(self, session: str | None = None, *, force: bool = False) -> UndoResult:
        """Put back the files the last not-yet-undone turn of `session` (default: the latest here) changed."""
        checkpoints = self.checkpoints
        if session is None:
            session = next((info.id for info in self.store.list()
                            if self.session_workspace(info.id) == self.workspace and checkpoints.pending(info.id)),
                           None)
            if session is None:
                raise SetupError("nothing to undo: no turn in this workspace has changed files")
        elif not self.store.exists(session):
            raise SetupError(f"unknown session '{clip(session)}': see `sunwell sessions list`")
        elif (home := self.session_workspace(session)) not in (None, self.workspace):
            raise SetupError(f"session {session} belongs to the workspace {home}: run undo there")
        return checkpoints.undo(session, self.workspace, self.jail(), force=force)

    def grant(self, trust: Trust, names: Sequence[str] | None, lens: Lens | None) -> Grant:
        """The trust level and tools a turn gets: what the user granted, which a lens can only narrow."""
        from sunwell.lens.registry import narrow

        return narrow(lens.tool_policy if lens else None, trust, names)

    def catalogue(self, lens: Lens | None) -> list[Tool]:
        """Every tool known now: the core tools (code intelligence when an editor answers it), the lens' skills,
        the tools of the MCP servers started, learn_api and the learned APIs' tools."""
        from sunwell.agent.skills import skill_tools
        from sunwell.tools.handlers.web import WEB_SEARCH
        from sunwell.tools.registry import CODE_INTEL_TOOLS, CORE_TOOLS

        searching = [WEB_SEARCH] if self.settings.web_search else []
        core = [tool for tool in CORE_TOOLS if self.code_intel is not None or tool not in CODE_INTEL_TOOLS]
        return [*core, *searching, *(skill_tools(lens, {t.name for t in CORE_TOOLS}) if lens else []),
                *self.mcp.tools(), *self.learned.tools()]

    def tools(self, trust: Trust, names: Sequence[str] | None = None,
              lens: Lens | None = None) -> tuple[list[Tool], list[Tool], Trust]:
        """(offered tools, catalogue, effective trust), as a turn's plan offers them."""
        from sunwell.agent.plan import offered_tools

        grant, catalogue = self.grant(trust, names, lens), self.catalogue(lens)
        return offered_tools(catalogue, grant), catalogue, grant[0]

    async def plan(self, spec: ModelSpec, session: str | None, lens: Lens | None, grant: Grant,
                   instructions: Sequence[str], *, text: str = "", window: tuple[int, str] | None = None) -> TurnPlan:
        """The plan of `session`'s next turn (agent/plan.py): `run_turn`'s, and `::context`'s for its figures."""
        from sunwell.agent.plan import plan_turn

        window = window or await self.context_window(spec, session)
        context = self.live.get(session).context if session else SessionContext()
        return await plan_turn(self.settings, spec, self.capabilities(spec), window, self.catalogue(lens), grant,
                               jail=self.jail(lens), lens=lens, instructions=instructions, context=context, text=text)

    async def run_turn(self, text: str, sink: Sink, *, session: str | None = None, model: str | None = None,
                       trust: str | None = None, tool_names: Sequence[str] | None = None,
                       lens: str | None = None, instructions: Sequence[str] = (), mentions: Sequence[Mention] = (),
                       mentions_in_text: bool = False, resume: ResumePoint | None = None) -> DoneEvent:
        """Run one user line to its `done` event, or with `resume` take up the logged turn it names (`text` is then
        its line, already in the log). Raises SetupError before the turn starts, never after.

        `mentions` (and with `mentions_in_text` the workspace files the line's `@path` words name) are attached to
        the line within this turn's window, read through its jail (agent/mentions.py)."""
        from sunwell.agent.compaction import Summariser
        from sunwell.agent.gate import Gate
        from sunwell.agent.loop import Turn, TurnConfig
        from sunwell.agent.plan import Retool, first_notices, starting_notices
        from sunwell.agent.subagent import Subagents
        from sunwell.agent.turn import TurnLog
        from sunwell.tools.policy.audit import AuditLog

        spec = self.model_spec(model)
        self.provider(spec)  # a missing key or bad endpoint is a setup error, before any session exists
        active_lens = self.lens(lens) if lens else None
        grant = self.grant(Trust[trust or self.settings.trust], tool_names, active_lens)
        session = self.open_session(session, text)
        live = self.live.get(session)
        window = await self.context_window(spec, session)
        stack = self.provider_stack(spec, session, window[0])

        def learned(size: int) -> None:  # a refusal taught the window: this session keeps it
            live.window, live.window_model, stack.windowed.window = size, str(spec), size

        log = TurnLog(self.store, session, sink, resume and resume.turn, secrets=EnvSecrets(
            os.environ, self.settings.env_passthrough), seq=resume.next_seq if resume else 0)
        ctx = self._tool_context(session, log, grant[0], active_lens, stack.calls, spec.model)
        found = await attach_resources(self.mcp, mentions, ctx.jail, text if mentions_in_text and not resume else "")
        line = UserMessage(text=text, attachments=read_mentions(found, ctx.jail, window[0]))
        if resume is None:  # what a resumed turn runs with again
            self.store.append(session, log.turn, 0, "settings", f"{spec}, trust {trust or self.settings.trust}",
                              {"model": str(spec), "trust": trust or self.settings.trust, "lens": lens, "tools": tool_names,
                               "instructions": list(instructions)})
        said: list[NoticeEvent] = []  # by MCP servers starting: shown when the turn starts
        if self.mcp.servers:  # started lazily, once a turn may use their tools: then their tools join the catalogue
            await self.mcp.start(*grant, starting_notices(said, log),
                                 ask=self.approval.ask if self.approval.mode == "ask" else None,
                                 ask_timeout=self.settings.approval_timeout_sec, session=session, turn=log.turn)
        audit = AuditLog(self.data_dir, passthrough=self.settings.env_passthrough)
        hooks = await self.hooks.start_turn(self.approval, log, grant[0].name, audit, said.append)
        retool = Retool(lambda: self.catalogue(active_lens), lambda: self.learned.changes)  # learned from now on
        plan = await self.plan(spec, session, active_lens, grant, instructions, text=line.content_for_model(),
                               window=window)
        own = Summariser(stack.windowed, spec.model, plan.window, self.settings.provider_attempts, live.context)
        config = TurnConfig(
            plan=plan, provider=stack.turn, tool_ctx=ctx, summariser=await self.summariser(session, own),
            gate=Gate(self.approval, dry_run=self.settings.dry_run, limiter=self._limiter(session, active_lens)),
            audit=audit, notices=first_notices(plan, ctx, active_lens, said, self.settings.ignored_workspace_keys),
            max_tool_turns=self.settings.max_tool_turns, on_window_learned=learned, hooks=hooks, retool=retool)
        ctx.subagent = Subagents(config, log, self.settings).run
        turn = Turn(config, log, self.store.messages(session, open_tail=resume is not None))
        return await (turn.resume(resume) if resume else turn.run(line))

    async def aclose(self) -> None:
        """Stop what the engine started (MCP servers, background processes) before the front end's loop ends."""
        await self.mcp.close()
        await self.processes.close()

    def _mcp_surroundings(self, settings: Settings) -> Surroundings:
        return Surroundings(self.workspace, Path(settings.data_dir or "."), tuple(settings.blocked_paths),
                            tuple(settings.env_passthrough), quarantine_dir=Path(settings.data_dir or ".") / "quarantine",
                            network=self.host_rules)

    async def summariser(self, session: str | None, own: Summariser) -> Summariser:
        """Who writes summaries when a session's history is compacted: `compaction_model` when configured, else
        `own` (the session's model)."""
        from sunwell.agent.compaction import Summariser

        if not self.settings.compaction_model:
            return own
        spec = self.model_spec(self.settings.compaction_model)
        window, _ = await self.context_window(spec, session)
        return Summariser(self.provider(spec), spec.model, window, self.settings.provider_attempts)

    def _limiter(self, session: str, lens: Lens | None) -> RateLimiter:
        """The session's usage so far, judged by this turn's limits: the user's, narrowed by the lens'."""
        usage = self.live.get(session).limiter
        return usage.with_limits(stricter(self.settings.rate_limits, lens.tool_policy.rate_limits
                                          if lens and lens.tool_policy else None))

    def _tool_context(self, session: str, log: TurnLog, trust: Trust, lens: Lens | None, provider: Provider,
                      model: str) -> ToolContext:
        from sunwell.tools.network.policy import network_for

        checkpoints, turn, processes = self.checkpoints, log.turn, self.processes.attach(session, log)

        async def complete(system: str, user: str) -> str:  # a skill's nested call: one answer, no tools
            request = ModelRequest(model=model, system=system, messages=[UserMessage(text=user)],
                                   max_tokens=self.settings.max_tokens)
            return "".join([event.text async for event in provider.stream(request) if isinstance(event, TextDelta)])

        return ToolContext(
            jail=self.jail(lens),
            max_output_bytes=self.settings.max_output_bytes, tool_timeout=self.settings.tool_timeout_sec,
            search=SearchSettings(ripgrep_path=self.settings.ripgrep_path),
            commands=CommandSettings(
                sandbox=self.settings.sandbox, network=trust >= Trust.full,
                max_timeout=self.settings.max_command_timeout_sec, env_passthrough=tuple(self.settings.env_passthrough),
                quarantine_dir=self.data_dir / "quarantine", staging_dir=self.data_dir / "staging",
                staging_max_bytes=self.settings.staging.max_bytes, staging_max_files=self.settings.staging.max_files),
            undo=UndoHooks(
                before_write=lambda path, rel: checkpoints.save(session, turn, path, rel),
                after_write=lambda path, rel, data: checkpoints.record_after(session, turn, rel, data),
                before_changes=lambda files: checkpoints.save_changes(session, turn, files)),
            complete=complete, secrets=log.secrets,
            network=network_for(self.settings, self.host_rules, lambda: self.approval.session_hosts(session),
                                self.live.get(session).pages, processes), processes=processes,
            notify=lambda level, code, message: log.emit(NoticeEvent(level=level, code=code, message=message)),
            scratch=Scratch(self.live.get(session).scratch, show_plan=log.emit),
            ask=question_asker(self.questioner, self.settings, session, turn), code_intel=self.code_intel)
