"""The network capability a tool call gets: the user's host rules, the caps, and the session's page cache.

`refusal` is what is refused before anything is asked or sent: a denied host, a private address written as a
literal that the user has not listed exactly, a URL carrying a secret (a token shape or the value of an environment
secret, as the redactor knows them; the audit log records such a URL masked). `allowed` is what is fetched without
asking: a host in the user's `network.allow`, or one the user allowed for this session. Everything else is asked,
host first (agent/gate.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sunwell.tools.network.cache import PageCache
from sunwell.tools.network.client import Edge
from sunwell.tools.network.hosts import HostRules, Resolver
from sunwell.tools.network.search import SearchService
from sunwell.tools.network.urls import Target, secret_in_url
from sunwell.tools.policy.audit import Redactor

if TYPE_CHECKING:
    from sunwell.config import Settings

@dataclass
class Network:
    rules: HostRules
    max_bytes: int = 5_000_000
    timeout: float = 30.0
    resolver: Resolver | None = None
    """How names are resolved (None: the system's); tests inject one to play a rebinding DNS."""
    is_secret: Callable[[str], bool] = lambda text: False
    """Whether a text carries a secret (the redactor would mask something in it)."""
    session_hosts: Callable[[], set[str]] = set
    """The hosts the user allowed for this session (approval's allow-for-session)."""
    cache: PageCache = field(default_factory=PageCache)
    search: SearchService | None = None
    """The search service the user configured for web_search, or None."""

    @property
    def edge(self) -> Edge:
        """The way out under these rules, this cap and this deadline (tools/network/client.py)."""
        return Edge(self.rules, self.timeout, self.max_bytes, self.resolver)

    def refusal(self, target: Target) -> str | None:
        """Why `target` is never fetched, or None."""
        if self.rules.denied(target):
            return f"{target.host} is in network.deny"
        if target.address is not None and not self.rules.may_reach(target, target.address):
            return (f"{target.host} is a private, loopback or link-local address; only the user can allow it, by "
                    "listing it exactly in network.allow")
        if secret_in_url(target, self.is_secret):
            return "the URL carries a secret (a token or the value of a secret environment variable)"
        return None

    def allowed(self, target: Target) -> bool:
        """Whether `target` is fetched without asking."""
        return self.rules.allowed(target) or target.host in self.session_hosts()


def network_for(settings: Settings, rules: HostRules, session_hosts: Callable[[], set[str]],
                cache: PageCache) -> Network:
    """The network a turn's tools get from the user's settings: `rules` (built from them once, when they were
    loaded), the hosts allowed for the session, its page cache, the search service if one is configured."""
    redactor, search = Redactor(passthrough=settings.env_passthrough), settings.web_search
    service = search and SearchService.configured(search.provider, search.base_url, search.api_key_env,
                                                  settings.network.timeout)
    return Network(rules, settings.network.max_bytes, settings.network.timeout,
                   is_secret=lambda text: redactor(text) != text, session_hosts=session_hosts, cache=cache,
                   search=service)
