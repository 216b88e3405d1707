"""The engine under every session: settings, a workspace and the front end's client (wire/client.py) in, turns out.

Front ends hand a line to a `Session` (agent/session.py), which answers `::commands` and runs turns here
(`run_turn`, put together in agent/turn_start.py: the turn's plan, agent/plan.py, the provider stack,
agent/model_access.py, then the loop, agent/loop.py); the engine holds what they share: the models, lenses, MCP
servers, learned APIs, the session store, and the one client every request to the user goes to. Front ends use
`servers` and `apis` for the MCP servers and learned APIs (agent/mcp_servers.py, agent/api_catalog.py). Per-session
state (allow-for-session rules, rate limits, the emulation fallback, the chat state) lives in `live`, kept across
turns by a long-lived front end and released when a session is cleared.

The sidecar builds an Engine before it answers `sunwell/models` (bench_sidecar.py: ready <= 1.5x a bare pygls
start), so this module imports only what that needs; the rest is imported where first needed: a turn's machinery
(the loop, jsonschema, the gate, the plan, the tool registry, the web's policy, the session store), the lenses
(YAML, jsonschema), the provider adapters, the learned APIs (the HTTP client, YAML), bashlex (command allowlist).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.agent.context import SessionContext
from sunwell.agent.live import LiveSessions
from sunwell.agent.mentions import Mention
from sunwell.agent.model_access import Models
from sunwell.clipping import clip
from sunwell.config import Settings, user_config_path
from sunwell.errors import SetupError
from sunwell.hooks import Hooks
from sunwell.model_strings import ModelSpec
from sunwell.tools.base import Tool, Trust
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.policy.approval import ApprovalPolicy
from sunwell.tools.policy.ratelimit import RateLimiter
from sunwell.tools.workspace.checkpoints import Checkpoints, UndoResult
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.client import HEADLESS, Client
from sunwell.wire.events import DoneEvent

if TYPE_CHECKING:
    from sunwell.agent.api_catalog import ApiCatalog
    from sunwell.agent.attached_images import ImageInput
    from sunwell.agent.background import BackgroundProcesses
    from sunwell.agent.mcp_servers import McpServers
    from sunwell.agent.plan import Grant, TurnPlan
    from sunwell.agent.resume import ResumePoint
    from sunwell.agent.sessions import SessionStore
    from sunwell.agent.turn import Sink
    from sunwell.lens.registry import LensRegistry
    from sunwell.lens.schema import Lens
    from sunwell.models.factory import Adapters
    from sunwell.models.model_facts import ModelFacts
    from sunwell.tools.learned.registry import LearnedApis
    from sunwell.tools.processes import ProcessTable


class Engine:
    def __init__(self, settings: Settings, workspace: Path, *, client: Client = HEADLESS) -> None:
        """`client`: the person on the other side (wire/client.py), whom every request to the user goes to."""
        if not workspace.is_dir():
            raise SetupError(f"workspace does not exist or is not a directory: {workspace}")
        self.settings, self.workspace, self.client = settings, workspace.resolve(), client
        self._store: SessionStore | None = None  # these three are made on first use
        self._lenses: LensRegistry | None = None
        self._adapters: Adapters | None = None
        self._learned: LearnedApis | None = None
        self.approval = ApprovalPolicy(mode=settings.approval or "deny", client=client,
                                       timeout=settings.approval_timeout_sec)
        self.live = LiveSessions(lambda: RateLimiter(self.settings.rate_limits), on_release=lambda session: (
            self.approval.forget([session]), self.processes.end_session(session)))
        self.models = Models(lambda: self.settings, self.live)
        self.host_rules = HostRules.configured(settings.network)
        self.mcp = McpHub(self._mcp_surroundings(settings), client)
        self.hooks = Hooks(settings, self.workspace)
        self.command_env: dict[str, str] = {}
        """Variables every command of this engine gets (a worktree session's ports: `PORT`)."""
        self.instructions: list[str] = []
        """Words on where this engine works, in every system prompt (a worktree session's branch and ports)."""
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
    def background(self) -> BackgroundProcesses:
        """The background processes as a front end manages them (agent/background.py)."""
        from sunwell.agent.background import BackgroundProcesses

        return BackgroundProcesses(self.processes)

    @property
    def apis(self) -> ApiCatalog:
        """The learned APIs as a front end manages them (agent/api_catalog.py)."""
        from sunwell.agent.api_catalog import ApiCatalog

        return ApiCatalog(self.learned, lambda: self.settings, lambda: self.host_rules)

    @property
    def servers(self) -> McpServers:
        """The MCP servers as a front end manages them (agent/mcp_servers.py)."""
        from sunwell.agent.mcp_servers import McpServers

        return McpServers(self.mcp)

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
            from sunwell.agent.tool_names import known_tools
            from sunwell.lens.registry import LensRegistry

            self._lenses = LensRegistry(self.workspace, user_config_path().parent / "lenses",
                                        known_tools=known_tools(self.mcp.servers, self.learned.tool_patterns()))
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
        policy = lens.tool_policy if lens else None
        return Jail(self.workspace, [*self.settings.blocked_paths, *(policy.blocked_paths if policy else [])])

    def session_workspace(self, session: str) -> Path | None:
        row = next((r for r in self.store.events(session) if r.kind == "workspace"), None)
        return Path(row.data["workspace"]) if row else None

    def model_facts(self) -> ModelFacts:
        """What models taught Sunwell, across sessions (`sunwell models MODEL [--forget]`)."""
        return self.models.facts()

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
        core = [tool for tool in CORE_TOOLS if self.client.answers("codeIntel") or tool not in CODE_INTEL_TOOLS]
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

        window = window or await self.models.window(spec, session)
        context = self.live.get(session).context if session else SessionContext()
        return await plan_turn(self.settings, spec, self.models.capabilities(spec), window, self.catalogue(lens), grant,
                               jail=self.jail(lens), lens=lens, instructions=[*self.instructions, *instructions], context=context,
                               text=text)

    async def run_turn(self, text: str, sink: Sink, *, session: str | None = None, model: str | None = None,
                       trust: str | None = None, tool_names: Sequence[str] | None = None,
                       lens: str | None = None, instructions: Sequence[str] = (), mentions: Sequence[Mention] = (),
                       mentions_in_text: bool = False, resume: ResumePoint | None = None,
                       images: Sequence[ImageInput] = ()) -> DoneEvent:
        """Run one user line to its `done` event, or with `resume` take up the logged turn it names (`text` is then
        its line, already in the log). Raises SetupError before the turn starts, never after.

        `mentions` (and with `mentions_in_text` the workspace files the line's `@path` words name) are attached to
        the line within this turn's window, read through its jail (agent/mentions.py); `images` too, and the
        mentioned files that are images, re-encoded (agent/attached_images.py)."""
        from sunwell.agent.turn_start import run_turn

        return await run_turn(self, text, sink, session=session, model=model, trust=trust, tool_names=tool_names,
                              lens=lens, instructions=instructions, mentions=mentions,
                              mentions_in_text=mentions_in_text, resume=resume, images=images)

    async def aclose(self) -> None:
        """Stop what the engine started (MCP servers, background processes) before the front end's loop ends."""
        await self.mcp.close()
        await self.processes.close()

    def _mcp_surroundings(self, settings: Settings) -> Surroundings:
        return Surroundings(self.workspace, Path(settings.data_dir or "."), tuple(settings.blocked_paths),
                            tuple(settings.env_passthrough), quarantine_dir=Path(settings.data_dir or ".") / "quarantine",
                            network=self.host_rules)
