"""A large API's tags asked of the user: `learn_api` on a document with more operations than are offered at once
(store.OFFER_LIMIT) and no `tags` asks which tags to offer through `ask_user`'s channel (the terminal prompt, the
sidecar's `sunwell/ask`), then asks the approval with only those operations and stores them; headless, with
`--approve deny`, with no answer or an unknown tag it is refused with the tags listed, as when no one can be asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api_server import ApiServer
from fake_provider import Call, Reply
from sunwell.tools.learned.store import OFFER_LIMIT
from test_approvals import Terminal

pytest_plugins = ["test_sidecar_support"]

OPENAI = "openai:gpt-4o"
TAGS = {"pokemon": 20, "berry": 12, "item": 10, "move": 8, "location": 3, "machine": 3, "contest": 2,
        "encounter": 2, "evolution": 2, "game": 2}
"""64 operations under ten tags: more than the limit, and more tags than the question offers."""


def large_document(base: str) -> dict:
    paths = {f"/{tag}/{i}/": {"get": {"operationId": f"{tag}_{i}", "summary": f"{tag} {i}", "tags": [tag],
                                      "responses": {"200": {"description": "ok"}}}}
             for tag, count in TAGS.items() for i in range(count)}
    return {"openapi": "3.0.3", "info": {"title": "PokeAPI", "version": "2"}, "servers": [{"url": base}],
            "paths": paths}


@pytest.fixture
def api(tmp_path: Path):
    config = tmp_path / "config" / "sunwell"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("network:\n  allow: [127.0.0.1]\n")
    with ApiServer() as server:
        server.document_override = json.dumps(large_document(server.url("/api/v2")))
        yield server


def learn_call(api: ApiServer) -> Reply:
    return Reply(tool_calls=[Call("learn_api", json.dumps({"source": api.url("/openapi.json"), "name": "pokeapi"}))])


def stored(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "data" / "learned" / "pokeapi.json").read_text())


def test_the_document_is_larger_than_the_limit():
    assert sum(TAGS.values()) > OFFER_LIMIT


def test_the_terminal_asks_which_tags_then_approves_only_their_operations(env, workspace, fake, api, tmp_path):
    fake.script(learn_call(api), Reply(text="learned"))
    term = Terminal(env, workspace, "learn pokeapi", "--model", OPENAI, "--approve", "ask", "--json")
    screen = term.expect("empty to skip: ")
    assert "pokeapi" in screen and "64 operations" in screen
    assert "  1. pokemon (20)" in screen and "  2. berry (12)" in screen and "  8. encounter (2)" in screen
    assert "  9." not in screen
    term.answer("pokemon, berry")
    screen = term.expect("Allow?")
    assert "learn the API pokeapi: 32 tools" in screen and "pokeapi__item_0" not in screen
    term.answer("y")
    code, out = term.finish()
    assert code == 0
    [result] = [e for e in map(json.loads, out.splitlines()) if e["type"] == "toolResult"]
    assert result["ok"] and "32 tools" in result["output"], result
    assert term.screen.count("empty to skip: ") == 1  # asked once for the call, preview and run alike
    api_stored = stored(tmp_path)
    assert api_stored["tags"] == ["pokemon", "berry"] and len(api_stored["operations"]) == 64


def test_headless_deny_or_no_answer_is_refused_with_the_tags_listed(sunwell, env, workspace, fake, api, tmp_path):
    for flags in ([], ["--approve", "deny"]):
        fake.script(learn_call(api), Reply(text="refused"))
        run = sunwell("run", "learn pokeapi", "--model", OPENAI, "--json", *flags)
        assert run.code == 0, run.stderr
        [result] = [e for e in run.events if e["type"] == "toolResult"]
        assert result["error"]["code"] == "validation" and "pokemon (20), berry (12)" in result["error"]["message"]
    fake.script(learn_call(api), Reply(text="refused"))
    term = Terminal(env, workspace, "learn pokeapi", "--model", OPENAI, "--approve", "ask", "--json")
    term.expect("empty to skip: ")
    term.answer("")
    code, out = term.finish()
    [result] = [e for e in map(json.loads, out.splitlines()) if e["type"] == "toolResult"]
    assert code == 0 and result["error"]["code"] == "validation" and "Allow?" not in term.screen
    assert not (tmp_path / "data" / "learned" / "pokeapi.json").exists()


async def test_the_sidecar_asks_with_the_tags_as_options(sidecar_factory, fake, api, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI,
                                     "clientCapabilities": {"ask": True}})
    answers = iter([{"answer": "pikachu"}, {"answer": "berry (12)"}])
    sidecar.reply = lambda params: next(answers)
    sidecar.answer = lambda params: {"decision": "allow"}
    fake.script(learn_call(api), Reply(text="unknown tag"))
    _, events = await sidecar.chat("learn pokeapi")
    [refused] = [e for e in events if e["type"] == "toolResult"]
    assert refused["error"]["code"] == "validation" and "pikachu" in refused["error"]["message"]
    assert "pokemon (20)" in refused["error"]["message"] and sidecar.approvals == []

    fake.script(learn_call(api), Reply(text="learned"))
    _, events = await sidecar.chat("learn pokeapi, berries only")
    [learned] = [e for e in events if e["type"] == "toolResult"]
    assert learned["ok"] and "12 tools" in learned["output"], learned
    _, second = sidecar.questions
    assert "64 operations" in second["question"] and second["callId"] == learned["callId"]
    assert second["options"] == ["pokemon (20)", "berry (12)", "item (10)", "move (8)", "location (3)",
                                 "machine (3)", "contest (2)", "encounter (2)"]
    [approval] = sidecar.approvals
    assert [op["tool"] for op in approval["preview"]["operations"]] == [f"pokeapi__berry_{i}" for i in range(12)]
    assert stored(tmp_path)["tags"] == ["berry"]
