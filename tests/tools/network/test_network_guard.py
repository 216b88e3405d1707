"""The address rules for requests a library sends (tools/network/client.py): the hook refuses what a fetch refuses
and sends the rest to the address it checked, so a second lookup (DNS rebinding) has nothing to answer."""

from __future__ import annotations

import httpx2
import pytest

from sunwell.tools.network.client import Refused, pinned_by_rules
from sunwell.tools.network.hosts import HostRules


def resolver(answers: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    return resolve


@pytest.mark.parametrize(("url", "answers"), [
    ("http://127.0.0.2:9000/.well-known/oauth-authorization-server", {}),
    ("http://2130706434/token", {}),
    ("http://auth.example/token", {"auth.example": ["10.0.0.7"]}),
    ("http://auth.example/token", {"auth.example": ["93.184.216.34", "169.254.169.254"]}),
    ("file:///etc/passwd", {}),
])
async def test_a_host_the_rules_refuse_is_never_sent(url, answers):
    hook = pinned_by_rules(HostRules(), ["http://127.0.0.1:8000/mcp"], resolver(answers))
    with pytest.raises(Refused):
        await hook(httpx2.Request("GET", url))


async def test_a_public_name_goes_to_the_address_that_was_checked_with_its_name_kept():
    hook = pinned_by_rules(HostRules(), ["http://127.0.0.1:8000/mcp"], resolver({"auth.example": ["93.184.216.34"]}))
    request = httpx2.Request("POST", "https://auth.example/token")
    await hook(request)
    assert (request.url.host, request.url.path) == ("93.184.216.34", "/token")
    assert request.headers["Host"] == "auth.example" and request.extensions["sni_hostname"] == "auth.example"


async def test_the_configured_server_and_an_exactly_allowed_address_pass():
    hook = pinned_by_rules(HostRules(allow=["127.0.0.2"]), ["http://127.0.0.1:8000/mcp"], resolver({}))
    for url in ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:9/other-port", "http://127.0.0.2:9/token"):
        request = httpx2.Request("GET", url)
        await hook(request)
        assert str(request.url) == url
