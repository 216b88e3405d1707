"""web_fetch's GET: a page from the session's cache while it is fresh, else through the one way out
(tools/network/client.py: every hop resolved, checked and pinned, the body capped, one deadline), asked again with
its ETag and date once it is stale.

Each redirect is judged by the network policy (tools/network/policy.py): a refused host ends the fetch; another
host that the user has not allowed (in `network.allow` or for this session) is not followed: the model is told
where it leads and may fetch it, which asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from sunwell.tools.failure import ToolFailure
from sunwell.tools.network.cache import Fetched
from sunwell.tools.network.client import Request, Said, Wording
from sunwell.tools.network.urls import Target

if TYPE_CHECKING:
    from sunwell.tools.network.policy import Network

USER_AGENT = "Sunwell/0.1 (web_fetch; +https://github.com/sunwell)"
ACCEPT = "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5"
WORDING = Wording(
    "web_fetch",
    refused=Said("web_fetch refused it: {reason}", "do not try this URL again; tell the user what you wanted"),
    timed_out=Said("fetching {url} timed out after {seconds:g} s", "try again later, or fetch a smaller page"),
    broken=Said("could not fetch {url}: {reason}"),
    too_large=Said("{here} is larger{size} than network.max_bytes ({cap:,} bytes); not read",
                   "fetch a smaller page, or ask the user to raise network.max_bytes"),
    bad_redirect=Said("{here} redirects to a URL that is refused: {reason}"),
    redirects=Said("{url} redirected more than {limit} times; stopped"))


@dataclass(frozen=True)
class Elsewhere:
    """A redirect to a host the user has not allowed: not followed."""

    url: str
    location: str


async def fetch(target: Target, network: Network) -> Fetched | Elsewhere:
    """GET `target` (already judged and, if it needed it, approved); raises ToolFailure (`network`, `permission`)."""
    kept = network.cache.get(target.url)
    if kept is not None and kept[1]:
        return kept[0]
    cached = kept[0] if kept is not None else None
    answer = await network.edge.send(Request("GET", target, _headers(cached)), WORDING,
                                     follow=partial(_may_follow, network, target))
    if answer.elsewhere is not None:
        return Elsewhere(answer.url.url, answer.elsewhere.url)
    if answer.status == 304 and cached is not None and answer.url == target:
        network.cache.put(target.url, cached)
        return cached
    if not 200 <= answer.status < 300:
        raise ToolFailure("network", f"{answer.url.url} answered HTTP {answer.status} {answer.reason}".rstrip(),
                          suggestion="check the URL; the page may have moved or need signing in")
    page = Fetched(answer.url.url, answer.status, answer.headers.get("content-type", ""), answer.body,
                   answer.headers.get("etag"), answer.headers.get("last-modified"))
    network.cache.put(target.url, page)
    return page


def _may_follow(network: Network, first: Target, here: Target, there: Target) -> bool:
    """A redirect to a refused host ends the fetch; one to another host the user has not allowed is not followed."""
    if refusal := network.refusal(there):
        raise ToolFailure("permission", f"{here.url} redirects to {there.host}, which is refused: {refusal}")
    return there.host == first.host or network.allowed(there)


def _headers(cached: Fetched | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT}
    if cached is not None and cached.etag:
        headers["If-None-Match"] = cached.etag
    if cached is not None and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    return headers
