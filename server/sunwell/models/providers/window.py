"""The model's real context window: what its server says, what a refusal for length states, what a silent cut means.

The registry knows a model's nominal window (Qwen2.5-Coder: 32,768 tokens), but the server decides: llama.cpp runs
with `--ctx-size`, Ollama with `num_ctx`, LM Studio with the length the model was loaded with. So the window is asked
of the server once per endpoint and model (`discover_window`), and a provider's length refusal is read for the limit
it states (`stated_limit`, `length_refusal`). llama-cpp-python states nothing anywhere, and ends a streamed request
that is too long without a word: the user config (or `scripts/start.sh`) says its window, and `WindowedProvider`
reads a stream that ends before its first chunk, right after a large request, as a likely overflow.

`urllib.request` (with `http.client` and `email`, ~60 ms) is imported at the first probe, not with this module,
which is on the sidecar's path to its first answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from sunwell.models.base import ContextOverflow, ModelRequest, Provider, StreamEvent
from sunwell.models.providers.retry import StreamCut, one_line

log = logging.getLogger(__name__)
DISCOVERY_TIMEOUT = 3.0
OLLAMA_DEFAULT_NUM_CTX = 4096
SMALL_REQUEST = 1024
"""Tokens no server's window is smaller than: a stream cut after a request this small says nothing of the window."""

# The limit each server states when it refuses a request for length (the number captured is the window).
_STATED = [
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.IGNORECASE),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"prompt is too long: [\d,]+ tokens > (\d[\d,]*) maximum", re.IGNORECASE),  # Anthropic
    re.compile(r"exceed context limit: [\d,]+ \+ [\d,]+ > (\d[\d,]*)", re.IGNORECASE),  # Anthropic, input + max_tokens
    re.compile(r"exceeds? (?:the )?context window of (\d[\d,]*)", re.IGNORECASE),  # llama-cpp-python's own words
    re.compile(r"context length of only (\d[\d,]*) tokens", re.IGNORECASE),  # LM Studio
    re.compile(r"context length \((\d[\d,]*) tokens\)", re.IGNORECASE),  # SGLang
    re.compile(r"too large for model with (\d[\d,]*) maximum context length", re.IGNORECASE),  # Mistral
    re.compile(r"maximum prompt length is (\d[\d,]*)", re.IGNORECASE),  # xAI
    re.compile(r"maximum number of tokens allowed \((\d[\d,]*)\)", re.IGNORECASE),  # Gemini
    re.compile(r"max_new_tokens`? must be <= (\d[\d,]*)", re.IGNORECASE),  # Text Generation Inference
    re.compile(r"context (?:window|length|size)(?: of| is|:)? (\d[\d,]*)(?: tokens)?", re.IGNORECASE),  # others
    re.compile(r"\"?n_ctx\"?\s*[:=]\s*(\d+)"),  # llama.cpp server's error body; LM Studio's "(n_keep: X>= n_ctx: N)"
]
# A refusal for length that may state no number (llama.cpp: "the request exceeds the available context size").
_LENGTH_REFUSAL = re.compile(
    r"context_length_exceeded|exceed_context_size|request_too_large|prompt is too long"
    r"|exceeds? (?:the )?(?:model'?s? )?(?:available |maximum |max )?context|context (?:window|length) exceeded"
    r"|greater than the context length|longer than the (?:model'?s? )?(?:maximum )?context"
    r"|too many tokens|input (?:length|is too long)", re.IGNORECASE)
# Statuses a length refusal comes with; 429 "request too large … tokens per min" is a rate limit, not the window.
_NOT_A_REFUSAL = (401, 403, 404, 408, 429, 529)


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


def length_refusal(provider: str, status: int | None, detail: str, code: str = "") -> ContextOverflow | None:
    """The `ContextOverflow` for a provider's error when it is a refusal for length, else None. `status` is None
    for an error inside a stream; `code` is the error's code or type when it has one (`context_length_exceeded`)."""
    if status in _NOT_A_REFUSAL or not is_length_refusal(f"{detail} {code}"):
        return None
    where = f" ({status})" if status else ""
    return ContextOverflow(f"{provider} refused the request for length{where}: {one_line(detail)}",
                           limit=stated_limit(detail), status=status)


class WindowedProvider:
    """`inner`, sent requests meant to fit `window` tokens. A stream that ends before its first chunk, right after a
    request `estimate`d at more than half the window, is a `ContextOverflow` with no limit: that is how
    llama-cpp-python refuses a streamed request too long for it (it says so only in its own log). `window` may be
    corrected later (by a refusal)."""

    def __init__(self, inner: Provider, window: int, estimate: Callable[[ModelRequest], int]) -> None:
        self.inner, self.window, self.estimate = inner, window, estimate
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events = self.inner.stream(request)
        try:
            async for event in events:
                yield event
        except StreamCut as cut:
            size = self.estimate(request)
            if cut.began or size <= SMALL_REQUEST:
                raise
            if size <= self.window // 2:  # the window may be wrong (a registry's nominal size): say what to do
                raise StreamCut(f"{cut}, after a request of about {size:,} tokens: if the server's context window "
                                "is smaller than that, set the model's `context_window` in your config",
                                began=False) from cut
            raise ContextOverflow(
                f"the {self.name} server ended the stream before its first token, right after a request of about "
                f"{size:,} tokens: most likely it did not fit the server's context window (taken to be "
                f"{self.window:,} tokens; the server stated no limit)") from cut
        finally:
            if (aclose := getattr(events, "aclose", None)) is not None:
                await aclose()


class ServerUnreachable(OSError):
    """Nothing answered at the endpoint: ask again later (a server that answers but states no window is None)."""


async def discover_window(provider: str, base_url: str, model: str, *, api_key: str | None = None,
                          timeout: float = DISCOVERY_TIMEOUT) -> tuple[int, str] | None:
    """(window, where it came from) as the server at `base_url` states it, or None when it states none. Raises
    `ServerUnreachable` only when nothing answered at all. `api_key` goes only to this endpoint, as a bearer token
    (hosted OpenAI-compatible services list their models only to a key)."""
    return await asyncio.to_thread(ask_server, provider, base_url, model, api_key=api_key, timeout=timeout)


def ask_server(provider: str, base_url: str, model: str, *, api_key: str | None = None,
               timeout: float = DISCOVERY_TIMEOUT) -> tuple[int, str] | None:
    """`discover_window`, blocking (for `sunwell models`, which has no event loop)."""
    probe = _Probe(api_key, timeout)
    base = base_url.rstrip("/")
    root = base.removesuffix("/v1")
    if provider == "ollama":
        found = _ollama_ps(probe.get(f"{root}/api/ps"), model) or _ollama_show(
            probe.post(f"{root}/api/show", {"model": model}))
    else:
        found = None
        for url, read in ((f"{root}/props", _llama_cpp), (f"{root}/api/v0/models", _lm_studio),
                          (f"{base}/models", _models_list), (f"{root}/info", _tgi)):  # fmt: skip
            if found := read(probe.get(url), model):
                break
    if found is None and not probe.answered:
        raise ServerUnreachable(f"no answer from {base}")
    return found


class _Probe:
    """Plain HTTP GETs and POSTs with `urllib`, imported on the first probe, not at the sidecar's start (with
    `http.client` and `email`, tens of milliseconds of imports)."""

    def __init__(self, api_key: str | None, timeout: float) -> None:
        self.headers = {"Content-Type": "application/json"} | (
            {"Authorization": f"Bearer {api_key}"} if api_key else {})
        self.timeout, self.answered = timeout, False

    def get(self, url: str) -> Any:
        return self._json(url)

    def post(self, url: str, body: dict[str, Any]) -> Any:
        return self._json(url, json.dumps(body).encode())

    def _json(self, url: str, data: bytes | None = None) -> Any:
        """The JSON the server answers with; None for anything else (an error status, not JSON, no answer)."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url, data=data, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                self.answered = True
                return json.loads(response.read(1 << 22))
        except urllib.error.HTTPError as exc:  # it answered: 404 and the like
            self.answered = True
            exc.close()
        except (OSError, ValueError) as exc:  # refused, timeout, not JSON
            log.debug("window discovery: %s: %s", request.full_url, exc)
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


# The field of a `/models` entry that states the window: vLLM and SGLang, OpenRouter and Together, Groq, Mistral.
_LIST_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def _models_list(body: Any, model: str) -> tuple[int, str] | None:
    entry = _entry(body, model) or {}
    for field in _LIST_FIELDS:
        if size := _positive(entry.get(field)):
            return size, f"server (/models {field})"
    return None


def _tgi(body: Any, model: str) -> tuple[int, str] | None:
    size = _positive(body.get("max_total_tokens")) if isinstance(body, dict) else None
    return (size, "server (TGI /info max_total_tokens)") if size else None


def _ollama_ps(body: Any, model: str) -> tuple[int, str] | None:
    """The window a loaded model really runs with (`ollama ps`), whatever its Modelfile or the server's default."""
    models = body.get("models") if isinstance(body, dict) else None
    names = {model, f"{model}:latest"}
    for entry in models if isinstance(models, list) else []:
        loaded = isinstance(entry, dict) and {entry.get("name"), entry.get("model")} & names
        if loaded and (size := _positive(entry.get("context_length"))):
            return size, "server (Ollama /api/ps context_length)"
    return None


def _ollama_show(body: Any) -> tuple[int, str] | None:
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters") if isinstance(body.get("parameters"), str) else ""
    if match := re.search(r"^num_ctx\s+(\d+)", parameters, re.MULTILINE):
        return int(match.group(1)), "server (Ollama num_ctx)"
    # Without num_ctx Ollama runs the model with its default window (4096 below 24 GiB of VRAM), not the model's
    # trained length, and cuts a longer prompt silently: assume that default unless the model is smaller still.
    info = body.get("model_info") if isinstance(body.get("model_info"), dict) else {}
    length = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    return min(length or OLLAMA_DEFAULT_NUM_CTX, OLLAMA_DEFAULT_NUM_CTX), "server (Ollama default num_ctx)"
