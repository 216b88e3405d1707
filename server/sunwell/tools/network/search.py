"""Web search through the service the user configured (`web_search:`): SearXNG, Brave or Tavily, each spoken in its
documented wire format, each answer read into the same hits (title, URL, snippet).

The service is the user's choice, made in their own config (a workspace config cannot set it), so its endpoint is
not judged like a fetched page: a self-hosted SearXNG on 127.0.0.1 is the usual case. Its key is read from the
environment variable the user named, sent only in the header the service wants, and masked wherever it could show:
it is a secret environment value (tools/policy/environment.py). The pages of the hits are fetched, if at all, by
web_fetch, under its rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from sunwell.tools.failure import ToolFailure

PUBLIC_ENDPOINTS = {"brave": "https://api.search.brave.com/res/v1/web/search", "tavily": "https://api.tavily.com/search"}
MAX_ANSWER_BYTES = 2_000_000


@dataclass(frozen=True)
class Hit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class SearchService:
    provider: str
    """searxng, brave or tavily."""
    endpoint: str
    key: str | None = None
    timeout: float = 30.0
    key_env: str | None = None
    """Where the key comes from, to say so when it is missing."""

    @classmethod
    def configured(cls, provider: str, base_url: str | None, api_key_env: str | None, timeout: float,
                   environ: Mapping[str, str] = os.environ) -> SearchService:
        """The service of the user's `web_search:` settings (its key read now from `environ`)."""
        key = (environ.get(api_key_env) or "").strip() if api_key_env else None
        endpoint = base_url or PUBLIC_ENDPOINTS[provider]
        if provider == "searxng":
            endpoint = endpoint.rstrip("/") + "/search"
        return cls(provider, endpoint, key or None, timeout, api_key_env)

    async def search(self, query: str, count: int) -> list[Hit]:
        if self.provider in ("brave", "tavily") and not self.key:
            where = f"the environment variable {self.key_env}" if self.key_env else "web_search.api_key_env"
            raise ToolFailure("unsupported", f"web_search needs a {self.provider} API key: the user must set {where}")
        try:
            async with httpx2.AsyncClient(trust_env=False, timeout=self.timeout) as client:
                response = await client.send(self._request(client, query, count), stream=True)
                try:
                    body = await _bounded(response)
                finally:
                    await response.aclose()
        except httpx2.HTTPError as exc:
            raise ToolFailure("network", f"the {self.provider} search service did not answer: "
                              f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}") from None
        if not 200 <= response.status_code < 300:
            raise ToolFailure("network", f"the {self.provider} search service answered HTTP {response.status_code}: "
                              f"{_error_text(body)}")
        try:
            answer = json.loads(body)
        except ValueError:
            raise ToolFailure("network", f"the {self.provider} search service answered something that is not JSON"
                              + (" (is `format=json` enabled in its settings.yml?)" if self.provider == "searxng"
                                 else "")) from None
        return _hits(self.provider, answer)[:count]

    def _request(self, client: httpx2.AsyncClient, query: str, count: int) -> httpx2.Request:
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if self.provider == "brave":
            return client.build_request("GET", self.endpoint, params={"q": query, "count": count},
                                        headers={**headers, "X-Subscription-Token": self.key or ""})
        if self.provider == "tavily":
            return client.build_request("POST", self.endpoint, json={"query": query, "max_results": count},
                                        headers={**headers, "Authorization": f"Bearer {self.key}"})
        return client.build_request("GET", self.endpoint, params={"q": query, "format": "json"}, headers=headers)


async def _bounded(response: httpx2.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise ToolFailure("network", f"the search service's answer is larger than {MAX_ANSWER_BYTES:,} bytes")
    return bytes(body)


def _hits(provider: str, answer: Any) -> list[Hit]:
    """The hits of an answer: SearXNG and Tavily list `results` (title, url, content); Brave `web.results` (title,
    url, description). Entries without a URL are skipped; anything else malformed gives no hits, not a crash."""
    if not isinstance(answer, dict):
        return []
    web = answer.get("web") if provider == "brave" else None
    results = (web or {}).get("results") if provider == "brave" and isinstance(web, dict) else answer.get("results")
    snippet_key = "description" if provider == "brave" else "content"
    hits = []
    for entry in results if isinstance(results, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            hits.append(Hit(_text(entry.get("title")), entry["url"], _text(entry.get(snippet_key))))
    return hits


def _text(value: Any) -> str:
    return " ".join(value.split())[:500] if isinstance(value, str) else ""


def _error_text(body: bytes) -> str:
    """What a service's error body says: Brave's `error.detail`, Tavily's `detail.error`, else its first line."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip().splitlines()[0][:200] if body.strip() else "(no message)"
    for outer, inner in (("error", "detail"), ("detail", "error"), ("error", "message")):
        value = answer.get(outer) if isinstance(answer, dict) else None
        if isinstance(value, dict) and isinstance(value.get(inner), str):
            return value[inner][:200]
        if isinstance(value, str):
            return value[:200]
    return json.dumps(answer)[:200]
