"""The streamable HTTP transport to an MCP server: the SDK's `streamable_http_client`, with every message bounded by
MAX_MESSAGE_BYTES as its bytes arrive (tools/mcp/oversize.py).

A request's answer comes one of two ways. As server-sent events, the SDK bounds each event itself while reading
(`max_sse_event_size`) and answers the request with a CONNECTION_CLOSED error naming the limit; the session goes on.
As one `application/json` body, the SDK reads it whole, so a response hook of the httpx client (httpx's extension
point; a transport of our own would lose the proxies httpx takes from the environment) puts the body behind a stream
that holds it up to the limit and, past it, reads no more and answers with Sunwell's `too_large` error in its place.
Responses are asked for uncompressed: a compressed body's size says nothing of what it becomes. One a server
compresses anyway is left to the SDK, unbounded.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from sunwell.tools.mcp.oversize import MAX_MESSAGE_BYTES, too_large_error
from sunwell.tools.network.client import pinned_by_rules
from sunwell.tools.network.hosts import HostRules


def http_transport(url: str, headers: dict[str, str], limit: int = MAX_MESSAGE_BYTES,
                   auth: httpx2.Auth | None = None, rules: HostRules | None = None) -> Any:
    """The transport `mcp.Client` takes for a server at `url` (`auth`: its OAuth sign-in, tools/mcp/oauth.py). Every
    request to a host other than `url`'s (an authorization server the sign-in discovers) passes the user's address
    `rules` and goes to the address they checked (tools/network/client.py `pinned_by_rules`)."""
    http = httpx2.AsyncClient(headers={"Accept-Encoding": "identity", **headers}, auth=auth,
                              timeout=httpx2.Timeout(30, read=300),
                              event_hooks={"request": [pinned_by_rules(rules or HostRules(), [url])],
                                           "response": [functools.partial(bound_json_body, limit=limit)]})
    return streamable_http_client(url, http_client=http, max_sse_event_size=limit)


async def bound_json_body(response: httpx2.Response, limit: int = MAX_MESSAGE_BYTES) -> None:
    """Hold the answer to a JSON-RPC request sent as one JSON body to `limit` bytes, the request's `too_large`
    error standing in for one past it (before anything of it is read: this runs as the headers arrive)."""
    request_id = _request_id(response.request)
    if (request_id is None or not 200 <= response.status_code < 300
            or not response.headers.get("content-type", "").lower().startswith("application/json")
            or response.headers.get("content-encoding", "identity").lower() != "identity"):
        return
    instead = too_large_error(request_id, limit).model_dump_json(by_alias=True, exclude_unset=True)
    response.stream = _HeldBody(response.stream, limit, instead.encode())


class _HeldBody(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, limit: int, instead: bytes) -> None:
        self.stream, self.limit, self.instead = stream, limit, instead

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = bytearray()
        async for chunk in self.stream:
            held += chunk
            if len(held) > self.limit:
                await self.stream.aclose()
                yield self.instead
                return
        yield bytes(held)

    async def aclose(self) -> None:
        await self.stream.aclose()


def _request_id(request: httpx2.Request) -> int | str | None:
    """The id of the JSON-RPC request a POST carries (None for anything else: a notification, a GET)."""
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    ident = message.get("id")
    return ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None
