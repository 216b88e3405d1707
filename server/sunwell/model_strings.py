"""Model strings: `PROVIDER:MODEL` (docs/config.md "Model strings"), or a bare id whose provider is obvious."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sunwell.clipping import clip
from sunwell.errors import SunwellError

PROVIDERS = ("openai", "anthropic", "ollama", "openai-compatible")
LOCAL_PROVIDERS = ("ollama", "openai-compatible")
"""Servers on the user's machine or network: tools are offered natively, with emulation as the fallback."""

# Bare ids whose provider is unambiguous. Anything else must be written with its provider.
_BARE_ID_PREFIXES = {
    "openai": ("gpt-", "o1", "o3", "o4", "chatgpt-", "ft:"),  # `ft:gpt-4o-mini:org::id` is a fine-tune
    "anthropic": ("claude-",),
}

# `foo:bar` names an unknown provider, but `mistral:7b` or `llama3:latest` is an Ollama tag written without
# `ollama:`. A provider name is plain lowercase words; a tag is `latest`, a size, or a quantization.
_PROVIDER_LIKE = re.compile(r"[a-z][a-z_-]*")
_OLLAMA_TAG = re.compile(r"latest|\d.*|q\d.*|fp\d+.*|bf16.*", re.IGNORECASE)


class ModelSpecError(SunwellError, ValueError):
    """A model string that cannot be resolved; the message is one line the user can act on."""


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_model_string(s: str) -> ModelSpec:
    text = s.strip()
    if not text:
        raise ModelSpecError("no model configured: pass --model or set SUNWELL_MODEL")

    prefix, colon, rest = text.partition(":")
    if colon and prefix.lower() in PROVIDERS:
        if not rest.strip():
            raise ModelSpecError(f"no model id after '{prefix}:': write it as {prefix.lower()}:MODEL")
        return ModelSpec(prefix.lower(), rest.strip())

    lowered = text.lower()
    for provider, prefixes in _BARE_ID_PREFIXES.items():
        if lowered.startswith(prefixes):
            return ModelSpec(provider, text)

    if colon and _PROVIDER_LIKE.fullmatch(prefix) and not _OLLAMA_TAG.fullmatch(rest):
        raise ModelSpecError(f"unknown provider '{clip(prefix)}': use one of {', '.join(PROVIDERS)}")
    raise ModelSpecError(
        f"cannot tell the provider of model '{clip(text)}': write it as PROVIDER:MODEL ({', '.join(PROVIDERS)})"
    )
