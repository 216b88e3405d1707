"""Build the adapter for a model spec, with the endpoint and key rules of docs/config.md "Model strings", and the stack
of providers a turn streams from around it (`provider_for`).

A key is only ever sent to its own provider's endpoint: `OPENAI_API_KEY` goes to OpenAI (or to
`OPENAI_BASE_URL`), never to an Ollama or OpenAI-compatible server. Keys and URLs are always passed to the
SDKs explicitly, because the SDKs would otherwise read `OPENAI_API_KEY` / `OPENAI_BASE_URL` (and Anthropic's)
from the environment by themselves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from sunwell.errors import SunwellError
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec
from sunwell.models.base import ModelRequest, Provider
from sunwell.models.capabilities import Capabilities
from sunwell.models.emulation.provider import EmulatedProvider, RecoveringProvider
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.models.providers.fallback import ToolFallbackProvider
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.models.providers.retry import RetryingProvider
from sunwell.models.providers.window import WindowedProvider

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"
OLLAMA_DEFAULT_PORT = 11434
NO_KEY = "sk-no-key"  # OpenAI-compatible servers without auth still get a syntactically normal bearer token
OLLAMA_KEY = "ollama"  # Ollama ignores the key; the SDK insists on one
PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
                "SUNWELL_BASE_URL", "SUNWELL_API_KEY")
"""What `create_provider` reads: an adapter made for other values is not the one to use now."""
COMPACT_PROMPT_WINDOW = 8192
"""At or below this window, emulated tools are described in the compact form, whatever the model's size."""


class ProviderConfigError(SunwellError, ValueError):
    """A provider that cannot be set up from the configuration; the message is one actionable line."""


def create_provider(spec: ModelSpec, *, base_url: str | None = None,
                    env: Mapping[str, str] = os.environ) -> Provider:
    """The adapter for `spec`. `base_url` (`--base-url`) is the endpoint of `openai-compatible` and overrides
    `OLLAMA_HOST` for `ollama`; it is ignored for `openai` and `anthropic`, whose keys must only travel to the
    endpoints configured for them (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`)."""

    def var(name: str) -> str | None:
        return (env.get(name) or "").strip() or None

    match spec.provider:
        case "openai":
            key = var("OPENAI_API_KEY")
            if key is None:
                raise ProviderConfigError("OPENAI_API_KEY is not set: export it or use another provider")
            return OpenAIChat(name="openai", base_url=var("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL,
                              api_key=key, key_env="OPENAI_API_KEY")
        case "anthropic":
            key = var("ANTHROPIC_API_KEY")
            if key is None:
                raise ProviderConfigError("ANTHROPIC_API_KEY is not set: export it or use another provider")
            return AnthropicMessages(base_url=var("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_URL, api_key=key)
        case "ollama":
            host = base_url or var("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST
            return OpenAIChat(name="ollama", base_url=ollama_base_url(host), api_key=OLLAMA_KEY,
                              key_env="OLLAMA_HOST")
        case "openai-compatible":
            url = base_url or var("SUNWELL_BASE_URL")
            if not url:
                raise ProviderConfigError(
                    "openai-compatible needs an endpoint: pass --base-url URL or set SUNWELL_BASE_URL")
            return OpenAIChat(name="openai-compatible", base_url=_with_scheme(url),
                              api_key=var("SUNWELL_API_KEY") or NO_KEY, key_env="SUNWELL_API_KEY")
        case other:
            raise ProviderConfigError(f"unknown provider '{other}'")


class Adapters:
    """The SDK adapters, each made once per provider, endpoint and key: an SDK client holds a connection pool and an
    SSL context (megabytes each), so one per turn made a long-lived sidecar grow with every turn."""

    def __init__(self) -> None:
        self._made: dict[tuple[str | None, ...], Provider] = {}

    def get(self, spec: ModelSpec, base_url: str | None) -> Provider:
        """Raises ProviderConfigError (a missing key, no endpoint)."""
        key = self._key(spec, base_url)
        if key not in self._made:
            self._made[key] = create_provider(spec, base_url=base_url)
        return self._made[key]

    def made(self, spec: ModelSpec, base_url: str | None) -> bool:
        return self._key(spec, base_url) in self._made

    @staticmethod
    def _key(spec: ModelSpec, base_url: str | None) -> tuple[str | None, ...]:
        return (spec.provider, base_url, *(os.environ.get(name) for name in PROVIDER_ENV))


@dataclass(frozen=True)
class ProviderStack:
    """One model's providers for one turn, each wrapping the next."""

    turn: Provider
    """What the turn's requests go through: retries before anything streamed, then how the model calls tools
    (natively, recovered from its text, emulated, or native falling back to emulated), then `windowed`."""
    calls: Provider
    """`turn` without the retries: a skill's nested request, which never retried."""
    windowed: WindowedProvider
    """The adapter, with what a stream cut before its first token means for the window: summaries go through it
    (compaction retries on its own), and a refusal for length corrects its window."""


def provider_for(spec: ModelSpec, capabilities: Capabilities, *, adapter: Provider, window: int,
                 estimate: Callable[[ModelRequest], int], attempts: int = 3, emulating: bool = False,
                 on_fallback: Callable[[], None] = lambda: None) -> ProviderStack:
    """The stack around `adapter` (from `Adapters`) for `spec`, sent requests meant to fit `window` tokens
    (`estimate` counts one as the budget does). `emulating`: the session's server already refused native tools;
    `on_fallback` is told when one does now (docs/config.md "Model strings": remembered for the session)."""
    windowed = WindowedProvider(adapter, window, estimate)
    emulated = EmulatedProvider(windowed, style=capabilities.emulation,
                                compact=capabilities.small or window <= COMPACT_PROMPT_WINDOW,
                                parallel=capabilities.parallel_calls, constrained=capabilities.constrained)
    calls: Provider = emulated
    if capabilities.native_tools and not emulating:
        calls = RecoveringProvider(windowed) if capabilities.recover_text_calls else windowed
        if spec.provider in LOCAL_PROVIDERS:  # hosted APIs take tools; a local server may not, and says so
            calls = ToolFallbackProvider(calls, emulated, on_fallback=on_fallback)
    return ProviderStack(turn=RetryingProvider(calls, attempts=attempts), calls=calls, windowed=windowed)


def ollama_base_url(host: str) -> str:
    """`OLLAMA_HOST` as Ollama reads it (`0.0.0.0`, `host:port`, `http://host`) -> its `/v1` base URL."""
    host = host.strip().rstrip("/")
    if "://" not in host:
        try:
            port = urlsplit(f"http://{host}").port
        except ValueError:
            raise ProviderConfigError(f"OLLAMA_HOST {host!r} is not a host[:port]") from None
        host = f"http://{host}" if port is not None else f"http://{host}:{OLLAMA_DEFAULT_PORT}"
    return host if host.endswith("/v1") else f"{host}/v1"


def _with_scheme(url: str) -> str:
    url = url.strip()
    return url if "://" in url else f"http://{url}"
