"""Build the adapter for a model spec, with the endpoint and key rules of PROTOCOL.md "Model strings".

A key is only ever sent to its own provider's endpoint: `OPENAI_API_KEY` goes to OpenAI (or to
`OPENAI_BASE_URL`), never to an Ollama or OpenAI-compatible server. Keys and URLs are always passed to the
SDKs explicitly, because the SDKs would otherwise read `OPENAI_API_KEY` / `OPENAI_BASE_URL` (and Anthropic's)
from the environment by themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from sunwell.errors import SunwellError
from sunwell.model_strings import ModelSpec
from sunwell.models.base import Provider
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.models.providers.openai_chat import OpenAIChat

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"
OLLAMA_DEFAULT_PORT = 11434
NO_KEY = "sk-no-key"  # OpenAI-compatible servers without auth still get a syntactically normal bearer token
OLLAMA_KEY = "ollama"  # Ollama ignores the key; the SDK insists on one


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
