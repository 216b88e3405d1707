"""The model's real context window: what its server says, and what a refusal for length states.

The registry knows a model's nominal window (Qwen2.5-Coder: 32,768 tokens), but the server decides: llama.cpp runs
with `--ctx-size`, Ollama with `num_ctx`, LM Studio with the length the model was loaded with. So the window is asked
of the server once per endpoint and model (`discover_window`), and a provider's length refusal is read for the limit
it states (`stated_limit`). llama-cpp-python states nothing anywhere: the user config (or `scripts/start.sh`) says it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.request
from typing import Any

log = logging.getLogger(__name__)
DISCOVERY_TIMEOUT = 3.0
OLLAMA_DEFAULT_NUM_CTX = 4096

# The limit each server states when it refuses a request for length (the number captured is the window).
_STATED = [
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.IGNORECASE),  # OpenAI, vLLM, LM Studio
    re.compile(r"prompt is too long: [\d,]+ tokens > (\d[\d,]*) maximum", re.IGNORECASE),  # Anthropic
    re.compile(r"exceeds? (?:the )?context window of (\d[\d,]*)", re.IGNORECASE),  # llama-cpp-python
    re.compile(r"context (?:window|length|size)(?: of| is|:)? (\d[\d,]*)(?: tokens)?", re.IGNORECASE),  # Ollama, others
    re.compile(r"\"n_ctx\"\s*:\s*(\d+)"),  # llama.cpp server's error body (exceed_context_size_error)
]
# A refusal for length that states no number (llama.cpp: "the request exceeds the available context size").
_LENGTH_REFUSAL = re.compile(
    r"context_length_exceeded|exceed_context_size|prompt is too long|exceeds? (?:the )?(?:available )?context"
    r"|context (?:window|length) exceeded|too many tokens|input (?:length|is too long)", re.IGNORECASE)


def is_length_refusal(message: str) -> bool:
    """Whether a provider's error message is a refusal for length (with or without a stated limit)."""
    return bool(_LENGTH_REFUSAL.search(message)) or stated_limit(message) is not None


def stated_limit(message: str) -> int | None:
    """The window a length refusal states, or None when it states none (or is not one)."""
    for pattern in _STATED:
        if match := pattern.search(message):
            value = int(match.group(1).replace(",", ""))
            if value >= 256:  # "context of 1" is not a window
                return value
    return None


async def discover_window(provider: str, base_url: str, model: str) -> tuple[int, str] | None:
    """(window, where it came from) as the server at `base_url` states it, or None when it states none or cannot
    be asked. Never raises: a server that does not answer is simply one that says nothing."""
    return await asyncio.to_thread(_discover, provider, base_url.rstrip("/").removesuffix("/v1"), model)


def _discover(provider: str, root: str, model: str) -> tuple[int, str] | None:
    if provider == "ollama":
        return _ollama(_json(f"{root}/api/show", {"model": model}))
    for url, read in ((f"{root}/props", _llama_cpp), (f"{root}/api/v0/models", _lm_studio),
                      (f"{root}/v1/models", _vllm)):  # fmt: skip
        if found := read(_json(url), model):
            return found
    return None


def _json(url: str, body: dict[str, Any] | None = None) -> Any:
    """The JSON a GET (or, with a body, a POST) answers with; None for anything else."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=DISCOVERY_TIMEOUT) as response:
            return json.loads(response.read(1 << 20))
    except (OSError, ValueError) as exc:  # refused, 404, timeout, not JSON
        log.debug("window discovery: %s: %s", url, exc)
        return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_cpp(body: Any, model: str) -> tuple[int, str] | None:
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    n_ctx = n_ctx or (_positive(body.get("n_ctx")) if isinstance(body, dict) else None)
    return (n_ctx, "server (llama.cpp /props n_ctx)") if n_ctx else None


def _entry(body: Any, model: str) -> dict[str, Any] | None:
    data = body.get("data") if isinstance(body, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    return next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)


def _lm_studio(body: Any, model: str) -> tuple[int, str] | None:
    entry = _entry(body, model) or {}
    size = _positive(entry.get("loaded_context_length")) or _positive(entry.get("max_context_length"))
    return (size, "server (LM Studio /api/v0/models)") if size else None


def _vllm(body: Any, model: str) -> tuple[int, str] | None:
    size = _positive((_entry(body, model) or {}).get("max_model_len"))
    return (size, "server (vLLM /v1/models max_model_len)") if size else None


def _ollama(body: Any) -> tuple[int, str] | None:
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters") if isinstance(body.get("parameters"), str) else ""
    if match := re.search(r"^num_ctx\s+(\d+)", parameters, re.MULTILINE):
        return int(match.group(1)), "server (Ollama num_ctx)"
    # Without num_ctx Ollama runs the model with its default window, not the model's trained length, and cuts a
    # longer prompt silently: assume that default unless the model is smaller still.
    info = body.get("model_info") if isinstance(body.get("model_info"), dict) else {}
    length = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    return min(length or OLLAMA_DEFAULT_NUM_CTX, OLLAMA_DEFAULT_NUM_CTX), "server (Ollama default num_ctx)"
