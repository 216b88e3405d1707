"""One GET under the network policy: every hop checked, the checked address connected to, the body capped.

For each hop (the URL, then each redirect, 5 at most): the URL is parsed and judged (tools/network/policy.py), its
host resolved once and every address checked (tools/network/hosts.py), and the connection made to the address that
was checked: the request goes to that IP with the name in `Host` and in TLS's SNI, so the certificate is verified
for the name and no second lookup can answer something else (DNS rebinding). A redirect to another host that the
user has not allowed (in `network.allow` or for this session) is not followed: the model is told where it leads and
may fetch it, which asks. Proxies from the environment are not used (they would resolve names themselves).

The whole fetch has one deadline (`network.timeout`); the body is read as it arrives and refused past
`network.max_bytes` without holding more than that (a body that never ends, a gigabyte). Responses are asked for
uncompressed, so the cap counts what is downloaded and what is decoded alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from ipaddress import ip_address
from typing import TYPE_CHECKING

import httpx2

from sunwell.tools.base import ToolFailure
from sunwell.tools.network.cache import Fetched
from sunwell.tools.network.hosts import Unreachable, resolve
from sunwell.tools.network.urls import Target, UrlRefused

if TYPE_CHECKING:
    from sunwell.tools.network.policy import Network

MAX_REDIRECTS = 5
LOOPBACK = ip_address("127.0.0.1")
USER_AGENT = "Sunwell/0.1 (web_fetch; +https://github.com/sunwell)"


@dataclass(frozen=True)
class Elsewhere:
    """A redirect to a host the user has not allowed: not followed."""

    url: str
    location: str


async def fetch(target: Target, network: Network) -> Fetched | Elsewhere:
    """GET `target` (already judged and, if it needed it, approved); raises ToolFailure (`network`, `permission`)."""
    # the session's own server (a background process's) is asked each time: it changes as it is worked on, and a
    # kept page would outlive the process
    own = network.own(target)
    kept = None if own else network.cache.get(target.url)
    if kept is not None and kept[1]:
        return kept[0]
    cached = kept[0] if kept is not None else None
    via = network.routed(target)  # its own sandboxed server: through the relay's socket, never this machine's TCP
    transport = httpx2.AsyncHTTPTransport(uds=via) if via is not None else None
    try:
        async with httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=network.timeout,
                                      transport=transport) as client:
            async with asyncio.timeout(network.timeout):
                result = await _follow(client, target, network, cached, pinned=via is not None)
    except UrlRefused as exc:
        raise ToolFailure("permission", f"web_fetch refused it: {exc}",
                          suggestion="do not try this URL again; tell the user what you wanted") from None
    except Unreachable as exc:
        raise ToolFailure("network", str(exc)) from None
    except TimeoutError:
        raise ToolFailure("network", f"fetching {target.url} timed out after {network.timeout:g} s",
                          suggestion="try again later, or fetch a smaller page") from None
    except httpx2.HTTPError as exc:
        raise ToolFailure("network", f"could not fetch {target.url}: {_reason(exc)}") from None
    if isinstance(result, Fetched) and not own:
        network.cache.put(target.url, result)
    return result


async def _follow(client: httpx2.AsyncClient, target: Target, network: Network, cached: Fetched | None,
                  pinned: bool = False) -> Fetched | Elsewhere:
    """The hops of one fetch; `pinned`: the client reaches one server only (a relay's socket), so a redirect
    anywhere else is reported, not followed."""
    first = target
    for _hop in range(MAX_REDIRECTS + 1):
        address = (target.address or LOOPBACK) if pinned else await resolve(target, network.rules, network.resolver)
        request = client.build_request("GET", _address_url(target, address), headers=_headers(target, cached),
                                       extensions={"sni_hostname": target.host} if target.address is None else {})
        response = await client.send(request, stream=True)
        try:
            if response.is_redirect and "location" in response.headers:
                location = _next(target, response.headers["location"])
                if refusal := network.refusal(location):
                    raise ToolFailure("permission", f"{target.url} redirects to {location.host}, which is refused: "
                                      f"{refusal}")
                elsewhere = (location.host, location.port) != (first.host, first.port) if pinned else (
                    location.host != first.host and not network.allowed(location))
                if elsewhere:
                    return Elsewhere(target.url, location.url)
                target, cached = location, None
                continue
            if response.status_code == 304 and cached is not None:
                return Fetched(cached.url, cached.status, cached.content_type, cached.body, cached.etag,
                               cached.last_modified)
            if not 200 <= response.status_code < 300:
                raise ToolFailure("network", f"{target.url} answered HTTP {response.status_code} "
                                  f"{response.reason_phrase}".rstrip(),
                                  suggestion="check the URL; the page may have moved or need signing in")
            body = await _read(response, target, network.max_bytes)
            return Fetched(target.url, response.status_code, response.headers.get("content-type", ""), body,
                           response.headers.get("etag"), response.headers.get("last-modified"))
        finally:
            await response.aclose()
    raise ToolFailure("network", f"{first.url} redirected more than {MAX_REDIRECTS} times; stopped")


async def _read(response: httpx2.Response, target: Target, cap: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise _too_large(target, cap, int(declared))
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            raise _too_large(target, cap)
    return bytes(body)


def _too_large(target: Target, cap: int, size: int | None = None) -> ToolFailure:
    said = f" ({size:,} bytes)" if size is not None else ""
    return ToolFailure("network", f"{target.url} is larger{said} than network.max_bytes ({cap:,} bytes); not read",
                       suggestion="fetch a smaller page, or ask the user to raise network.max_bytes")


def _next(target: Target, location: str) -> Target:
    try:
        return target.join(location)
    except UrlRefused as exc:
        raise ToolFailure("permission", f"{target.url} redirects to a URL that is refused: {exc}") from None


def _address_url(target: Target, address: object) -> str:
    """`target`'s URL with the checked address in place of its host (and no fragment: it is not sent)."""
    return str(httpx2.URL(target.url).copy_with(host=str(address), fragment=None))


def _headers(target: Target, cached: Fetched | None) -> dict[str, str]:
    headers = {"Host": target.authority,
               "User-Agent": USER_AGENT, "Accept-Encoding": "identity",
               "Accept": "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5"}
    if cached is not None and cached.etag:
        headers["If-None-Match"] = cached.etag
    if cached is not None and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    return headers


def _reason(exc: httpx2.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]

