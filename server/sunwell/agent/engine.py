"""The engine both front ends drive: settings + workspace in, turns out.

The CLI and the sidecar are thin faces over this class: they pick a session, hand over a line of text and a sink
for events, and render what comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sunwell.agent.events import DoneEvent
from sunwell.agent.loop import Turn, TurnConfig
from sunwell.agent.sessions import SessionStore
from sunwell.agent.turn import Sink, TurnLog
from sunwell.config import Settings
from sunwell.models.base import Provider
from sunwell.models.factory import create_provider
from sunwell.models.spec import ModelSpec, parse_model_string
from sunwell.tools.base import ToolContext, Trust
from sunwell.tools.jail import Jail
from sunwell.tools.registry import CORE_TOOLS, select_tools


class SetupError(Exception):
    """The turn cannot start (no model, unknown provider, missing key, bad workspace): a usage/config problem."""


class Engine:
    def __init__(self, settings: Settings, workspace: Path) -> None:
        if not workspace.is_dir():
            raise SetupError(f"workspace does not exist or is not a directory: {workspace}")
        self.settings = settings
        self.workspace = workspace.resolve()
        self._store: SessionStore | None = None

    @property
    def store(self) -> SessionStore:
        if self._store is None:  # opened on first use, so lens features work even when the data dir is broken
            self._store = SessionStore(Path(self.settings.data_dir) / "sessions.db")
        return self._store

    def model_spec(self, model: str | None = None) -> ModelSpec:
        try:
            return parse_model_string(model or self.settings.model or "")
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def provider(self, spec: ModelSpec) -> Provider:
        try:
            return create_provider(spec, base_url=self.settings.base_url)
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def open_session(self, session: str | None, title: str) -> str:
        if session is None:
            return self.store.create(title=title[:80])
        if not self.store.exists(session):
            raise SetupError(f"unknown session '{session}': see `sunwell sessions list`")
        return session

    async def run_turn(self, text: str, sink: Sink, *, session: str | None = None, model: str | None = None,
                       trust: str | None = None, tool_names: Sequence[str] | None = None) -> DoneEvent:
        """Run one user line to its `done` event. Raises SetupError before the turn starts, never after."""
        spec = self.model_spec(model)
        provider = self.provider(spec)
        level = Trust[trust or self.settings.trust]
        session = self.open_session(session, text)
        history = self.store.messages(session)
        config = TurnConfig(
            provider=provider,
            model=spec.model,
            tools=select_tools(CORE_TOOLS, level, tool_names),
            catalogue=CORE_TOOLS,
            trust=level,
            tool_ctx=ToolContext(jail=Jail(self.workspace, self.settings.blocked_paths),
                                 max_output_bytes=self.settings.max_output_bytes,
                                 ripgrep_path=self.settings.ripgrep_path),
            max_tool_turns=self.settings.max_tool_turns,
            max_tokens=self.settings.max_tokens,
            provider_attempts=self.settings.provider_attempts,
            system=self.settings.system_prompt,
        )
        return await Turn(config, TurnLog(self.store, session, sink), history).run(text)
