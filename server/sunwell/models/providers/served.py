"""The models a server on the user's machine or network offers (`sunwell/models`' picker): an OpenAI-compatible
server's `GET /v1/models`, Ollama's `GET /api/tags`. Asked briefly; a server that does not answer offers none."""

from __future__ import annotations

import asyncio
from typing import Any

from sunwell.models.providers.window import _Probe

LIST_TIMEOUT = 2.0
MAX_LISTED = 200  # a gateway listing thousands is cut: the picker is for choosing, not browsing


async def served_models(provider: str, base_url: str, *, api_key: str | None = None,
                        timeout: float = LIST_TIMEOUT) -> list[str]:
    """The model ids the server at `base_url` lists, in its order, each once; [] when it lists none or is down."""
    return await asyncio.to_thread(_listed, provider, base_url.rstrip("/"), api_key, timeout)


def _listed(provider: str, base: str, api_key: str | None, timeout: float) -> list[str]:
    probe = _Probe(api_key, timeout)
    if provider == "ollama":
        body = probe.get(f"{base.removesuffix('/v1')}/api/tags")
        entries, key = (body.get("models") if isinstance(body, dict) else None), "name"
    else:
        body = probe.get(f"{base}/models")
        entries, key = (body.get("data") if isinstance(body, dict) else None), "id"
    ids: dict[str, None] = {}
    for entry in entries if isinstance(entries, list) else []:
        name: Any = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(name, str) and name.strip() and len(name) <= 200:
            ids.setdefault(name.strip(), None)
    return list(ids)[:MAX_LISTED]
