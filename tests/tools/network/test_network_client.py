"""The one way out (tools/network/client.py): every request a tool makes is pinned to the address its rules
checked, every redirect hop resolved and judged again (5 at most), every answer capped as it arrives, and the whole
exchange under one deadline. A real web server on 127.0.0.1 (tests/web_server.py); a resolver stub plays the DNS
for names, a rebinding one included (as in test_network_policy.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from sunwell.tools.base import ToolFailure
from sunwell.tools.network.client import Edge, Request, Said, Wording
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.urls import parse_url
from web_server import WebServer

WORDS = Wording("probe")


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


def answering(*rounds: dict[str, list[str]]):
    """A resolver answering each lookup from the next round, by name; the names it was asked are in `.asked`."""
    pending = list(rounds)

    async def resolve(host: str, port: int) -> list[str]:
        resolve.asked.append(host)
        return pending.pop(0)[host]

    resolve.asked = []
    return resolve


def get(url: str, **fields) -> Request:
    return Request("GET", parse_url(url), **fields)


def local(**limits) -> Edge:
    return Edge(HostRules(["127.0.0.1"]), **limits)


async def refused(edge: Edge, request: Request, **how) -> ToolFailure:
    with pytest.raises(ToolFailure) as failure:
        await edge.send(request, WORDS, **how)
    return failure.value


# ---- pinning -----------------------------------------------------------------------------------------------------

async def test_a_name_is_resolved_once_and_the_request_goes_to_the_checked_address_with_its_name(web):
    rebinding = answering({"rebind.test": ["127.0.0.1"]}, {"rebind.test": ["10.0.0.1"]})
    edge = Edge(HostRules(["rebind.test"]), resolver=rebinding)  # listed exactly: may be private
    answer = await edge.send(get(f"http://rebind.test:{web.port}/plain.txt"), WORDS)
    assert answer.status == 200 and answer.body.startswith(b"just text") and rebinding.asked == ["rebind.test"]
    assert web.requests[0][2]["Host"] == f"rebind.test:{web.port}"
    assert answer.url == parse_url(f"http://rebind.test:{web.port}/plain.txt")


@pytest.mark.parametrize("answers", [["10.0.0.7"], ["93.184.216.34", "127.0.0.1"], ["::ffff:127.0.0.1"]])
async def test_a_name_answering_a_private_address_is_refused_before_anything_is_sent(web, answers):
    edge = Edge(HostRules(["*.test"]), resolver=answering({"api.test": answers}))  # a wildcard never reaches one
    failure = await refused(edge, get(f"http://api.test:{web.port}/plain.txt"))
    assert failure.error.code == "permission" and failure.error.message.startswith("probe refused it: api.test")
    assert web.requests == []


async def test_every_redirect_hop_is_resolved_and_judged_again(web):
    dns = answering({"a.test": ["127.0.0.1"]}, {"b.test": ["127.0.0.1"]})
    edge = Edge(HostRules(["a.test", "*.test"]), resolver=dns)  # b.test only by the wildcard: not to 127.0.0.1
    failure = await refused(edge, get(f"http://a.test:{web.port}/to?u=http://b.test:{web.port}/plain.txt"),
                            follow=lambda here, there: True)
    assert failure.error.code == "permission" and "b.test resolves to 127.0.0.1" in failure.error.message
    assert dns.asked == ["a.test", "b.test"] and len(web.requests) == 1


# ---- redirects ---------------------------------------------------------------------------------------------------

async def test_a_redirect_is_followed_handed_back_or_refused_as_the_caller_judges(web):
    edge = Edge(HostRules(["127.0.0.1", "localhost"]))
    request = get(web.url(f"/to?u=http://localhost:{web.port}/plain.txt"))
    seen: list[tuple[str, str]] = []

    def follow(here, there) -> bool:
        seen.append((here.host, there.host))
        return True

    followed = await edge.send(request, WORDS, follow=follow)
    assert followed.status == 200 and followed.url.host == "localhost" and followed.elsewhere is None
    assert seen == [("127.0.0.1", "localhost")]
    handed = await edge.send(request, WORDS, follow=lambda here, there: False)
    assert handed.status == 302 and handed.elsewhere == parse_url(f"http://localhost:{web.port}/plain.txt")
    assert handed.url == request.target and handed.body == b""
    unfollowed = await edge.send(request, WORDS)  # no judge: a redirect is an answer like any other
    assert unfollowed.status == 302 and unfollowed.elsewhere is None

    def refuse(here, there) -> bool:
        raise ToolFailure("permission", f"not to {there.host}")

    assert (await refused(edge, request, follow=refuse)).error.message == "not to localhost"
    assert len(web.requests) == 2 + 1 + 1 + 1


async def test_at_most_five_redirects_are_followed(web):
    five = await local().send(get(web.url("/redirect/5")), WORDS, follow=lambda here, there: True)
    assert five.status == 200 and five.url.url == web.url("/page.html")
    failure = await refused(local(), get(web.url("/redirect/6")), follow=lambda here, there: True)
    assert failure.error.code == "network" and failure.error.message == "probe redirected more than 5 times; stopped"
    assert len(web.requests) == 6 + 6


async def test_a_see_other_or_a_moved_post_goes_on_as_a_get_without_its_body(web):
    request = Request("POST", parse_url(web.url("/see-other")), {"Content-Type": "text/plain"}, b"the body")
    answer = await local().send(request, WORDS, follow=lambda here, there: True)
    echoed = json.loads(answer.body)
    assert echoed["method"] == "GET" and echoed["body"] == "" and "Content-Type" not in echoed["headers"]
    assert [(method, path) for method, path, _ in web.requests] == [("POST", "/see-other"), ("GET", "/echo")]


async def test_the_conditional_headers_speak_of_the_first_url_only(web):
    answer = await local().send(get(web.url("/to?u=/page.html"), headers={"If-None-Match": '"v1"'}), WORDS,
                                follow=lambda here, there: True)
    assert answer.status == 200 and b"Coroutines" in answer.body  # the page itself, not a 304 for another URL
    assert [headers.get("If-None-Match") for _, _, headers in web.requests] == ['"v1"', None]


async def test_the_query_goes_to_every_hop_and_never_into_the_answers_url(web):
    answer = await local().send(get(web.url("/redirect/1"), query=[("key", "k-123")]), WORDS,
                                follow=lambda here, there: True)
    assert [path for _, path, _ in web.requests] == ["/redirect/1?key=k-123", "/page.html?key=k-123"]
    assert answer.url.url == web.url("/page.html")


# ---- limits ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/big", "/endless"])
async def test_an_answer_over_the_cap_is_refused_declared_or_as_it_arrives(web, path):
    failure = await refused(local(max_bytes=100_000), get(web.url(path)))
    assert failure.error.code == "network"
    assert failure.error.message == "the answer of probe is larger than network.max_bytes (100,000 bytes); not read"


async def test_a_heads_declared_length_is_not_a_body(web):
    answer = await local(max_bytes=100_000).send(Request("HEAD", parse_url(web.url("/big"))), WORDS)
    assert answer.status == 200 and answer.body == b"" and answer.headers["content-length"] == "3000000"


async def test_one_deadline_covers_every_hop(web):
    """Each hop answers well inside the timeout; the exchange as a whole does not."""
    started = time.monotonic()
    failure = await refused(local(timeout=1.0), get(web.url("/slow-redirect/4?s=0.6")),
                            follow=lambda here, there: True)
    assert failure.error.code == "network" and failure.error.message == "probe timed out after 1 s"
    assert time.monotonic() - started < 2.0 and len(web.requests) == 2


async def test_a_deadline_given_is_shared_by_exchanges(web):
    deadline = asyncio.get_running_loop().time() + 0.8
    await local(timeout=5.0).send(get(web.url("/slow?s=0.5")), WORDS, deadline=deadline)
    failure = await refused(local(timeout=5.0), get(web.url("/slow?s=0.5")), deadline=deadline)
    assert failure.error.message == "probe timed out after 5 s"


# ---- in the caller's words ---------------------------------------------------------------------------------------

async def test_failures_are_said_in_the_callers_words(web):
    wording = Wording("probe", timed_out=Said("{url} took over {seconds:g} s", "later"),
                      broken=Said("no answer from {host}: {reason}"), unreachable=Said("lost: {reason}"))
    with pytest.raises(ToolFailure) as slow:
        await local(timeout=0.5).send(get(web.url("/slow?s=3")), wording)
    assert (slow.value.error.message, slow.value.error.suggestion) == (f"{web.url('/slow?s=3')} took over 0.5 s",
                                                                       "later")

    async def no_dns(host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")

    with pytest.raises(ToolFailure) as lost:
        await Edge(HostRules(), resolver=no_dns).send(get("http://gone.test/"), wording)
    assert lost.value.error.message == "lost: could not resolve gone.test: Name or service not known"
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ToolFailure) as closed:
        await local().send(get(f"http://127.0.0.1:{port}/"), wording)
    assert closed.value.error.code == "network" and closed.value.error.message.startswith("no answer from 127.0.0.1:")
