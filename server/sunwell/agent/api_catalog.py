"""The learned APIs as the user manages them (`sunwell tools`, VS Code's "Learned APIs"): list, learn, keep, forget,
and their credentials. The engine's own registry (tools/learned/registry.py) and network rules, so what is learned
here is what its turns offer, under the same host rules; front ends go through this, never the registry.

Learning here is the user's own decision (the CLI prints what was learned, no question asked); a turn's `learn_api`
is asked like a write instead (tools/learned/registry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sunwell.config import Settings, user_config_path
from sunwell.config.learned_entries import drop, remember
from sunwell.errors import SetupError
from sunwell.tools.failure import ToolFailure
from sunwell.tools.learned.learning import changes, check_name, learn, read_source
from sunwell.tools.learned.registry import LearnedApis
from sunwell.tools.learned.store import DEFAULT_RATE, LearnedApi
from sunwell.tools.network.cache import PageCache
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.policy import network_for

__all__ = ["ApiCatalog", "LearnFailed", "Learned", "LearnedApi"]


class LearnFailed(Exception):
    """The document could not be learned: what went wrong, and what to do about it."""

    def __init__(self, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message, self.suggestion = message, suggestion


@dataclass(frozen=True)
class Learned:
    api: LearnedApi
    previous: LearnedApi | None
    """What was learned under the name before, None for a new name."""
    changes: dict[str, list[str]] | None
    """What re-learning changes, by tool name (added, removed, changed); None for a new name."""


class ApiCatalog:
    def __init__(self, learned: LearnedApis, settings: Callable[[], Settings],
                 host_rules: Callable[[], HostRules]) -> None:
        """`learned`: the engine's registry; `settings`, `host_rules`: the engine's, as they are when asked."""
        self._learned, self._settings, self._host_rules = learned, settings, host_rules

    def apis(self) -> list[LearnedApi]:
        return self._learned.apis()

    async def learn(self, source: str, name: str, tags: list[str] | None, rate: int | None) -> Learned:
        """Read and check the document at `source` (a URL or a file) as the API `name`, not stored yet (`keep`).
        SetupError for a name it may not take, LearnFailed for a document or host refused, OSError for a file."""
        settings, learned = self._settings(), self._learned
        try:
            check_name(name, set(settings.mcp_servers))
        except ToolFailure as failure:
            raise SetupError(failure.error.message) from None
        network = network_for(settings, self._host_rules(), set, PageCache())
        previous = learned.store.get(name)
        entry = settings.learned_apis.get(name)
        rate = rate or (entry.rate_per_min if entry else previous.rate_per_min if previous else DEFAULT_RATE)
        source = source if "://" in source else str(Path(source).resolve())  # no `..` in what is kept
        try:
            text, origin = await read_source(source, network, lambda path: Path(path).read_text(encoding="utf-8"))
            api = await learn(text, name, source, origin, network, tags, rate)
        except ToolFailure as failure:
            raise LearnFailed(failure.error.message, failure.error.suggestion) from None
        return Learned(api, previous, changes(previous, api) if previous is not None else None)

    def keep(self, api: LearnedApi) -> bool:
        """Store `api` and name it in the user config (`learned_apis`); False when the config's block could not be
        edited safely (the API is learned all the same)."""
        self._learned.save(api)
        return remember(user_config_path(), api.name, api.source, api.rate_per_min)  # says whether it could

    def forget(self, name: str) -> bool:
        """Forget an API, its credentials and its entry in the user config; False for an unknown name."""
        forgotten = self._learned.forget(name)
        if forgotten:
            drop(user_config_path(), name)
        return forgotten

    def has_credential(self, api: str, scheme: str) -> bool:
        return bool(self._learned.credentials.get(api, scheme))

    def set_credential(self, api: str, scheme: str, value: str) -> str:
        """Keep a credential; where it is kept, as the user is told."""
        credentials = self._learned.credentials
        credentials.set(api, scheme, value)
        return credentials.where()
