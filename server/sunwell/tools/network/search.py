"""Web search through the service the user configured (`web_search:`): SearXNG, Brave or Tavily, each spoken in its
documented wire format, each answer read into the same hits (title, URL, snippet).

The service is the user's choice, made in their own config (a workspace config cannot set it), so its endpoint is
not judged like a fetched page: a self-hosted SearXNG on 127.0.0.1 is the usual case. It is asked through the same
way out as a page (tools/network/client.py), with that one host allowed: pinned to the address its name resolved
to, redirects not followed, the answer capped, one deadline (`network.timeout`). Its key is read from the
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

from sunwell.tools.failure import ToolFailure
from sunwell.tools.network.client import Edge, Request, Said, Wording
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.urls import Target, UrlRefused, parse_url

PUBLIC_ENDPOINTS = {"brave": "https://api.search.brave.com/res/v1/web/search", "tavily": "https://api.tavily.com/search"}
MAX_ANSWER_BYTES = 2_000_000
USER_AGENT = "Sunwell/0.1 (web_search)"


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
            endpoint = parse_url(self.endpoint)
        except UrlRefused as exc:
            raise ToolFailure("unsupported", f"web_search cannot ask {self.endpoint}: {exc}") from None
        edge = Edge(HostRules([endpoint.host]), self.timeout, MAX_ANSWER_BYTES)
        reply = await edge.send(self._request(endpoint, query, count), _wording(self.provider))
        if not 200 <= reply.status < 300:
            raise ToolFailure("network", f"the {self.provider} search service answered HTTP {reply.status}: "
                              f"{_error_text(reply.body)}")
        try:
            answer = json.loads(reply.body)
        except ValueError:
            raise ToolFailure("network", f"the {self.provider} search service answered something that is not JSON"
                              + (" (is `format=json` enabled in its settings.yml?)" if self.provider == "searxng"
                                 else "")) from None
        return _hits(self.provider, answer)[:count]

    def _request(self, endpoint: Target, query: str, count: int) -> Request:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self.provider == "brave":
            return Request("GET", endpoint, {**headers, "X-Subscription-Token": self.key or ""},
                           query=[("q", query), ("count", str(count))])
        if self.provider == "tavily":
            return Request("POST", endpoint, {**headers, "Authorization": f"Bearer {self.key}",
                                              "Content-Type": "application/json"},
                           json.dumps({"query": query, "max_results": count}).encode())
        return Request("GET", endpoint, headers, query=[("q", query), ("format", "json")])


def _wording(provider: str) -> Wording:
    no_answer = Said("the {name} search service did not answer: {reason:.200}")
    return Wording(provider, unreachable=no_answer, broken=no_answer,
                   timed_out=Said("the {name} search service did not answer within {seconds:g} s"),
                   too_large=Said("the search service's answer is larger than {cap:,} bytes"))


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
