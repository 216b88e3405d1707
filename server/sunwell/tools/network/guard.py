"""The address rules for requests a library sends on Sunwell's behalf.

web_fetch and the learned APIs build each request themselves (tools/network/fetch.py). Some requests are built by a
library instead: the MCP SDK's OAuth client asks the authorization server a resource's metadata names for its own
metadata, registers, and trades codes for tokens, all hosts the user never named. `pinned_by_rules` is a request hook
of the httpx client that library drives (httpx's extension point: it runs before the transport is chosen), so every
such request passes the same rules as a fetch: the host resolved once and every address checked (hosts.py), the
request sent to the checked address with the name kept in `Host` and in TLS's SNI. The hosts the user configured
(the MCP server's own URL) are theirs and pass as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import httpx2

from sunwell.tools.network.hosts import HostRules, Resolver, Unreachable, resolve
from sunwell.tools.network.urls import UrlRefused, parse_url


class Refused(httpx2.ConnectError):
    """A request the address rules refused before it was sent; the message says which host and why."""


def pinned_by_rules(rules: HostRules, named: Iterable[str],
                    resolver: Resolver | None = None) -> Callable[[httpx2.Request], Awaitable[None]]:
    """A request hook: a request to one of the `named` URLs' hosts goes as it is; any other is refused (Refused) or
    pinned to the address the rules checked."""
    own = {parse_url(url).host for url in named}

    async def hook(request: httpx2.Request) -> None:
        try:
            target = parse_url(str(request.url))
            if target.host in own:
                return
            address = await resolve(target, rules, resolver)
        except (UrlRefused, Unreachable) as exc:
            raise Refused(f"refused {request.url.host}: {exc}", request=request) from None
        if target.address is None:  # the name stays in Host (set when the request was built) and in SNI
            request.extensions = {**request.extensions, "sni_hostname": target.host}
            request.url = request.url.copy_with(host=str(address))

    return hook
