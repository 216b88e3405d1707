"""The model side of an engine: model strings parsed, the SDK adapter of each endpoint and key made once, the provider
stack a turn streams from, what a model can do, and the context window a turn budgets against.

The sidecar makes one with its engine before it answers `sunwell/models`: the provider adapters (and their SDKs) are
imported with models/factory.py when a turn first needs one (the one import inside a function here).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.agent.live import LiveSessions
from sunwell.agent.windows import ServerWindows, calibrated_estimate, configured_window
from sunwell.config import Settings
from sunwell.errors import SetupError
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec, parse_model_string
from sunwell.models.base import Provider
from sunwell.models.capabilities import Capabilities
from sunwell.models.model_facts import ModelFacts

if TYPE_CHECKING:
    from sunwell.models.factory import Adapters, ProviderStack


class Models:
    def __init__(self, settings: Callable[[], Settings], live: LiveSessions) -> None:
        """`settings`: the engine's, as they are when asked; `live`: its sessions' state (what a refusal taught)."""
        self._settings, self._live = settings, live
        self._adapters: Adapters | None = None
        self.windows = ServerWindows()

    def spec(self, model: str | None = None) -> ModelSpec:
        try:
            return parse_model_string(model or self._settings().model or "")
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def provider(self, spec: ModelSpec) -> Provider:
        """The SDK adapter for `spec`, made once per endpoint and key (models/factory.py `Adapters`)."""
        from sunwell.models.factory import Adapters

        self._adapters = self._adapters or Adapters()
        try:
            return self._adapters.get(spec, self._settings().base_url)
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def stack(self, spec: ModelSpec, session: str, window: int) -> ProviderStack:
        """What a turn of `session` streams from (models/factory.py `provider_for`); a server that refuses native
        tools is remembered for the session, and what worked is kept for the next ones (models/model_facts.py)."""
        from sunwell.models.factory import provider_for

        live, caps = self._live.get(session), self.capabilities(spec)
        learner = self.facts().learner(str(spec), self.endpoint(spec))  # kept across sessions
        return learner.watching(provider_for(
            spec, caps, adapter=self.provider(spec), window=window, estimate=calibrated_estimate(live.context),
            attempts=self._settings().provider_attempts, emulating=live.emulating,
            on_fallback=lambda: learner.fell_back(caps.emulation, lambda: setattr(live, "emulating", True))))

    def capabilities(self, spec: ModelSpec) -> Capabilities:
        """The registry's, with what a model taught Sunwell on this endpoint (models/model_facts.py) and the user's
        `models:` overrides over both."""
        overrides = {key: value.model_dump(exclude_none=True) for key, value in self._settings().models.items()}
        return self.facts().capabilities(spec, self.endpoint(spec), overrides)

    def facts(self) -> ModelFacts:
        """What models taught Sunwell, kept in the data dir (`sunwell models MODEL [--forget]`)."""
        return ModelFacts(Path(self._settings().data_dir or "."))

    async def window(self, spec: ModelSpec, session: str | None = None) -> tuple[int, str]:
        """The window a turn of `spec` budgets against, and where it came from (agent/windows.py): what a refusal
        taught `session` ("refusal"), the user's config ("config"), what the server says ("server (…)", asked once
        per endpoint and model), the capability registry ("registry")."""
        live = self._live.get(session) if session else None
        if live is not None and live.window and live.window_model == str(spec):
            return live.window, "refusal"
        if (size := configured_window(self._settings().models, spec)) is not None:
            return size, "config"
        if spec.provider in LOCAL_PROVIDERS and (said := await self.windows.ask(spec, self.endpoint(spec))):
            return said
        return self.capabilities(spec).context_window, "registry"

    def endpoint(self, spec: ModelSpec, *, made_only: bool = False) -> str | None:
        """The endpoint `spec`'s requests go to; with `made_only`, only if its adapter exists (importing an SDK
        to make one takes a second)."""
        if made_only and not (self._adapters and self._adapters.made(spec, self._settings().base_url)):
            return None
        try:
            return getattr(self.provider(spec), "base_url", None)
        except SetupError:  # no endpoint configured: nothing to ask
            return None
