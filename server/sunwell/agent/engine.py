"""The engine under every session: settings + workspace in, turns out.

Front ends hand a line to a `Session` (agent/session.py), which answers `::commands` and runs turns here
(`run_turn`); the engine holds what they share: the providers, lenses, MCP servers, the session store. Per-session
state (allow-for-session rules, rate limits, the emulation fallback, the chat state) lives here, in `live`
(agent/live.py), so a long-lived front end (the sidecar, `sunwell chat`) keeps it across turns and releases it when
a session is cleared.

What only a turn needs (the loop, the gate, lenses, tool fitting, emulation) is imported when a turn or a tool list
is first asked for: the sidecar builds an Engine before it can answer its first request, and those modules (with
jsonschema and the lens schema) would make up half of that wait.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.agent.events import DoneEvent, NoticeEvent
from sunwell.agent.live import LiveSessions
from sunwell.agent.mentions import Mention, mentioned_paths, read_mentions
from sunwell.agent.sessions import SessionStore
from sunwell.agent.turn import Sink, TurnLog
from sunwell.agent.windows import ServerWindows, calibrated_estimate, configured_window
from sunwell.config import Settings, user_config_path
from sunwell.errors import SetupError
from sunwell.messages import UserMessage
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec, parse_model_string
from sunwell.models.base import ModelRequest, Provider, TextDelta
from sunwell.models.capabilities import Capabilities, capabilities_for
from sunwell.models.providers.window import WindowedProvider
from sunwell.tools.base import CommandSettings, SearchSettings, ToolContext, Trust, UndoHooks
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.policy.approval import ApprovalPolicy, Asker
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.policy.ratelimit import RateLimiter, stricter
from sunwell.tools.workspace.checkpoints import Checkpoints, UndoResult
from sunwell.tools.workspace.jail import Jail

if TYPE_CHECKING:
    from sunwell.agent.compaction import Summariser
    from sunwell.lens.registry import LensRegistry
    from sunwell.lens.schema import Lens

PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
                "SUNWELL_BASE_URL", "SUNWELL_API_KEY")  # what create_provider reads


class Engine:
    def __init__(self, settings: Settings, workspace: Path, *, asker: Asker | None = None) -> None:
        if not workspace.is_dir():
            raise SetupError(f"workspace does not exist or is not a directory: {workspace}")
        self.settings = settings
        self.workspace = workspace.resolve()
        self.asker = asker
        self._store: SessionStore | None = None
        self._lenses: LensRegistry | None = None
        self._providers: dict[tuple[str | None, ...], Provider] = {}
        self.windows = ServerWindows()
        self.approval = ApprovalPolicy(mode=settings.approval or "deny", ask=asker,
                                       timeout=settings.approval_timeout_sec)
        self.live = LiveSessions(lambda: RateLimiter(self.settings.rate_limits),
                                 on_release=lambda session: self.approval.forget([session]))
        self.mcp = McpHub(self._mcp_surroundings(settings))
        self.reconfigure(settings)

    def reconfigure(self, settings: Settings) -> None:
        """New settings for the next turn; allow-for-session rules and rate-limit windows are kept."""
        self.settings = settings
        self.mcp.configure(settings.mcp_servers, settings.proposed_mcp_servers, self._mcp_surroundings(settings))
        self.approval.mode = settings.approval or "deny"
        self.approval.timeout = settings.approval_timeout_sec
        self.approval.is_allowlisted = lambda command: False
        if settings.command_allowlist:  # bashlex builds its parser tables on import: only when needed
            from sunwell.tools.policy.allowlist import CommandAllowlist

            try:
                self.approval.is_allowlisted = CommandAllowlist(settings.command_allowlist).allows
            except ValueError as exc:
                raise SetupError(f"invalid setting 'command_allowlist': {exc}") from None

    @property
    def data_dir(self) -> Path:
        return Path(self.settings.data_dir)

    @property
    def store(self) -> SessionStore:
        if self._store is None:  # opened on first use, so lens features work even when the data dir is broken
            self._store = SessionStore(self.data_dir / "sessions.db")
        return self._store

    @property
    def lenses(self) -> LensRegistry:
        if self._lenses is None:
            from sunwell.lens.registry import LensRegistry
            from sunwell.tools.registry import CORE_TOOLS

            self._lenses = LensRegistry(self.workspace, user_config_path().parent / "lenses",
                                        known_tools=[*(tool.name for tool in CORE_TOOLS), *self.mcp.tool_patterns()])
        return self._lenses

    def lens(self, name_or_path: str) -> Lens:
        """An active lens by name or path; a lens with errors, or none at all, is a setup error."""
        path = self.lenses.find(name_or_path) or (self.workspace / name_or_path).resolve()
        result = self.lenses.reload(path) if path.is_file() else None
        if result is None:
            known = ", ".join(lens.name for lens in self.lenses.active().values()) or "none found"
            raise SetupError(f"no lens '{name_or_path}' (lenses: {known})")
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
        """The SDK adapter for `spec`, made once per endpoint and key: an SDK client holds a connection pool and
        an SSL context (megabytes each), so one per turn made a long-lived sidecar grow with every turn. The
        adapters, and all they import, are imported here: the sidecar's start does not need them."""
        from sunwell.models.factory import create_provider

        key = self._provider_key(spec)
        if key not in self._providers:
            try:
                self._providers[key] = create_provider(spec, base_url=self.settings.base_url)
            except ValueError as exc:
                raise SetupError(str(exc)) from None
        return self._providers[key]

    def _provider_key(self, spec: ModelSpec) -> tuple[str | None, ...]:
        return (spec.provider, self.settings.base_url, *(os.environ.get(name) for name in PROVIDER_ENV))

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
        if made_only and self._provider_key(spec) not in self._providers:
            return None
        try:
            return getattr(self.provider(spec), "base_url", None)
        except SetupError:  # no endpoint configured: nothing to ask
            return None

    def tool_calling_provider(self, spec: ModelSpec, session: str, inner: Provider | None = None,
                              window: int | None = None) -> Provider:
        """The provider wrapped for how this model calls tools: native, recovered from text, or emulated."""
        from sunwell.models.emulation.provider import EmulatedProvider, RecoveringProvider
        from sunwell.models.providers.fallback import ToolFallbackProvider

        inner = inner or self.provider(spec)
        caps = self.capabilities(spec)
        window = window or caps.context_window
        emulated = EmulatedProvider(inner, style=caps.emulation, compact=caps.small or window <= 8192,
                                    parallel=caps.parallel_calls, constrained=caps.constrained)
        live = self.live.get(session)
        if not caps.native_tools or live.emulating:
            return emulated
        native = RecoveringProvider(inner) if caps.recover_text_calls else inner
        if spec.provider in LOCAL_PROVIDERS:
            return ToolFallbackProvider(native, emulated, on_fallback=lambda: setattr(live, "emulating", True))
        return native

    def open_session(self, session: str | None, title: str) -> str:
        if session is None:
            session = self.store.create(title=title[:80])
            self.store.append(session, "", 0, "workspace", str(self.workspace), {"workspace": str(self.workspace)})
            return session
        if not self.store.exists(session):
            raise SetupError(f"unknown session '{session}': see `sunwell sessions list`")
        return session

    def release(self, session: str) -> None:
        """Forget the live state of `session` (rate limits, allow-for-session rules, chat state): `::clear`."""
        self.live.release(session)

    def jail(self, lens: Lens | None = None) -> Jail:
        """The workspace jail: the built-in blocked patterns, the user's, and the active lens' (which only add)."""
        policy = lens.tool_policy if lens else None
        return Jail(self.workspace, [*self.settings.blocked_paths, *(policy.blocked_paths if policy else [])])

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
            raise SetupError(f"unknown session '{session}': see `sunwell sessions list`")
        elif (home := self.session_workspace(session)) not in (None, self.workspace):
            raise SetupError(f"session {session} belongs to the workspace {home}: run undo there")
        return checkpoints.undo(session, self.workspace, self.jail(), force=force)

    def tools(self, trust: Trust, names: Sequence[str] | None = None, lens: Lens | None = None):
        """(offered tools, catalogue, effective trust): a lens can only narrow what the user granted."""
        from sunwell.agent.skills import skill_tools
        from sunwell.lens.registry import narrow
        from sunwell.tools.registry import CORE_TOOLS, select_tools

        catalogue = [*CORE_TOOLS, *(skill_tools(lens, {t.name for t in CORE_TOOLS}) if lens else []), *self.mcp.tools()]
        trust, allowed = narrow(lens.tool_policy if lens else None, trust, names)
        return select_tools(catalogue, trust, None if allowed is None else sorted(allowed)), catalogue, trust

    async def run_turn(self, text: str, sink: Sink, *, session: str | None = None, model: str | None = None,
                       trust: str | None = None, tool_names: Sequence[str] | None = None,
                       lens: str | None = None, instructions: Sequence[str] = (), mentions: Sequence[Mention] = (),
                       mentions_in_text: bool = False) -> DoneEvent:
        """Run one user line to its `done` event. Raises SetupError before the turn starts, never after.

        `mentions` (and with `mentions_in_text` the workspace files the line's `@path` words name) are attached to
        the line within this turn's window, read through its jail (agent/mentions.py)."""
        from sunwell.agent.compaction import Summariser
        from sunwell.agent.gate import Gate
        from sunwell.agent.loop import Turn, TurnConfig
        from sunwell.lens.registry import narrow
        from sunwell.models.fitting import fit_tools
        from sunwell.tools.handlers.shell import sandbox_warning
        from sunwell.tools.policy.audit import AuditLog

        spec = self.model_spec(model)
        inner = self.provider(spec)  # a missing key or bad endpoint is a setup error, before any session exists
        active_lens = self.lens(lens) if lens else None
        tools, catalogue, level = self.tools(Trust[trust or self.settings.trust], tool_names, active_lens)
        session = self.open_session(session, text)
        live = self.live.get(session)
        window, window_source = await self.context_window(spec, session)
        windowed = WindowedProvider(inner, window, calibrated_estimate(live.context))
        provider = self.tool_calling_provider(spec, session, windowed, window)

        def learned(size: int) -> None:  # a refusal taught the window: this session keeps it
            live.window, live.window_model, windowed.window = size, str(spec), size

        history = self.store.messages(session)
        secrets = EnvSecrets(os.environ, self.settings.env_passthrough)
        log = TurnLog(self.store, session, sink, secrets=secrets)
        ctx = self._tool_context(session, log.turn, level, active_lens, provider, spec.model)
        found = [*mentions, *(mentioned_paths(text, ctx.jail) if mentions_in_text else [])]
        line = UserMessage(text=text, attachments=read_mentions(found, ctx.jail, window))
        ctx.secrets = secrets
        ctx.notify = lambda level, code, message: log.emit(NoticeEvent(level=level, code=code, message=message))
        warning = sandbox_warning(ctx) if any(t.risk == "shell" for t in tools) else None
        notices = [NoticeEvent(level="warning", code="sandbox_off", message=warning)] if warning else []
        if self.mcp.servers:  # started lazily, once a turn may use their tools: then their tools join the catalogue
            await self.mcp.start(level, narrow(active_lens.tool_policy if active_lens else None, level, tool_names)[1],
                                 lambda lv, code, text: notices.append(NoticeEvent(level=lv, code=code, message=text)),
                                 ask=self.approval.ask if self.approval.mode == "ask" else None,
                                 ask_timeout=self.settings.approval_timeout_sec, session=session, turn=log.turn)
            tools, catalogue, level = self.tools(Trust[trust or self.settings.trust], tool_names, active_lens)
        if active_lens and active_lens.tool_policy and active_lens.tool_policy.command_allowlist:
            notices.append(NoticeEvent(level="warning", code="workspace_config_ignored",
                                       message=f"the lens {active_lens.name} may only narrow what you allowed; "
                                               "ignored: tool_policy.command_allowlist"))
        if ignored := self.settings.ignored_workspace_keys:
            notices.append(NoticeEvent(level="warning", code="workspace_config_ignored",
                                       message=f"the workspace config (.sunwell/config.yaml) may only narrow what you "
                                               f"allowed; ignored: {', '.join(ignored)}. Set these in your user "
                                               f"config ({user_config_path()}), on the command line or in VS Code."))
        caps = self.capabilities(spec)
        specs, fitted = fit_tools([t.spec for t in tools], context_window=window, user_text=line.content_for_model())
        if fitted:
            notices.append(NoticeEvent(level="info", code="tools_fitted",
                                       message=f"tool definitions fitted to the {window}-token "
                                               f"context window: {'; '.join(fitted)}"))
        config = TurnConfig(
            provider=provider,
            model=spec.model,
            tools=tools,
            specs=specs,
            catalogue=catalogue,
            trust=level,
            tool_ctx=ctx,
            max_tool_turns=self.settings.max_tool_turns,
            max_tokens=self.settings.max_tokens,
            provider_attempts=self.settings.provider_attempts,
            system=self.settings.system_prompt,
            extra_instructions=[*([active_lens.instructions] if active_lens and active_lens.instructions else []),
                                *instructions],
            gate=Gate(self.approval, dry_run=self.settings.dry_run, limiter=self._limiter(session, active_lens)),
            audit=AuditLog(self.data_dir, passthrough=self.settings.env_passthrough),
            turn_notices=notices,
            small_model=caps.small,
            temperature=caps.temperature,
            context_window=window,
            window_source=window_source,
            on_window_learned=learned,
            compact_at=self.settings.compact_at,
            compaction=await self.summariser(session, Summariser(windowed, spec.model, window,
                                                                 self.settings.provider_attempts, live.context)),
            context=live.context,
        )
        return await Turn(config, log, history).run(line)

    async def aclose(self) -> None:
        """Stop what the engine started (MCP servers); front ends call it before their event loop ends."""
        await self.mcp.close()

    def _mcp_surroundings(self, settings: Settings) -> Surroundings:
        return Surroundings(self.workspace, Path(settings.data_dir or "."), tuple(settings.blocked_paths),
                            tuple(settings.env_passthrough), quarantine_dir=Path(settings.data_dir or ".") / "quarantine")

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

    def _tool_context(self, session: str, turn: str, trust: Trust, lens: Lens | None, provider: Provider,
                      model: str) -> ToolContext:
        checkpoints = self.checkpoints
        async def complete(system: str, user: str) -> str:
            return await complete_text(provider, model, system, user, self.settings.max_tokens)

        return ToolContext(
            jail=self.jail(lens),
            max_output_bytes=self.settings.max_output_bytes,
            search=SearchSettings(ripgrep_path=self.settings.ripgrep_path),
            commands=CommandSettings(
                sandbox=self.settings.sandbox,
                network=trust >= Trust.full,
                max_timeout=self.settings.max_command_timeout_sec,
                env_passthrough=tuple(self.settings.env_passthrough),
                quarantine_dir=self.data_dir / "quarantine",
                staging_dir=self.data_dir / "staging",
                staging_max_bytes=self.settings.staging.max_bytes,
                staging_max_files=self.settings.staging.max_files,
            ),
            undo=UndoHooks(
                before_write=lambda path, rel: checkpoints.save(session, turn, path, rel),
                after_write=lambda path, rel, data: checkpoints.record_after(session, turn, rel, data),
                before_changes=lambda files: checkpoints.save_changes(session, turn, files),
            ),
            complete=complete,
        )


async def complete_text(provider: Provider, model: str, system: str, user: str, max_tokens: int) -> str:
    """One model answer with no tools (a skill's nested call)."""
    request = ModelRequest(model=model, system=system, messages=[UserMessage(text=user)], max_tokens=max_tokens)
    parts = [event.text async for event in provider.stream(request) if isinstance(event, TextDelta)]
    return "".join(parts)
