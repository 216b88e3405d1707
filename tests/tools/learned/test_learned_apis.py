"""Learned APIs end to end: a real engine, the scripted fake provider, and two real APIs on 127.0.0.1
(tests/api_server.py: a PokeAPI-shaped one and one that needs an API key), which the user's config allows by their
exact address. Attacks first: a document that points elsewhere or at a private address, names that collide, a
huge or recursive document, one that is not a document, a redirect off the API's host, and a credential the
model tries to read back."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from api_server import API_KEY, ApiServer, keyed_document, pokeapi_document
from fake_provider import Call, Reply
from person import Person
from sunwell.agent.engine import Engine
from sunwell.config import Settings
from sunwell.tools.base import ToolFailure
from sunwell.tools.learned.document import NotAnApi, parse_text, read_api
from sunwell.tools.learned.schemas import MAX_NODES
from sunwell.wire.events import ApprovalEvent, ToolResultEvent

ALLOW_LOCAL = {"network": {"allow": ["127.0.0.1"]}}


@pytest.fixture
def api():
    with ApiServer() as server:
        yield server


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch):
    """Never the machine's keyring: credentials go to the data dir's 0600 file."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv("SUNWELL_LEARNED_CREDENTIALS", raising=False)


@pytest.fixture
def make_engine(tmp_path: Path, workspace: Path, fake, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def make(approval: str = "auto", asker=None, **settings) -> Engine:
        settings = {**ALLOW_LOCAL, **settings}
        return Engine(Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval=approval, **settings),
                      workspace, client=Person(approve=asker) if asker else Person())

    return make


async def turn(engine: Engine, fake, *calls: tuple[str, dict], text: str = "go", **options) -> list:
    fake.script(*(Reply(tool_calls=[Call(name, json.dumps(args))]) for name, args in calls), Reply(text="done"))
    events: list = []
    await engine.run_turn(text, events.append, **options)
    return events


def results(events: list) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


def offered(fake) -> list[str]:
    return [tool["function"]["name"] for tool in fake.requests[-1].body.get("tools", [])]


async def learn(engine: Engine, fake, source: str, name: str, **extra) -> ToolResultEvent:
    [result] = results(await turn(engine, fake, ("learn_api", {"source": source, "name": name, **extra})))
    return result


# ---- attacks ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("server", ["http://169.254.169.254/latest", "http://10.0.0.7/api", "http://[::1]:8080/",
                                    "http://2130706433/v2"])
async def test_a_document_whose_servers_are_private_addresses_is_refused_even_in_auto_mode(make_engine, fake, api,
                                                                                           server):
    document = pokeapi_document(server)
    api.document_override = json.dumps(document)
    engine = make_engine("auto", network={"allow": ["127.0.0.1"]})
    result = await learn(engine, fake, api.url("/openapi.json"), "poke")
    if server == "http://2130706433/v2":  # 127.0.0.1 in another spelling: listed, so learned (over http: exact)
        assert result.ok, result
        return
    assert not result.ok and result.error.code == "permission", result
    assert engine.learned.store.names() == []


async def test_a_document_whose_servers_are_another_host_than_its_own_is_refused(make_engine, fake, api):
    api.document_override = json.dumps(pokeapi_document(f"http://localhost:{api.port}/api/v2"))
    engine = make_engine("auto", network={"allow": ["127.0.0.1"]})
    result = await learn(engine, fake, api.url("/openapi.json"), "poke")
    assert result.error.code == "permission" and "another host" in result.error.message
    api.document_override = json.dumps(pokeapi_document("https://api.example.com/v2"))
    result = await learn(engine, fake, api.url("/openapi.json"), "poke")
    assert result.error.code == "permission" and "api.example.com" in result.error.message
    assert engine.learned.store.names() == []


async def test_plain_http_needs_that_exact_host_listed(make_engine, fake, workspace):
    (workspace / "api.json").write_text(json.dumps(pokeapi_document("http://pokeapi.example/v2")))
    engine = make_engine("auto", network={"allow": ["*.example"]})  # a wildcard is not the exact host
    result = await learn(engine, fake, "api.json", "poke")
    assert result.error.code == "permission" and "not https" in result.error.message


def test_operation_ids_equal_to_core_tools_or_colliding_after_sanitising_stay_apart():
    document = pokeapi_document("https://api.example.com")
    responses = {"200": {"description": "ok"}}
    document["paths"] = {
        "/a": {"get": {"operationId": "read_file", "responses": responses}},
        "/b": {"get": {"operationId": "get pokemon", "responses": responses}},
        "/c": {"get": {"operationId": "get/pokemon", "responses": responses}},
        "/d": {"get": {"operationId": "get_pokemon", "responses": responses}},
        "/e": {"get": {"operationId": "x" * 200, "responses": responses}},
        "/f": {"get": {"operationId": "x" * 199 + "y", "responses": responses}},
        "/g/{id}": {"get": {"responses": responses, "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]}},
    }
    names = [op.tool for op in read_api(document, "poke").operations]
    assert names[0] == "poke__read_file"  # namespaced: never the core read_file
    assert len(set(names)) == len(names) == 7
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) and name.startswith("poke__") for name in names)
    assert names[6] == "poke__get_g_id"


def test_five_thousand_operations_are_learned_whole_and_offered_by_the_tags_chosen(tmp_path):
    from sunwell.tools.learned.learning import choose_tags
    from sunwell.tools.learned.store import LearnedApi

    responses = {"200": {"description": "ok"}}
    document = {"openapi": "3.0.3", "info": {"title": "Huge", "version": "1"},
                "servers": [{"url": "https://huge.example"}],
                "paths": {f"/r{i}": {"get": {"operationId": f"op{i}", "tags": [f"t{i % 50}"], "responses": responses}}
                          for i in range(5000)}}
    found = read_api(document, "huge")
    assert len(found.operations) == 5000
    learned = LearnedApi("huge", "f", "Huge", "1", ["huge.example"], found.operations)
    with pytest.raises(ToolFailure) as refused:
        choose_tags(learned, None)
    assert "5,000 operations" in refused.value.error.message and "t0 (100)" in refused.value.error.message
    assert len(choose_tags(learned, ["t3", "t7"]).offered()) == 200


def test_more_operations_than_the_limit_are_refused_before_validation():
    document = {"openapi": "3.0.3", "info": {"title": "x", "version": "1"},
                "paths": {f"/r{i}": {m: {} for m in ("get", "put", "post", "delete")} for i in range(3000)}}
    with pytest.raises(NotAnApi, match="12,000 operations"):
        read_api(document, "x")


def test_recursive_and_fanning_out_references_are_inlined_within_limits():
    node = {"type": "object", "properties": {"name": {"type": "string"},
                                             "child": {"$ref": "#/components/schemas/Node"},
                                             "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}
    fan = {f"L{level}": {"type": "object", "properties": {f"p{i}": {"$ref": f"#/components/schemas/L{level + 1}"}
                                                         for i in range(10)}} for level in range(8)}
    fan["L8"] = {"type": "string"}
    document = {"openapi": "3.0.3", "info": {"title": "x", "version": "1"}, "servers": [{"url": "https://x.example"}],
                "paths": {"/tree": {"post": {"operationId": "plant", "requestBody": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Node"}}}}, "responses": {"200": {"description": "ok"}}}},
                          "/fan": {"post": {"operationId": "fan", "requestBody": {"content": {"application/json": {
                              "schema": {"$ref": "#/components/schemas/L0"}}}}, "responses": {"200": {"description": "ok"}}}}},
                "components": {"schemas": {"Node": node, **fan}}}
    tree, fanned = read_api(document, "x").operations
    text = json.dumps(tree.schema)
    assert "nested further" in text and len(text) < 5_000
    assert text.count('"name"') >= 3  # a few levels of the tree are there
    assert json.dumps(fanned.schema).count('"type"') <= MAX_NODES + 5 and len(json.dumps(fanned.schema)) < 60_000


@pytest.mark.parametrize("text,needle", [
    ("<!doctype html><html><body>PokeAPI docs</body></html>", "not an OpenAPI document"),
    ("[1, 2, 3]", "not a mapping"),
    ('{"openapi": "3.0.3"}', "not a valid OpenAPI document"),
    ('{"swagger": "1.2", "paths": {}}', "not one Sunwell reads"),
    ("a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n", "alias"),
    (('{"openapi": "3.0.3", "info": {"title": "x", "version": "1"}, "paths": {"/a": {"get": {"responses": '
     '{"200": {"$ref": "https://evil.example/r.json"}}}}}}'), "another document"),
    (('{"openapi": "3.0.3", "info": {"title": "x", "version": "1"}, "paths": {"/a": {"get": {"responses": '
     '{"200": {"$ref": "file:///etc/passwd"}}}}}}'), "another document"),
])
def test_what_is_not_a_document_is_refused_with_one_line(text, needle):
    with pytest.raises(NotAnApi) as refused:
        read_api(parse_text(text), "x")
    assert needle in str(refused.value) and "\n" not in str(refused.value)


async def test_an_operation_that_redirects_to_another_host_is_not_followed_and_its_key_stays(make_engine, fake, api):
    engine = make_engine("auto", network={"allow": ["127.0.0.1", "localhost"]})
    assert (await learn(engine, fake, api.url("/keyed/openapi.yaml"), "notes")).ok
    engine.learned.credentials.set("notes", "key", API_KEY)
    [result] = results(await turn(engine, fake, ("notes__moved", {})))
    assert result.error.code == "permission" and "another host" in result.error.message
    assert [path for _, path, _, _ in api.requests][-1] == "/keyed/moved"  # localhost was never asked


async def test_a_credential_never_reaches_the_model_by_echo_error_or_argument(make_engine, fake, api, tmp_path):
    engine = make_engine("auto")
    assert (await learn(engine, fake, api.url("/keyed/openapi.yaml"), "notes")).ok
    engine.learned.credentials.set("notes", "key", API_KEY)
    events = await turn(engine, fake, ("notes__echo", {"say": "hi"}), ("notes__private", {}),
                        ("notes__echo", {"say": API_KEY}), ("notes__echo", {"X-Api-Key": "mine"}))
    echo, private, argued, header = results(events)
    assert echo.ok and "[REDACTED]" in echo.output and '"say": "hi"' in echo.output
    assert private.error.code == "execution" and "HTTP 401" in private.error.message
    assert "[REDACTED]" in private.error.message
    assert argued.error.code == "permission" and "secret" in argued.error.message  # refused before sending
    assert header.error.code == "validation"  # the auth header is no argument of the tool
    sent_key = [headers.get("X-Api-Key") for _, path, headers, _ in api.requests if path.startswith("/keyed/echo")]
    assert sent_key == [API_KEY]
    # what came back from the API, and the audit of every call (the model's own words aside: it wrote them)
    came_back = json.dumps([r.model_dump() for r in results(events)])
    audit = "".join(p.read_text() for p in (tmp_path / "data" / "audit").glob("*.jsonl"))
    model_saw = json.dumps([m for r in fake.requests for m in r.body["messages"] if m["role"] == "tool"])
    for text in (came_back, audit, model_saw):
        assert API_KEY not in text


# ---- learning, approving, calling ----------------------------------------------------------------------------

async def test_learn_pokeapi_is_asked_with_its_operations_and_hosts_then_called_in_a_later_session(
        make_engine, fake, api, tmp_path):
    asked = []

    async def asker(request):
        asked.append(request)
        return "allowSession"

    engine = make_engine("ask", asker=asker)
    result = await learn(engine, fake, api.url("/openapi.json"), "pokeapi")
    assert result.ok and "3 tools" in result.output
    [request] = asked
    assert request.preview.wire() == {
        "kind": "learn", "name": "pokeapi", "hosts": ["127.0.0.1"], "changes": None,
        "operations": [
            {"tool": "pokeapi__pokemon_list", "method": "GET", "path": "/pokemon/", "summary": "List Pokémon"},
            {"tool": "pokeapi__pokemon_retrieve", "method": "GET", "path": "/pokemon/{id}/",
             "summary": "Get a Pokémon"},
            {"tool": "pokeapi__type_retrieve", "method": "GET", "path": "/type/{id}/", "summary": "Get a type"}]}
    config = (tmp_path / "config" / "sunwell" / "config.yaml").read_text()
    assert f'pokeapi: {{source: "{api.url("/openapi.json")}", rate_per_min: 30}}' in config
    again = await learn(engine, fake, api.url("/openapi.json"), "pokeapi")  # allowSession remembers nothing
    assert again.ok and len(asked) == 2 and asked[1].preview.changes == {"added": [], "removed": [], "changed": []}

    later = make_engine("ask", asker=asker)  # a later run: GETs are not asked
    events = await turn(later, fake, ("pokeapi__pokemon_retrieve", {"id": "pikachu"}),
                        ("pokeapi__pokemon_list", {"limit": 2, "offset": 2}), text="what type is pikachu?")
    pikachu, page = results(events)
    assert pikachu.ok and '"electric"' in pikachu.output and "not instructions" in pikachu.output
    assert page.ok and '"venusaur"' in page.output and "offset=4" in page.output
    assert len(asked) == 2
    assert "pokeapi__pokemon_retrieve" in offered(fake)


async def test_a_path_parameter_cannot_climb_out_of_its_segment(make_engine, fake, api):
    engine = make_engine("auto")
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    [result] = results(await turn(engine, fake, ("pokeapi__pokemon_retrieve", {"id": "../../keyed/echo?x=1"})))
    assert result.error.code == "execution" and "404" in result.error.message
    assert api.requests[-1][1] == "/api/v2/pokemon/..%2F..%2Fkeyed%2Fecho%3Fx%3D1/"


async def test_a_post_asks_every_time_unless_allowed_for_the_session_even_on_an_allowed_host(make_engine, fake,
                                                                                            api):
    asked = []

    async def asker(request):
        asked.append(request)
        return "allowSession"

    engine = make_engine("ask", asker=asker)
    assert (await learn(engine, fake, api.url("/keyed/openapi.yaml"), "notes")).ok
    engine.learned.credentials.set("notes", "key", API_KEY)
    events = await turn(engine, fake, ("notes__add_note", {"body": {"text": "one"}}),
                        ("notes__add_note", {"body": {"text": "two"}}))
    assert all(r.ok for r in results(events)) and api.notes == [{"text": "one"}, {"text": "two"}]
    assert [r.preview.kind for r in asked] == ["learn", "tool"]
    approvals = [(e.decision, e.by) for e in events if isinstance(e, ApprovalEvent)]
    assert approvals == [("allowSession", "user"), ("allow", "policy")]
    denied = make_engine("deny")
    [result] = results(await turn(denied, fake, ("notes__add_note", {"body": {"text": "three"}})))
    assert result.error.code == "denied" and len(api.notes) == 2


async def test_learn_api_is_denied_in_deny_mode_and_from_a_host_not_allowed(make_engine, fake, api):
    result = await learn(make_engine("deny"), fake, api.url("/openapi.json"), "pokeapi")
    assert result.error.code == "denied"
    result = await learn(make_engine("auto", network={"allow": []}), fake, api.url("/openapi.json"), "pokeapi")
    assert result.error.code == "permission"


async def test_learned_tools_respect_trust_tools_and_dry_runs(make_engine, fake, api):
    engine = make_engine("auto")
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    await turn(engine, fake, trust="discovery")
    assert not any(name.startswith("pokeapi__") for name in offered(fake))
    await turn(engine, fake, tool_names=["read_file", "pokeapi__type_retrieve"])
    assert offered(fake) == ["read_file", "pokeapi__type_retrieve"]
    dry = make_engine("auto", dry_run="risky")
    [result] = results(await turn(dry, fake, ("pokeapi__type_retrieve", {"id": "fire"})))
    assert result.error.code == "dry_run"


async def test_learned_tools_are_offered_and_run_from_the_next_request_of_the_same_turn(make_engine, fake, api):
    engine = make_engine("auto")
    events = await turn(engine, fake, ("learn_api", {"source": api.url("/openapi.json"), "name": "pokeapi"}),
                        ("pokeapi__pokemon_retrieve", {"id": "pikachu"}))
    learned, called = results(events)
    assert learned.ok and "from your next request on" in learned.output
    assert called.ok and '"electric"' in called.output
    first, second, third = ([tool["function"]["name"] for tool in request.body.get("tools", [])]
                            for request in fake.requests[-3:])
    assert "learn_api" in first and not any(name.startswith("pokeapi__") for name in first)
    assert "pokeapi__pokemon_retrieve" in second and second == third


@pytest.mark.parametrize("narrowing", ["tools", "lens"])
async def test_a_tool_list_or_lens_without_the_learned_tools_still_leaves_them_out_after_learning(
        make_engine, fake, api, workspace, narrowing):
    (workspace / "learner.lens").write_text("name: learner\ndescription: Learns, reads.\n"
                                            "tool_policy:\n  allowed_tools: [read_file, learn_api]\n")
    options = {"tool_names": ["read_file", "learn_api"]} if narrowing == "tools" else {"lens": "learner.lens"}
    events = await turn(make_engine("auto"), fake,
                        ("learn_api", {"source": api.url("/openapi.json"), "name": "pokeapi"}),
                        ("pokeapi__type_retrieve", {"id": "fire"}), **options)
    learned, refused = results(events)
    assert learned.ok and refused.error.code == "permission"
    for request in fake.requests[-3:]:
        assert sorted(tool["function"]["name"] for tool in request.body["tools"]) == ["learn_api", "read_file"]


async def test_the_rate_limit_holds_per_api(make_engine, fake, api):
    engine = make_engine("auto", learned_apis={"pokeapi": {"source": "x", "rate_per_min": 2}})
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    events = await turn(engine, fake, *[("pokeapi__pokemon_retrieve", {"id": name})
                                          for name in ("pikachu", "bulbasaur", "squirtle")])
    assert [r.error.code if r.error else "ok" for r in results(events)] == ["ok", "ok", "rate_limit"]


async def test_a_small_window_keeps_the_learned_tools_the_request_is_about(make_engine, fake, api):
    engine = make_engine("auto", models={"openai:gpt-4o": {"contextWindow": 4096}})
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    await turn(engine, fake, text="read a.txt and fix the bug")
    assert "read_file" in offered(fake) and not any(name.startswith("pokeapi__") for name in offered(fake))
    await turn(engine, fake, text="what type is the pokemon pikachu?")
    assert "pokeapi__pokemon_retrieve" in offered(fake)


# ---- the CLI ---------------------------------------------------------------------------------------------------

def test_cli_learns_with_the_key_from_stdin_then_a_later_run_calls_it(sunwell, fake, api, tmp_path, env):
    config = tmp_path / "config" / "sunwell"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("# mine\nnetwork:\n  allow: [127.0.0.1]  # the test APIs\n")
    extra = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    learned = sunwell("tools", "learn", api.url("/keyed/openapi.yaml"), "--name", "notes", input=API_KEY + "\n",
                      extra_env=extra)
    assert learned.code == 0, learned.stderr
    assert "notes__echo  GET /echo" in learned.stdout and "calls: 127.0.0.1" in learned.stdout
    assert API_KEY not in learned.stdout
    stored = tmp_path / "data" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and API_KEY in stored.read_text()
    text = (config / "config.yaml").read_text()
    assert text.startswith("# mine\nnetwork:\n  allow: [127.0.0.1]  # the test APIs\n") and "notes: {source:" in text

    listing = sunwell("tools", "list", "--json", extra_env=extra)
    [row] = [json.loads(line) for line in listing.stdout.splitlines()]
    assert row["name"] == "notes" and row["operations"] == 4 and row["credentials"] == {"key": True}

    fake.script(Reply(tool_calls=[Call("notes__echo", '{"say": "hello"}')]), Reply(text="done"))
    run = sunwell("run", "echo hello", "--model", "openai:gpt-4o", "--json", extra_env=extra)
    [result] = [e for e in run.events if e["type"] == "toolResult"]
    assert result["ok"] and '"say": "hello"' in result["output"] and API_KEY not in run.stdout

    relearn = sunwell("tools", "learn", api.url("/keyed/openapi.yaml"), "--name", "notes", input="\n",
                      extra_env=extra)
    assert "changed since last time: nothing" in relearn.stdout
    forgot = sunwell("tools", "forget", "notes", extra_env=extra)
    assert forgot.code == 0 and "notes" not in stored.read_text()
    assert "notes:" not in (config / "config.yaml").read_text()
    assert sunwell("tools", "list", extra_env=extra).stdout.startswith("no learned APIs")


def test_cli_refuses_a_bad_name_and_a_document_that_is_not_one(sunwell, api, tmp_path, workspace):
    assert sunwell("tools", "learn", api.url("/openapi.json"), "--name", "Poke API").code == 2
    (workspace / "page.html").write_text("<html>no</html>")
    run = sunwell("tools", "learn", "page.html", "--name", "page")
    assert run.code == 1 and "not an OpenAPI document" in run.stderr


def test_keyed_document_is_read_as_yaml():
    document = read_api(parse_text(keyed_document("https://notes.example/keyed")), "notes")
    assert [scheme.name for scheme in document.schemes] == ["key"]
    echo = document.operations[0]
    assert "X-Api-Key" not in echo.schema["properties"]  # the auth header is Sunwell's, not the model's


async def test_a_swagger_2_document_with_a_query_key_and_a_body(make_engine, fake, api, workspace):
    document = {
        "swagger": "2.0", "info": {"title": "Old", "version": "1"}, "host": f"127.0.0.1:{api.port}",
        "basePath": "/keyed", "schemes": ["http"],
        "securityDefinitions": {"q": {"type": "apiKey", "in": "query", "name": "api_key"},
                                "tok": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
        "security": [{"q": [], "tok": []}],
        "paths": {
            "/echo": {"get": {"operationId": "echo", "parameters": [
                {"name": "say", "in": "query", "type": "string", "description": "What to say."},
                {"name": "api_key", "in": "query", "type": "string"}], "responses": {"200": {"description": "ok"}}}},
            "/notes": {"post": {"operationId": "add", "parameters": [
                {"name": "note", "in": "body", "required": True, "schema": {"type": "object", "properties": {
                    "text": {"type": "string"}}}}], "responses": {"201": {"description": "ok"}}}}}}
    (workspace / "old.json").write_text(json.dumps(document))
    engine = make_engine("auto")
    assert (await learn(engine, fake, "old.json", "old")).ok
    engine.learned.credentials.set("old", "q", "query-secret-123")
    engine.learned.credentials.set("old", "tok", API_KEY)
    echo_tool = next(t for t in engine.learned.tools() if t.name == "old__echo")
    assert set(echo_tool.parameters["properties"]) == {"say"}  # the key's query parameter is Sunwell's
    echo, add = results(await turn(engine, fake, ("old__echo", {"say": "hi"}), ("old__add", {"body": {"text": "t"}})))
    assert echo.ok and '"api_key": "[REDACTED]"' in echo.output and "query-secret-123" not in echo.output
    assert add.ok and api.notes == [{"text": "t"}]
    method, path, _, _ = api.requests[-2]
    assert method == "GET" and "say=hi" in path and "api_key=query-secret-123" in path


async def test_a_call_without_its_credential_says_how_to_give_it(make_engine, fake, api):
    engine = make_engine("auto")
    learned = await learn(engine, fake, api.url("/keyed/openapi.yaml"), "notes")
    assert "needs the credential key" in learned.output and "sunwell tools learn" in learned.output
    [result] = results(await turn(engine, fake, ("notes__echo", {"say": "x"})))
    assert result.error.code == "permission" and "Learned APIs" in result.error.suggestion
    assert not any(path.startswith("/keyed/echo") for _, path, _, _ in api.requests)


async def test_bearer_basic_and_oauth2_client_credentials_are_sent_by_sunwell_and_masked(make_engine, fake, api,
                                                                                        workspace):
    from api_server import TOKEN

    def whoami(scheme: str) -> dict:
        return {"get": {"operationId": f"who_{scheme}", "security": [{scheme: []}],
                        "responses": {"200": {"description": "ok"}}}}

    document = {"openapi": "3.1.0", "info": {"title": "Auth", "version": "1"},
                "servers": [{"url": api.url("/auth")}],
                "components": {"securitySchemes": {
                    "bearer": {"type": "http", "scheme": "bearer"}, "basic": {"type": "http", "scheme": "basic"},
                    "oauth": {"type": "oauth2", "flows": {"clientCredentials": {
                        "tokenUrl": api.url("/auth/token"), "scopes": {}}}}}},
                "paths": {"/whoami": whoami("bearer"), "/whoami/": whoami("basic"), "/whoami//": whoami("oauth")}}
    (workspace / "auth.json").write_text(json.dumps(document))
    engine = make_engine("auto")
    assert (await learn(engine, fake, "auth.json", "auth")).ok
    for scheme, value in (("bearer", "bearer-token-123456"), ("basic", "ann:password-123456"),
                          ("oauth", "client-1:client-secret-99")):
        engine.learned.credentials.set("auth", scheme, value)
    found = results(await turn(engine, fake, ("auth__who_bearer", {}), ("auth__who_basic", {}),
                               ("auth__who_oauth", {})))
    assert all(r.ok for r in found), found
    sent = [headers.get("Authorization") for _, path, headers, _ in api.requests if path.startswith("/auth/whoami")]
    assert sent[0] == "Bearer bearer-token-123456" and sent[1].startswith("Basic ") and sent[2] == f"Bearer {TOKEN}"
    shown = json.dumps([r.output for r in found])
    for secret in ("bearer-token-123456", TOKEN, sent[1].split()[1]):
        assert secret not in shown


async def test_relearning_a_changed_document_shows_what_changed_before_it_is_stored(make_engine, fake, api):
    asked = []

    async def asker(request):
        asked.append(request)
        return "deny"

    engine = make_engine("auto")
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    changed = pokeapi_document(api.url("/api/v2"))
    del changed["paths"]["/type/{id}/"]
    changed["paths"]["/berry/{id}/"] = {"get": {"operationId": "berry_retrieve", "summary": "Get a berry",
                                                "parameters": [{"$ref": "#/components/parameters/Id"}],
                                                "responses": {"200": {"description": "ok"}}}}
    changed["components"]["parameters"]["Id"]["schema"] = {"type": "integer"}
    api.document_override = json.dumps(changed)
    asking = make_engine("ask", asker=asker)
    result = await learn(asking, fake, api.url("/openapi.json"), "pokeapi")
    assert result.error.code == "denied"
    assert asked[0].preview.changes == {"added": ["pokeapi__berry_retrieve"], "removed": ["pokeapi__type_retrieve"],
                                        "changed": ["pokeapi__pokemon_retrieve"]}
    stored = engine.learned.store.get("pokeapi")
    assert [op.tool for op in stored.operations][-1] == "pokeapi__type_retrieve"  # denied: unchanged


async def test_dot_segments_connection_headers_and_secret_headers_never_leave(make_engine, fake, api, workspace,
                                                                             monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-5f3a9c2e71d04b8e")
    document = pokeapi_document(api.url("/api/v2"))
    document["paths"]["/pokemon/{id}/"]["get"]["parameters"] = [
        {"name": "Host", "in": "header", "schema": {"type": "string"}},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}]
    (workspace / "poke.json").write_text(json.dumps(document))
    engine = make_engine("auto")
    assert (await learn(engine, fake, "poke.json", "poke")).ok
    tool = next(t for t in engine.learned.tools() if t.name == "poke__pokemon_retrieve")
    assert set(tool.parameters["properties"]) == {"id", "X-Trace"}
    before = len(api.requests)
    found = results(await turn(engine, fake, ("poke__pokemon_retrieve", {"id": ".."}),
                               ("poke__pokemon_retrieve", {"id": "pikachu", "X-Trace": "tok-5f3a9c2e71d04b8e"}),
                               ("poke__pokemon_retrieve", {"id": "pikachu", "X-Trace": "a\r\nHost: evil"})))
    assert [r.error.code for r in found] == ["validation", "permission", "validation"]
    assert len(api.requests) == before


async def test_a_lens_narrows_learned_tools_like_any_other(make_engine, fake, api, workspace):
    engine = make_engine("auto")
    assert (await learn(engine, fake, api.url("/openapi.json"), "pokeapi")).ok
    (workspace / "poke.lens").write_text("name: poke-only\ndescription: Only one Pokémon tool.\n"
                                         "tool_policy:\n  allowed_tools: [read_file, pokeapi__pokemon_retrieve]\n")
    engine = make_engine("auto")
    await turn(engine, fake, lens="poke.lens")
    assert sorted(offered(fake)) == ["pokeapi__pokemon_retrieve", "read_file"]


def test_the_terminal_shows_what_learning_adds():
    from sunwell.cli.approvals import render_preview
    from sunwell.wire.approval import ApprovalRequest

    request = ApprovalRequest(session="s", turn="t", call_id="c", name="learn_api", arguments={}, risk="network",
                              preview={"kind": "learn", "name": "poke", "hosts": ["pokeapi.co"], "operations": [
                                  {"tool": "poke__get", "method": "GET", "path": "/p/{id}", "summary": "Get one"}],
                                  "changes": {"added": ["poke__get"], "removed": [], "changed": []}})
    shown = render_preview(request)
    assert "learn the API poke: 1 tools calling pokeapi.co" in shown and "poke__get  GET /p/{id}  Get one" in shown
    assert "added: poke__get" in shown and request.session_rule() is None
