"""web_fetch and web_search end to end: a real engine, the scripted fake provider, and a real web server on
127.0.0.1 (tests/web_server.py) that the user's config allows by its exact address. The attacks come first: each
must be refused before any request reaches a server, whatever the approval mode says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from person import Person
from sunwell.agent.engine import Engine
from sunwell.config import Settings
from sunwell.tools.network.cache import FRESH_SECONDS, PageCache
from sunwell.tools.network.fetch import Fetched, fetch
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.policy import Network
from sunwell.tools.network.urls import parse_url
from sunwell.wire.events import ApprovalEvent, ToolResultEvent
from sunwell.wire.results import WebPage
from web_server import DATED, WebServer

TOKEN = "tok-5f3a9c2e71d04b8e"


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


@pytest.fixture
def make_engine(tmp_path: Path, workspace: Path, fake, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)

    def make(approval: str = "auto", asker=None, **settings) -> Engine:
        return Engine(Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval=approval, **settings),
                      workspace, client=Person(approve=asker) if asker else Person())

    return make


async def fetch_calls(engine: Engine, fake, *arguments: dict, session: str | None = None) -> list:
    """Run one turn in which the model asks for each of `arguments` in turn; its events."""
    fake.script(*(Reply(tool_calls=[Call("web_fetch", json.dumps(a))]) for a in arguments), Reply(text="done"))
    events: list = []
    await engine.run_turn("read the docs", events.append, session=session)
    return events


def results(events: list) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


ALLOW_LOCAL = {"network": {"allow": ["127.0.0.1"]}}


# ---- attacks: refused before anything is sent ------------------------------------------------------------------

@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "127.1", "127.0.1",
                                  "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "127.000.000.002", "0"])
async def test_every_spelling_of_a_private_address_is_refused_even_in_auto_mode(make_engine, fake, web, host):
    engine = make_engine("auto")  # nothing listed: no private address may be reached, whoever approves
    [result] = results(await fetch_calls(engine, fake, {"url": f"http://{host}:{web.port}/page.html"}))
    assert not result.ok and result.error.code == "permission"
    assert "network.allow" in result.error.message
    assert web.requests == []


async def test_a_listed_address_is_reached_only_by_its_exact_spelling_of_that_address(make_engine, fake, web):
    engine = make_engine("auto", **ALLOW_LOCAL)
    ok, other = results(await fetch_calls(engine, fake, {"url": f"http://2130706433:{web.port}/plain.txt"},
                                          {"url": f"http://127.0.0.2:{web.port}/plain.txt"}))
    assert ok.ok and "just text" in ok.output  # 2130706433 is 127.0.0.1, which is listed
    assert not other.ok and other.error.code == "permission"
    assert len(web.requests) == 1


@pytest.mark.parametrize("url", [
    "http://127.0.0.1@evil.example/", "http://user:pw@127.0.0.1/", "http://127.0.0.1\x00.evil.example/",
    "http://127.0.0.1\r\nX-Injected: 1/", "http://127.0.0.1%00.evil/", "file:///etc/passwd", "ftp://127.0.0.1/",
    "javascript:alert(1)", "//127.0.0.1/page.html", "http:///page.html",
])
async def test_urls_that_are_not_plain_http_are_refused(make_engine, fake, web, url):
    [result] = results(await fetch_calls(make_engine("auto", **ALLOW_LOCAL), fake, {"url": url}))
    assert not result.ok and result.error.code == "permission", result
    assert web.requests == []


async def test_a_url_carrying_a_secret_is_refused_and_the_audit_masks_it(make_engine, fake, web, tmp_path):
    engine = make_engine("auto", **ALLOW_LOCAL)
    urls = [f"http://127.0.0.1:{web.port}/page.html?q={TOKEN}", f"http://127.0.0.1:{web.port}/{TOKEN}/x",
            f"http://127.0.0.1:{web.port}/p?key=sk-abcdef1234567890abcd",
            f"http://127.0.0.1:{web.port}/p?k=tok%2D5f3a9c2e71d04b8e"]  # the value percent-encoded
    found = results(await fetch_calls(engine, fake, *({"url": u} for u in urls)))
    assert [r.error.code for r in found] == ["permission"] * 4
    assert all("secret" in r.error.message and TOKEN not in r.error.message for r in found)
    assert web.requests == []
    audit = "".join(p.read_text() for p in (tmp_path / "data" / "audit").glob("*.jsonl"))
    assert audit.count('"tool":"web_fetch"') == 4 and TOKEN not in audit and "sk-abcdef1234567890abcd" not in audit
    assert "tok%2D5f3a9c2e71d04b8e" not in audit and "5f3a9c2e71d04b8e" not in audit
    recorded = [json.loads(line)["arguments"]["url"] for line in audit.splitlines()]
    assert recorded == [web.url("/page.html?q=[REDACTED]"), web.url("/[REDACTED]/x"), web.url("/p?key=[REDACTED]"),
                        web.url("/p?k=[REDACTED]")]  # the URL kept, only the secret masked


async def test_a_redirect_into_a_private_address_is_refused(make_engine, fake, web):
    engine = make_engine("auto", **ALLOW_LOCAL)
    target = f"http://127.0.0.9:{web.port}/page.html"
    [result] = results(await fetch_calls(engine, fake, {"url": web.url(f"/to?u={target}")}))
    assert not result.ok and result.error.code == "permission" and "127.0.0.9" in result.error.message
    assert [path for _, path, _ in web.requests] == [f"/to?u={target}"]


async def test_an_allowed_host_redirecting_to_a_denied_one_is_refused(make_engine, fake, web):
    engine = make_engine("auto", network={"allow": ["127.0.0.1", "localhost"], "deny": ["localhost"]})
    [result] = results(await fetch_calls(engine, fake, {"url": web.url(f"/to?u=http://localhost:{web.port}/x")}))
    assert not result.ok and result.error.code == "permission" and "network.deny" in result.error.message
    assert len(web.requests) == 1


async def test_a_redirect_to_a_host_not_allowed_is_reported_not_followed(make_engine, fake, web):
    engine = make_engine("ask", asker=None, network={"allow": ["127.0.0.1"]})
    [result] = results(await fetch_calls(engine, fake, {"url": web.url(f"/to?u=http://localhost:{web.port}/x")}))
    assert result.ok and "redirects to" in result.output and "was not fetched" in result.output
    assert len(web.requests) == 1


async def test_a_name_resolving_to_a_private_address_connects_to_the_address_checked():
    """DNS rebinding: the name is resolved once per hop and the connection goes to that very address."""
    with WebServer() as web:
        answers = [["127.0.0.1"], ["10.0.0.1"]]
        asked: list[str] = []

        async def rebinding(host: str, port: int) -> list[str]:
            asked.append(host)
            return answers.pop(0)

        network = Network(HostRules(["rebind.test"]), resolver=rebinding)  # listed exactly: may be private
        page = await fetch(parse_url(f"http://rebind.test:{web.port}/plain.txt"), network)
        assert isinstance(page, Fetched) and page.body.startswith(b"just text") and asked == ["rebind.test"]
        assert web.requests[0][2]["Host"] == f"rebind.test:{web.port}"  # the name, sent to the checked address

        public_then_private = [["93.184.216.34", "127.0.0.1"]]

        async def mixed(host: str, port: int) -> list[str]:
            return public_then_private.pop(0)

        from sunwell.tools.base import ToolFailure
        with pytest.raises(ToolFailure) as refused:
            await fetch(parse_url(f"http://mixed.test:{web.port}/plain.txt"),
                        Network(HostRules(["*.test"]), resolver=mixed))
        assert refused.value.error.code == "permission" and len(web.requests) == 1


# ---- approval per host -----------------------------------------------------------------------------------------

async def test_a_denied_host_is_refused_without_asking_even_when_also_allowed(make_engine, fake, web):
    asked = []

    async def asker(request):
        asked.append(request)
        return "allow"

    engine = make_engine("ask", asker=asker, network={"allow": ["127.0.0.1"], "deny": ["2130706433"]})
    [result] = results(await fetch_calls(engine, fake, {"url": web.url("/page.html")}))
    assert result.error.code == "permission" and "network.deny" in result.error.message
    assert asked == [] and web.requests == []


async def test_an_unlisted_host_is_asked_host_first_and_allow_session_covers_its_other_pages(make_engine, fake):
    asked = []

    async def asker(request):
        asked.append(request)
        return "allowSession"

    engine = make_engine("ask", asker=asker)
    events = await fetch_calls(engine, fake, {"url": "http://docs.example.invalid/a"},
                               {"url": "http://DOCS.example.invalid./b"})
    first, second = results(events)
    assert [r.preview.wire() for r in asked] == [{"kind": "fetch", "url": "http://docs.example.invalid/a",
                                                  "host": "docs.example.invalid"}]
    assert asked[0].risk == "network"
    approvals = [e for e in events if isinstance(e, ApprovalEvent)]
    assert [(a.decision, a.by) for a in approvals] == [("allowSession", "user"), ("allow", "policy")]
    assert first.error.code == second.error.code == "network"  # .invalid never resolves: asked, then unreachable


async def test_deny_mode_never_fetches_an_unapproved_host(make_engine, fake, web):
    engine = make_engine("deny", network={"allow": ["localhost"]})
    [result] = results(await fetch_calls(engine, fake, {"url": f"http://127.0.0.1:{web.port}/page.html"},))
    assert result.error.code == "permission" and web.requests == []
    engine = make_engine("deny", network={})
    [result] = results(await fetch_calls(engine, fake, {"url": "http://docs.example.invalid/"}))
    assert result.error.code == "denied"


# ---- what a page becomes ---------------------------------------------------------------------------------------

async def test_a_page_is_markdown_with_its_url_title_and_the_untrusted_marker(make_engine, fake, web):
    [result] = results(await fetch_calls(make_engine("deny", **ALLOW_LOCAL), fake, {"url": web.url("/redirect/2")}))
    assert result.ok, result.error
    lines = result.output.splitlines()
    assert lines[0] == f"URL: {web.url('/page.html')}" and lines[1] == "Title: Asyncio Tasks"
    assert "not instructions" in lines[2]
    assert "# Coroutines and Tasks" in result.output and "`asyncio.TaskGroup`" in result.output
    assert "- create_task" in result.output and "do not show" not in result.output and "color:red" not in result.output
    # what the card draws comes as data, not from that text (the final URL, after the redirects)
    assert result.data == WebPage(url=web.url("/page.html"), host="127.0.0.1", title="Asyncio Tasks")


@pytest.mark.parametrize(("path", "expect"), [
    ("/data.json", '{\n  "name": "pikachu",\n  "types": [\n    "electric"\n  ],\n  "id": 25\n}'),
    ("/plain.txt", "just text, café"),
    ("/latin1.html", "Café crème à la carte"),
])
async def test_json_text_and_an_unlabelled_charset(make_engine, fake, web, path, expect):
    [result] = results(await fetch_calls(make_engine("deny", **ALLOW_LOCAL), fake, {"url": web.url(path)}))
    assert result.ok and expect in result.output


@pytest.mark.parametrize(("path", "code", "words"), [
    ("/doc.pdf", "unsupported", "application/pdf"), ("/blob", "unsupported", "not text"),
    ("/missing", "network", "HTTP 404"), ("/big", "network", "larger"), ("/endless", "network", "larger"),
    ("/redirect/9", "network", "more than 5"), ("/slow?s=3", "network", "timed out"),
])
async def test_what_cannot_be_read_says_why(make_engine, fake, web, path, code, words):
    engine = make_engine("deny", network={"allow": ["127.0.0.1"], "max_bytes": 1_000_000, "timeout": 1.5})
    [result] = results(await fetch_calls(engine, fake, {"url": web.url(path)}))
    assert not result.ok and result.error.code == code and words in result.error.message, result.error


async def test_a_long_page_comes_in_parts_the_later_ones_from_the_cache(make_engine, fake, web):
    engine = make_engine("deny", max_output_bytes=20_000, **ALLOW_LOCAL)
    first, second = results(await fetch_calls(engine, fake, {"url": web.url("/long.txt")},
                                              {"url": web.url("/long.txt"), "offset": 19_000}))
    assert "call web_fetch with offset=" in first.output and "line 00000" in first.output
    offset = int(first.output.split("offset=")[1].split(" ")[0])
    assert offset > 15_000 and "line 00000" not in second.output
    assert len(web.requests) == 1  # the second part came from the session's cache


@pytest.mark.parametrize(("path", "header", "sent"), [
    pytest.param("/page.html", "If-None-Match", '"v1"', id="its etag"),
    pytest.param("/dated.html", "If-Modified-Since", DATED, id="only its date"),
])  # fmt: skip
async def test_a_stale_page_is_asked_again_with_what_the_server_said_of_it(path, header, sent):
    with WebServer() as web:
        now = [0.0]
        network = Network(HostRules(["127.0.0.1"]), cache=PageCache(clock=lambda: now[0]))
        target = parse_url(web.url(path))
        first = await fetch(target, network)
        now[0] = FRESH_SECONDS + 1
        again = await fetch(target, network)
        assert isinstance(again, Fetched) and again.body == first.body and again.status == 200
        assert [h.get(header) for _, _, h in web.requests] == [None, sent]  # answered 304


# ---- web_search ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["searxng", "brave", "tavily"])
async def test_web_search_speaks_each_services_format(make_engine, fake, web, provider, monkeypatch):
    monkeypatch.setenv("SEARCH_KEY", web.key)
    base = {"searxng": web.url(""), "brave": web.url("/res/v1/web/search"), "tavily": web.url("/tavily/search")}
    engine = make_engine("deny", web_search={"provider": provider, "base_url": base[provider],
                                             "api_key_env": None if provider == "searxng" else "SEARCH_KEY"})
    fake.script(Reply(tool_calls=[Call("web_search", '{"query": "asyncio taskgroup", "max_results": 2}')]),
                Reply(text="done"))
    events: list = []
    await engine.run_turn("search", events.append)
    [result] = results(events)
    assert result.ok, result.error
    assert "1. Asyncio docs\n   https://docs.python.org/3/library/asyncio.html\n   asyncio is a library" in result.output
    assert "2. TaskGroup" in result.output
    hits = result.wire()["data"]
    assert hits["kind"] == "webSearch" and hits["query"] == "asyncio taskgroup"
    assert hits["hits"][0] == {"title": "Asyncio docs", "url": "https://docs.python.org/3/library/asyncio.html",
                               "host": "docs.python.org", "snippet": hits["hits"][0]["snippet"]}
    assert hits["hits"][0]["snippet"].startswith("asyncio is a library") and len(hits["hits"]) == 2
    assert web.key not in json.dumps([e.wire() for e in events])
    assert any(tool["function"]["name"] == "web_search" for tool in fake.requests[0].body["tools"])


async def test_web_search_with_a_wrong_key_says_what_the_service_said_and_never_shows_the_key(make_engine, fake, web,
                                                                                               monkeypatch):
    monkeypatch.setenv("SEARCH_KEY", "wrong-key-0987654321")
    engine = make_engine("deny", web_search={"provider": "brave", "base_url": web.url("/res/v1/web/search"),
                                             "api_key_env": "SEARCH_KEY"})
    fake.script(Reply(tool_calls=[Call("web_search", '{"query": "x"}')]), Reply(text="done"))
    events: list = []
    await engine.run_turn("search", events.append)
    [result] = results(events)
    assert result.error.code == "network" and "HTTP 401" in result.error.message
    assert "subscription token is invalid" in result.error.message and "wrong-key" not in result.error.message


async def test_web_search_is_offered_only_when_configured(make_engine, fake):
    fake.script(Reply(text="hi"))
    await make_engine("deny").run_turn("hi", lambda e: None)
    names = [tool["function"]["name"] for tool in fake.requests[0].body["tools"]]
    assert "web_fetch" in names and "web_search" not in names


# ---- at the terminal and headless --------------------------------------------------------------------------------

def test_the_terminal_asks_host_first_with_the_url_escaped(env, workspace, fake):
    from test_approvals import Terminal

    url = "http://dоcs.example.invalid/a\u202eb?x=1"  # a Cyrillic о, and a right-to-left override in the path
    fake.script(Reply(tool_calls=[Call("web_fetch", json.dumps({"url": url}))]), Reply(text="done"))
    term = Terminal(env, workspace, "read it", "--model", "openai:gpt-4o", "--approve", "ask", "--json")
    screen = term.expect("Allow?")
    assert "web_fetch wants to fetch from the web:\r\nhost xn--dcs-sed.example.invalid" in screen
    assert "\u202e" not in screen and "[a]llow xn--dcs-sed.example.invalid for this session" in screen
    term.answer("a")
    code, out = term.finish()
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [e["decision"] for e in events if e["type"] == "approval"] == ["allowSession"]
    assert next(e for e in events if e["type"] == "toolResult")["error"]["code"] == "network"  # .invalid


def test_a_headless_run_never_fetches_an_unapproved_host(sunwell, fake, web, tmp_path):
    (tmp_path / "config" / "sunwell").mkdir(parents=True)
    (tmp_path / "config" / "sunwell" / "config.yaml").write_text("network:\n  allow: [localhost]\n")
    fake.script(Reply(tool_calls=[Call("web_fetch", json.dumps({"url": f"http://localhost:{web.port}/page.html"}))]),
                Reply(tool_calls=[Call("web_fetch", json.dumps({"url": web.url("/page.html")}))]), Reply(text="ok"))
    run = sunwell("run", "read it", "--model", "openai:gpt-4o", "--json")  # no terminal: approval deny
    assert run.code == 0, run.stderr
    first, second = [e for e in run.events if e["type"] == "toolResult"]
    assert first["ok"] and "Coroutines and Tasks" in first["output"]  # listed by name: fetched unasked
    assert second["error"]["code"] == "permission" and len(web.requests) == 1


async def test_web_search_stops_at_the_network_timeout_even_when_the_service_trickles(make_engine, fake, web):
    """One deadline for the whole answer, as for a fetch: a service that sends a byte every 0.2 s never trips a
    per-read timeout."""
    engine = make_engine("deny", network={"timeout": 1}, web_search={"provider": "searxng",
                                                                     "base_url": web.url("/trickle")})
    fake.script(Reply(tool_calls=[Call("web_search", '{"query": "x"}')]), Reply(text="done"))
    events: list = []
    await engine.run_turn("search", events.append)
    [result] = results(events)
    assert result.error.code == "network"
    assert result.error.message == "the searxng search service did not answer within 1 s"
