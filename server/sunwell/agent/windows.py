"""Where a model's context window comes from (DESIGN.md "Context"), for `Engine.context_window` and `sunwell models`.

In order: what a refusal for length taught the session (the server said so: it wins), the user's config
(`models: {"openai-compatible:qwen2.5-coder-0.5b": {context_window: 4096}}`), what the server states (only local
kinds of provider: Ollama and OpenAI-compatible servers; asked once per endpoint and model, see
models/providers/window.py), then the capability registry. Each answer names its source: "refusal", "config",
"server (…)", "registry".
"""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from sunwell.agent.context import SessionContext, request_tokens
from sunwell.config import ModelOverride
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec
from sunwell.models.base import ModelRequest
from sunwell.models.providers.window import ServerUnreachable, ask_server, discover_window

CATALOG_TIMEOUT = 1.0
"""`sunwell models` asks a local server only, and waits this long at most per question."""

Said = tuple[int, str] | None
"""What a server said: (window, source), or None when it states none."""


def calibrated_estimate(context: SessionContext) -> Callable[[ModelRequest], int]:
    """A request's input in the server's tokens as the budget counts it (agent/context.py), for `WindowedProvider`."""
    return lambda request: math.ceil(request_tokens(request.system, request.tools, request.messages) * context.ratio)


def configured_window(models: Mapping[str, ModelOverride], spec: ModelSpec) -> int | None:
    """The `context_window` the user's config sets for `spec`: by full model string first, then by bare id."""
    for key in (str(spec), spec.model):
        if (override := models.get(key)) is not None and override.context_window is not None:
            return override.context_window
    return None


class ServerWindows:
    """What each server said about each model's window, asked once per endpoint and model. A server that did not
    answer at all is asked again next time (it may have been starting)."""

    def __init__(self) -> None:
        self._said: dict[tuple[str, str, str], Said] = {}

    def known(self, spec: ModelSpec, endpoint: str | None) -> Said:
        return self._said.get((spec.provider, endpoint or "", spec.model))

    async def ask(self, spec: ModelSpec, endpoint: str | None) -> Said:
        if spec.provider not in LOCAL_PROVIDERS or not endpoint:
            return None
        key = (spec.provider, endpoint, spec.model)
        if key not in self._said:
            try:
                self._said[key] = await discover_window(spec.provider, endpoint, spec.model, api_key=_key(spec))
            except ServerUnreachable:
                return None
        return self._said[key]

    def ask_now(self, spec: ModelSpec, endpoint: str | None) -> Said:
        """`ask` for a front end without an event loop, only of a server on this machine or network, briefly."""
        if spec.provider not in LOCAL_PROVIDERS or not endpoint or not _nearby(endpoint):
            return self.known(spec, endpoint)
        key = (spec.provider, endpoint, spec.model)
        if key not in self._said:
            try:
                self._said[key] = ask_server(spec.provider, endpoint, spec.model, api_key=_key(spec),
                                             timeout=CATALOG_TIMEOUT)
            except ServerUnreachable:
                return None
        return self._said[key]


def _key(spec: ModelSpec) -> str | None:
    """The key the endpoint already gets with every request (never another provider's)."""
    return (os.environ.get("SUNWELL_API_KEY") or None) if spec.provider == "openai-compatible" else None


def _nearby(endpoint: str) -> bool:
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private
