"""A learned API's calls at the network's edge (issue 28, "Calls"): a server name that resolves to a private address
is refused and the connection goes to the address that was checked (a resolver is injected, as in
test_web_fetch.py); an answer over the cap, one too slow, one too long; HEAD runs unasked. Real servers on
127.0.0.1 (tests/api_server.py), a real engine, the model's answers scripted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api_server import API_KEY, QUERY_SECRET, ApiServer, limits_document, pokeapi_document, two_keys_document
from fake_provider import Call, Reply
from person import Person
from sunwell.agent.engine import Engine
from sunwell.config import Settings
from sunwell.tools.base import ToolFailure
from sunwell.tools.learned.calls import send
from sunwell.tools.learned.document import read_api
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.policy import Network
from sunwell.wire.events import ToolResultEvent


@pytest.fixture
def api():
    with ApiServer() as server:
        yield server


def pokemon_retrieve(host: str, port: int):
    """The PokeAPI operation `pokemon_retrieve`, its server named `host`."""
    [op] = [op for op in read_api(pokeapi_document(f"http://{host}:{port}/api/v2"), "poke").operations
            if op.tool == "poke__pokemon_retrieve"]
    return op


def resolver(*answers: list[str]):
    """A resolver answering `answers` in turn, one per lookup; the names it was asked are in `.asked`."""
    pending = list(answers)

    async def answer(host: str, port: int) -> list[str]:
        answer.asked.append(host)
        return pending.pop(0)

    answer.asked = []
    return answer


# ---- the server's address --------------------------------------------------------------------------------------

@pytest.mark.parametrize("answers", [["10.0.0.7"], ["127.0.0.1"], ["169.254.169.254"], ["93.184.216.34", "127.0.0.1"],
                                     ["::ffff:127.0.0.1"]])
async def test_a_server_name_resolving_to_a_private_address_is_refused_before_anything_is_sent(api, answers):
    network = Network(HostRules(["*.test"]), resolver=resolver(answers))  # a wildcard never reaches a private one
    with pytest.raises(ToolFailure) as refused:
        await send(pokemon_retrieve("poke.test", api.port), {"id": "pikachu"}, network, [])
    assert refused.value.error.code == "permission"
    assert "poke.test resolves to" in refused.value.error.message and "network.allow" in refused.value.error.message
    assert api.requests == []


async def test_the_call_connects_to_the_address_that_was_checked():
    """DNS rebinding: one lookup per call, and the connection goes to its answer (the name alone would not
    resolve: `.test` is no real domain), whatever a second lookup would say."""
    with ApiServer() as api:
        rebinding = resolver(["127.0.0.1"], ["10.0.0.1"])
        network = Network(HostRules(["poke.test"]), resolver=rebinding)  # listed exactly: may be private
        status, _, body, url = await send(pokemon_retrieve("poke.test", api.port), {"id": "pikachu"}, network, [])
        assert status == 200 and json.loads(body)["name"] == "pikachu" and rebinding.asked == ["poke.test"]
        assert url == f"http://poke.test:{api.port}/api/v2/pokemon/pikachu/"
        assert api.requests[0][2]["Host"] == f"poke.test:{api.port}"  # the name, sent to the checked address


# ---- what comes back -------------------------------------------------------------------------------------------

@pytest.fixture
def make_engine(tmp_path: Path, workspace: Path, fake, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def make(approval: str = "auto", asker=None, network=None, **settings) -> Engine:
        return Engine(Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval=approval,
                               network={"allow": ["127.0.0.1"], **(network or {})}, **settings),
                      workspace, client=Person(approve=asker) if asker else Person())

    return make


async def calls(engine: Engine, fake, *tools: str) -> list[ToolResultEvent]:
    """One turn in which the model calls each of `tools` (no arguments) in turn; the results."""
    fake.script(*(Reply(tool_calls=[Call(name, "{}")]) for name in tools), Reply(text="done"))
    events: list = []
    await engine.run_turn("go", events.append)
    return [e for e in events if isinstance(e, ToolResultEvent)]


async def learned(make_engine, fake, api, **settings) -> Engine:
    engine = make_engine("auto", **settings)
    fake.script(Reply(tool_calls=[Call("learn_api", json.dumps({"source": api.url("/limits/openapi.json"),
                                                                "name": "lim"}))]), Reply(text="learned"))
    await engine.run_turn("learn it", lambda e: None)
    assert engine.learned.store.names() == ["lim"]
    return engine


async def test_an_answer_over_the_cap_is_refused_whether_its_length_is_declared_or_not(make_engine, fake, api):
    await learned(make_engine, fake, api)
    # a later session, with a lower cap; /limits/big stalls after its headers, so only its declared length can
    # refuse it before the timeout
    capped = make_engine("deny", network={"max_bytes": 100_000, "timeout": 5})
    big, endless = await calls(capped, fake, "lim__big", "lim__endless")
    for result in (big, endless):
        assert result.error.code == "network"
        assert "larger than network.max_bytes (100,000 bytes); not read" in result.error.message
        assert "ask for less" in result.error.suggestion
    assert api.endless_sent < 20_000_000  # the caller hung up near the cap, not at the end of the body


async def test_a_slow_answer_stops_at_the_timeout(make_engine, fake, api):
    await learned(make_engine, fake, api)
    [slow] = await calls(make_engine("deny", network={"timeout": 1}), fake, "lim__slow")
    assert slow.error.code == "network" and slow.error.message == "lim__slow timed out after 1 s"


async def test_a_long_json_answer_is_pretty_printed_and_cut_with_a_hint(make_engine, fake, api):
    await learned(make_engine, fake, api)
    [long] = await calls(make_engine("deny", max_output_bytes=8_000), fake, "lim__long")
    assert long.ok and long.output.startswith(f"HTTP 200 from GET {api.url('/limits/long')}\n")
    assert '[\n  {\n    "id": 0,\n    "name": "item 00000"\n  },' in long.output
    assert "item 04999" not in long.output and len(long.output.encode()) <= 8_000
    assert "\n[cut at " in long.output and "ask for less (a smaller `limit`, a later `offset`" in long.output
    model_saw = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "[cut at " in model_saw[-1]


async def test_head_runs_without_asking_like_get(make_engine, fake, api):
    await learned(make_engine, fake, api)
    asked = []

    async def asker(request):
        asked.append(request)
        return "deny"

    [status] = await calls(make_engine("ask", asker=asker), fake, "lim__status")
    assert status.ok and "HTTP 200 from HEAD" in status.output and asked == []
    assert status.wire()["data"] == {"kind": "apiAnswer", "api": "lim", "method": "HEAD", "status": 200,
                                     "url": api.url("/limits/status"), "contentType": status.data.content_type}
    assert api.requests[-1][:2] == ("HEAD", "/limits/status")


@pytest.mark.parametrize(("token_path", "words"), [("/limits/endless", "larger than network.max_bytes (100,000 bytes)"),
                                                     ("/limits/slow", "lim__long timed out after 1 s")])
async def test_an_oauth2_token_is_asked_under_the_calls_cap_and_deadline(make_engine, fake, api, workspace,
                                                                       token_path, words):
    """The token URL answers without end, or late: the token is asked through the same way out as the call, so
    the cap and the call's one deadline hold there too."""
    document = limits_document(api.url("/limits"))
    document["components"] = {"securitySchemes": {"oauth": {"type": "oauth2", "flows": {"clientCredentials": {
        "tokenUrl": api.url(token_path), "scopes": {}}}}}}
    document["paths"]["/long"]["get"]["security"] = [{"oauth": []}]
    (workspace / "limits.json").write_text(json.dumps(document))
    engine = make_engine("auto")
    fake.script(Reply(tool_calls=[Call("learn_api", '{"source": "limits.json", "name": "lim"}')]), Reply(text="ok"))
    await engine.run_turn("learn it", lambda e: None)
    engine.learned.credentials.set("lim", "oauth", "client-1:client-secret-99")
    [long] = await calls(make_engine("deny", network={"max_bytes": 100_000, "timeout": 1}), fake, "lim__long")
    assert long.error.code == "network" and words in long.error.message, long.error
    assert api.endless_sent < 20_000_000
    assert not any(path == "/limits/long" for _, path, _, _ in api.requests)


# ---- never in a log --------------------------------------------------------------------------------------------

def test_neither_the_search_key_nor_a_learned_credential_reaches_a_log(sunwell, fake, tmp_path, workspace):
    """Through the real CLI with --debug (every library's log on stderr): the search service's key, a learned API's
    header key and its query key (in the URL, which an HTTP library logs) are sent, and appear nowhere else than in
    the credentials file: not in the output, the debug log, the session store or the audit log."""
    from web_server import WebServer

    with ApiServer() as api, WebServer() as web:
        config = tmp_path / "config" / "sunwell" / "config.yaml"
        config.parent.mkdir(parents=True)
        config.write_text(f"network: {{allow: [127.0.0.1]}}\nweb_search: {{provider: brave, base_url: "
                          f"'{web.url('/res/v1/web/search')}', api_key_env: SEARCH_KEY}}\n")
        (workspace / "keyed.json").write_text(json.dumps(two_keys_document(api.url("/keyed"))))
        extra = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "SEARCH_KEY": web.key}
        learned = sunwell("--debug", "tools", "learn", "keyed.json", "--name", "keyed",
                          input=f"{API_KEY}\n{QUERY_SECRET}\n", extra_env=extra)
        assert learned.code == 0, learned.stderr
        fake.script(Reply(tool_calls=[Call("web_search", '{"query": "asyncio"}')]),
                    Reply(tool_calls=[Call("keyed__echo", '{"say": "hi"}')]), Reply(text="done"))
        run = sunwell("--debug", "run", "search, then echo", "--model", "openai:gpt-4o", "--json", extra_env=extra)
        assert run.code == 0, run.stderr
        search, echo = [e for e in run.events if e["type"] == "toolResult"]
        assert search["ok"] and "Asyncio docs" in search["output"] and echo["ok"] and '"say": "hi"' in echo["output"]
        # they were sent, to the services that need them
        assert web.requests[-1][2]["X-Subscription-Token"] == web.key
        _, path, headers, _ = api.requests[-1]
        assert headers["X-Api-Key"] == API_KEY and f"k={QUERY_SECRET}" in path
        assert "DEBUG" in run.stderr  # the debug log was on

    kept = {p.name: p.read_bytes().decode("latin-1") for p in (tmp_path / "data").rglob("*") if p.is_file()}
    assert "sessions.db" in kept and any(name.endswith(".jsonl") for name in kept)  # the session store, the audit
    assert API_KEY in kept.pop("credentials.json")
    for secret in (web.key, API_KEY, QUERY_SECRET):
        for name, text in {**kept, "learn stdout": learned.stdout, "learn stderr": learned.stderr,
                           "run stdout": run.stdout, "run stderr": run.stderr}.items():
            assert secret not in text, f"{secret} is in {name}"
