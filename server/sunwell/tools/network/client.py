"""The way out: every HTTP request a tool makes (web_fetch, the learned APIs, web_search) leaves through `Edge.send`,
and every request a library sends on Sunwell's behalf (the MCP SDK's OAuth client) passes `pinned_by_rules`; both
under the user's address rules, so a fix here is a fix everywhere.

Pinning. For each hop (the URL asked, then each redirect followed) the host is resolved once and every address it
answers checked (hosts.py `resolve`), and the request goes to the address that was checked, with the name in `Host`
and in TLS's SNI: the certificate is verified for the name, and no second lookup can answer something else (DNS
rebinding). Proxies from the environment are not used: they would resolve names themselves.

Redirects. Each is joined and parsed like any URL, then judged by the caller (`follow`): followed, and checked again
as a new hop; handed back unread (`Answer.elsewhere`); or refused (the caller raises). 5 at most. A 303, or a 301 or
302 after a POST, goes on as a GET without its body, as browsers do; the conditional headers speak of the first URL
and are not sent on.

Limits. The whole exchange, every hop, has one deadline; the body is read as it arrives and refused past the cap
without holding more than that (a body that never ends, a gigabyte). Answers are asked for uncompressed, so the cap
counts what is downloaded and what is decoded alike.

What fails is a ToolFailure in the asking tool's words (`Wording`): `permission` for a refused host, address or
redirect, `network` for the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from sunwell.tools.failure import ToolFailure
from sunwell.tools.network.addresses import Address
from sunwell.tools.network.hosts import HostRules, Resolver, Unreachable, resolve
from sunwell.tools.network.urls import Target, UrlRefused, parse_url

MAX_REDIRECTS = 5
CONDITIONAL = ("If-None-Match", "If-Modified-Since")

Follow = Callable[[Target, Target], bool]
"""(the hop, where it redirects) -> whether to follow; raises ToolFailure to refuse the redirect."""


@dataclass(frozen=True)
class Request:
    method: str
    target: Target
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    query: Sequence[tuple[str, str]] = ()
    """Added to the URL of every hop, never to `Answer.url`: credentials, what a service is asked."""


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: httpx2.Headers
    body: bytes
    url: Target
    """Where the answer came from, after the redirects followed."""
    elsewhere: Target | None = None
    """A redirect the caller did not follow: where it leads (its body is not read)."""


@dataclass(frozen=True)
class Said:
    message: str
    """A format string over `name` (the tool or service asking), `url` and `host` (what it asked first), `here`
    (the URL of the hop that failed), `reason`, `seconds` (the timeout), `cap`, `size` (" (N bytes)" when an answer
    declared its length, else empty) and `limit` (the redirects allowed)."""
    suggestion: str | None = None


@dataclass(frozen=True)
class Wording:
    """What a tool says when its request fails at the edge. The defaults speak of the tool by name."""

    name: str
    refused: Said = Said("{name} refused it: {reason}")
    unreachable: Said = Said("{reason}")
    timed_out: Said = Said("{name} timed out after {seconds:g} s")
    broken: Said = Said("{name} could not reach {host}: {reason}")
    too_large: Said = Said("the answer of {name} is larger than network.max_bytes ({cap:,} bytes); not read",
                           "ask for less: a smaller page (limit), or fewer fields")
    bad_redirect: Said = Said("{name} redirects to a URL that is refused: {reason}")
    redirects: Said = Said("{name} redirected more than {limit} times; stopped")

    def failure(self, kind: str, **values: Any) -> ToolFailure:
        """The failure of `kind` (the name of one of the fields above), its message formatted with `values`."""
        said: Said = getattr(self, kind)
        code = "permission" if kind in ("refused", "bad_redirect") else "network"
        return ToolFailure(code, said.message.format(name=self.name, **values), said.suggestion)


class _Failed(Exception):
    """A failure found on one hop, said in the caller's words once the exchange is over."""

    def __init__(self, kind: str, here: Target, **values: Any) -> None:
        super().__init__(kind)
        self.kind, self.here, self.values = kind, here, values


@dataclass(frozen=True)
class Edge:
    """Where a tool's requests may go (the user's host rules, a name resolved by `resolver`, None: the system's),
    how long one exchange may take, and how much of an answer is read."""

    rules: HostRules
    timeout: float = 30.0
    max_bytes: int = 5_000_000
    resolver: Resolver | None = None

    async def send(self, request: Request, wording: Wording, follow: Follow | None = None,
                   deadline: float | None = None) -> Answer:
        """The answer to `request`, redirects judged by `follow` (None: a redirect is an answer like any other).
        `deadline`, on the event loop's clock, when the exchange is one step of a larger one; else `timeout` from
        now. Raises ToolFailure in `wording`."""
        first = request.target
        values = {"url": first.url, "host": first.host, "here": first.url, "seconds": self.timeout,
                  "cap": self.max_bytes, "size": "", "limit": MAX_REDIRECTS}
        try:
            async with httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=self.timeout) as client:
                async with asyncio.timeout_at(asyncio.get_running_loop().time() + self.timeout
                                              if deadline is None else deadline):
                    return await self._hops(client, request, follow)
        except _Failed as failed:
            raise wording.failure(failed.kind, **{**values, "here": failed.here.url, **failed.values}) from None
        except UrlRefused as exc:
            raise wording.failure("refused", **values, reason=str(exc)) from None
        except Unreachable as exc:
            raise wording.failure("unreachable", **values, reason=str(exc)) from None
        except TimeoutError:
            raise wording.failure("timed_out", **values) from None
        except httpx2.HTTPError as exc:
            reason = (str(exc) or type(exc).__name__).splitlines()[0][:300]
            raise wording.failure("broken", **values, reason=reason) from None

    async def _hops(self, client: httpx2.AsyncClient, request: Request, follow: Follow | None) -> Answer:
        here, method, body, headers = request.target, request.method, request.body, httpx2.Headers(request.headers)
        for _hop in range(MAX_REDIRECTS + 1):
            address = await resolve(here, self.rules, self.resolver)
            url, extensions = _pinned(_with_query(here, request.query), here, address)
            headers["Host"], headers["Accept-Encoding"] = here.authority, "identity"
            response = await client.send(client.build_request(method, url, headers=headers, content=body,
                                                              extensions=extensions), stream=True)
            try:
                if follow is None or not response.has_redirect_location:
                    data = b"" if method == "HEAD" else await self._read(response, here)
                    return Answer(response.status_code, response.reason_phrase, response.headers, data, here)
                there = _joined(here, response.headers["location"])
                if not follow(here, there):
                    return Answer(response.status_code, response.reason_phrase, response.headers, b"", here, there)
            finally:
                await response.aclose()
            if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                method, body = "GET", None
                headers.pop("Content-Type", None)
            for name in CONDITIONAL:
                headers.pop(name, None)
            here = there
        raise _Failed("redirects", request.target)

    async def _read(self, response: httpx2.Response, here: Target) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise _Failed("too_large", here, size=f" ({int(declared):,} bytes)")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                raise _Failed("too_large", here)
        return bytes(body)


def _joined(here: Target, location: str) -> Target:
    try:
        return here.join(location)
    except UrlRefused as exc:
        raise _Failed("bad_redirect", here, reason=str(exc)) from None


def _with_query(target: Target, query: Sequence[tuple[str, str]]) -> httpx2.URL:
    url = httpx2.URL(target.url)
    return url.copy_merge_params(list(query)) if query else url


def _pinned(url: httpx2.URL, target: Target, address: Address) -> tuple[httpx2.URL, dict[str, Any]]:
    """`url` sent to `address`, the checked one: a name stays in SNI (and in `Host`, set by the caller)."""
    if target.address is not None:
        return url, {}
    return url.copy_with(host=str(address)), {"sni_hostname": target.host}


# ---- requests a library sends ------------------------------------------------------------------------------------

class Refused(httpx2.ConnectError):
    """A request the address rules refused before it was sent; the message says which host and why."""


def pinned_by_rules(rules: HostRules, named: Iterable[str],
                    resolver: Resolver | None = None) -> Callable[[httpx2.Request], Awaitable[None]]:
    """A request hook (httpx's extension point: it runs before the transport is chosen) for a library that builds
    its own requests, such as the MCP SDK's OAuth client, which asks hosts the user never named (an authorization
    server's metadata, registration, tokens). A request to one of the `named` URLs' hosts, which the user
    configured, goes as it is; any other is refused (Refused) or pinned to the address the rules checked."""
    own = {parse_url(url).host for url in named}

    async def hook(request: httpx2.Request) -> None:
        try:
            target = parse_url(str(request.url))
            if target.host in own:
                return
            address = await resolve(target, rules, resolver)
        except (UrlRefused, Unreachable) as exc:
            raise Refused(f"refused {request.url.host}: {exc}", request=request) from None
        request.url, extensions = _pinned(request.url, target, address)  # Host was set when the request was built
        request.extensions = {**request.extensions, **extensions}

    return hook
