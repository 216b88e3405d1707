"""The sidecar end to end: `python -m sunwell.lsp` over real stdio (pytest-lsp), the real SDKs, and the scripted
provider on 127.0.0.1. Chat turns and their event stream, cancellation, concurrent sessions, the catalogue
methods, configuration, and bad requests."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound

from fake_provider import Call, Reply
from sunwell.wire import protocol
from test_sidecar_support import OPENAI, SERVER_COMMAND, check_turn

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures
AGENTS_OWN = ("update_plan", "ask_user", "get_time", "math_eval", "kv_set", "kv_get")
"""The agent's own tools: offered from the lowest trust level on."""


async def test_chat_turn_with_a_tool_call_streams_events_in_order(sidecar, fake, workspace):
    fake.script(Reply(text="Let me look.", tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=3),
                Reply(text="It says hello."))
    result, events = await sidecar.chat("What does a.txt say?")
    check_turn(events, result)
    types_ = [e["type"] for e in events]
    assert types_.index("toolCallStart") < types_.index("toolCallDelta") < types_.index("toolCall") \
        < types_.index("toolResult") < types_.index("done")
    call = next(e for e in events if e["type"] == "toolCall")
    assert call["name"] == "read_file" and call["arguments"] == {"path": "a.txt"}
    answer = next(e for e in events if e["type"] == "toolResult")
    assert answer["callId"] == call["callId"] and answer["ok"] and "hello from a" in answer["output"]
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "Let me look.It says hello."
    assert result["status"] == "completed" and result["toolCalls"] == 1
    assert result["usage"] == {"inputTokens": 20, "outputTokens": 10, "cacheReadTokens": 0, "cacheWriteTokens": 0}
    assert fake.remaining == 0


async def test_sessions_list_and_show_and_continue(sidecar, fake):
    fake.script(Reply(text="First answer."), Reply(text="Second answer."))
    first, _ = await sidecar.chat("first question")
    second, events = await sidecar.chat("second question", session=first["session"])
    assert second["session"] == first["session"] and second["turn"] != first["turn"]
    check_turn(events, second)
    # the second request carried the whole conversation
    sent = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] != "system"]
    assert sent == ["first question", "First answer.", "second question"]

    listing = await sidecar.request(protocol.SESSIONS, {})
    [info] = listing["sessions"]
    assert info["id"] == first["session"] and info["title"] == "first question" and info["turns"] == 2
    assert info["updatedAt"].endswith("Z")

    shown = await sidecar.request(protocol.SESSION, {"session": first["session"]})
    assert shown["session"] == first["session"]
    assert [(m["role"], m["text"]) for m in shown["messages"]] == [
        ("user", "first question"), ("assistant", "First answer."),
        ("user", "second question"), ("assistant", "Second answer.")]

    with pytest.raises(JsonRpcInvalidParams, match="nope"):
        await sidecar.request(protocol.SESSION, {"session": "nope"})


async def test_a_turn_that_cannot_start_answers_status_error_after_its_done(sidecar_factory, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data")})  # no model configured anywhere
    result, events = await sidecar.chat("hello")
    assert result["status"] == "error" and "model" in result["error"]
    assert [e["type"] for e in events] == ["done"] and events[0]["status"] == "error"
    unknown, events = await sidecar.chat("hello", session="no-such-session", model=OPENAI)
    assert unknown["status"] == "error" and "no-such-session" in unknown["error"]
    assert events[-1]["type"] == "done"


async def test_provider_failure_is_a_normal_result_with_status_error(sidecar, fake):
    from fake_provider import Fail

    fake.script(Fail(400, "bad request, really"))
    result, events = await sidecar.chat("hi")
    check_turn(events, result)
    assert result["status"] == "error" and "bad request" in result["error"]


async def test_cancel_mid_stream_ends_the_turn_within_two_seconds(sidecar, fake):
    fake.script(Reply(text="word " * 400, chunk=5, delay=0.02))  # about 8 s of streaming
    msg_id = sidecar.next_id()
    request = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "talk a lot"}, msg_id=msg_id))
    first = await sidecar.wait_for(lambda: next((e for e in sidecar.events if e["type"] == "text"), None))
    cancelled_at = time.monotonic()
    sidecar.cancel(msg_id)
    try:
        result = await asyncio.wait_for(request, 5)
        assert result["status"] == "cancelled"
    except JsonRpcException as exc:  # docs/sidecar.md "Cancelling a turn" allows RequestCancelled too
        assert exc.code == -32800
        result = None
    events = sidecar.turn_events(first["turn"])
    done = events[-1]
    assert done["type"] == "done" and done["status"] == "cancelled"
    assert sidecar.event_times[sidecar.events.index(done)] - cancelled_at < 2.0
    # the stream is closed, not left to run: a local server stops generating the stopped answer (issue 46 item 3)
    await sidecar.wait_for(lambda: fake.abandoned == 1, timeout=10)
    if result is not None:
        check_turn(events, result)
        sidecar.check_done_before_answer(first["turn"], msg_id)

    # the session stays usable: the next turn sends a valid history (the fake validates it)
    fake.script(Reply(text="ok"))
    again, events = await sidecar.chat("still there?", session=first["session"])
    assert again["status"] == "completed", again


async def test_two_sessions_at_once_do_not_mix_their_events(sidecar, fake):
    def echo(body):
        question = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        return Reply(text=f"answer to {question}: " + "x" * 60, chunk=4, delay=0.01)

    fake.script(echo, echo)
    (first, first_events), (second, second_events) = await asyncio.gather(
        sidecar.chat("alpha"), sidecar.chat("beta"))
    assert first["session"] != second["session"]
    for result, events, name in ((first, first_events, "alpha"), (second, second_events, "beta")):
        check_turn(events, result)
        assert {e["session"] for e in events} == {result["session"]}
        assert "".join(e["delta"] for e in events if e["type"] == "text").startswith(f"answer to {name}:")
    # they really ran at the same time: the two streams interleave on the wire
    order = [e["turn"] for e in sidecar.events]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches >= 3


async def test_catalogue_methods(sidecar):
    tools = await sidecar.request(protocol.TOOLS, {})
    names = {t["name"] for t in tools["tools"]}
    assert {"list_files", "search_files", "read_file"} <= names
    read = next(t for t in tools["tools"] if t["name"] == "read_file")
    assert read["source"] == "core" and read["policy"] == "auto" and read["minTrust"] == "read_only"
    assert read["description"]
    narrow = await sidecar.request(protocol.TOOLS, {"trust": "discovery"})
    assert {t["name"] for t in narrow["tools"]} == {"list_files", "search_files", *AGENTS_OWN}

    models = await sidecar.request(protocol.MODELS, {})
    assert models["current"] == OPENAI
    [model] = [m for m in models["models"] if m["id"] == OPENAI]
    assert model["provider"] == "openai" and model["capabilities"]["nativeTools"] is True

    commands = await sidecar.request(protocol.COMMANDS)
    by_name = {c["name"]: c for c in commands["commands"]}
    assert {"help", "lens", "trust", "undo", "run"} <= set(by_name) and "exit" not in by_name  # terminal only
    assert by_name["trust"]["usage"] == "::trust [level]" and by_name["trust"]["description"]


async def test_tools_of_a_lens_are_narrowed_by_its_policy(sidecar_factory, workspace):
    (workspace / "reader.lens").write_text(
        "name: reader\ndescription: d\ntool_policy:\n  trust_level: read_only\n  allowed_tools: [read_file]\n")
    sidecar = await sidecar_factory()
    await sidecar.wait_for(lambda: sidecar.uri("reader.lens") in sidecar.client.diagnostics)  # registry loaded
    tools = await sidecar.request(protocol.TOOLS, {"lens": "reader"})
    assert [t["name"] for t in tools["tools"]] == ["read_file"]
    with pytest.raises(JsonRpcInvalidParams, match="no lens .missing."):
        await sidecar.request(protocol.TOOLS, {"lens": "missing"})


async def test_chat_with_a_lens_offers_only_what_its_policy_allows(sidecar_factory, fake, workspace):
    (workspace / "reader.lens").write_text(
        "name: reader\ndescription: d\ninstructions: Answer in French.\n"
        "tool_policy:\n  trust_level: read_only\n  allowed_tools: [read_file]\n")
    sidecar = await sidecar_factory()
    fake.script(Reply(text="Bonjour"))
    result, events = await sidecar.chat("hello", lens="reader")
    check_turn(events, result)
    body = fake.requests[-1].body
    assert [tool["function"]["name"] for tool in body["tools"]] == ["read_file"]
    assert "Answer in French." in json.dumps(body["messages"])
    broken, events = await sidecar.chat("hello", lens="missing")
    assert broken["status"] == "error" and "missing" in broken["error"] and events[-1]["type"] == "done"


async def test_unknown_methods_and_malformed_params_get_errors_and_the_sidecar_keeps_serving(sidecar):
    with pytest.raises(JsonRpcMethodNotFound):
        await sidecar.request("sunwell/nope", {})
    for params in ({"text": 5}, {"session": "x"}, {"text": ""}, ["hi"], {"text": "hi", "trust": "root"}):
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await sidecar.request(protocol.CHAT, params)
        assert caught.value.code == -32602
    with pytest.raises(JsonRpcInvalidParams, match="session"):
        await sidecar.request(protocol.SESSION, {})
    assert (await sidecar.request(protocol.COMMANDS, {}))["commands"]


def test_malformed_standard_request_is_answered_over_raw_stdio(env, workspace, tmp_path):
    """pygls alone leaves a request whose params do not fit lsprotocol's types unanswered; we answer -32602."""
    proc = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        rpc = RawRpc(proc)
        rpc.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}})
        assert "capabilities" in rpc.read()["result"]
        rpc.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        rpc.send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": 5}})
        assert rpc.read_response(2)["error"]["code"] == -32602
        rpc.send({"jsonrpc": "2.0", "id": 3, "method": protocol.COMMANDS, "params": {}})
        assert rpc.read_response(3)["result"]["commands"]
        rpc.send({"jsonrpc": "2.0", "id": 4, "method": "shutdown"})
        rpc.read_response(4)
        rpc.send({"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(10) == 0
    finally:
        proc.kill()


async def test_data_dir_option_wins_over_the_environment(sidecar_factory, fake, tmp_path, env):
    chosen = tmp_path / "from-client"
    sidecar = await sidecar_factory({"dataDir": str(chosen), "model": OPENAI})
    fake.script(Reply(text="hi"))
    result, _ = await sidecar.chat("hello")
    assert result["status"] == "completed"
    assert (chosen / "sessions.db").is_file()
    assert not (Path(env["SUNWELL_DATA_DIR"]) / "sessions.db").exists()


async def test_unusable_data_dir_is_reported_and_lens_features_still_work(sidecar_factory, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    sidecar = await sidecar_factory({"dataDir": str(blocker / "data"), "model": OPENAI})
    await sidecar.wait_for(lambda: sidecar.client.messages)
    message = sidecar.client.messages[0]
    assert "data directory" in message.message and str(blocker / "data") in message.message
    assert message.type == types.MessageType.Warning

    uri = sidecar.uri("x.lens")
    sidecar.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="lens", version=1, text="name: x\ndescription: d\ncolour: red\n")))
    diagnostics = await sidecar.wait_for(lambda: sidecar.client.diagnostics.get(uri))
    assert diagnostics[0].code == "unknown-key"

    with pytest.raises(JsonRpcException) as caught:
        await sidecar.request(protocol.SESSIONS, {})
    assert caught.value.code == protocol.REQUEST_FAILED and "data directory" in str(caught.value)
    result, events = await sidecar.chat("hello")
    assert result["status"] == "error" and events[-1]["type"] == "done"


async def test_bad_options_are_reported_by_name_and_the_rest_apply(sidecar_factory, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI, "trust": "root",
                                     "colour": "blue"})
    await sidecar.wait_for(lambda: len(sidecar.client.messages) >= 2)
    text = "\n".join(m.message for m in sidecar.client.messages)
    assert "'trust'" in text and "'colour'" in text
    assert (await sidecar.request(protocol.MODELS, {}))["current"] == OPENAI
    tools = await sidecar.request(protocol.TOOLS, {})
    assert "read_file" in {t["name"] for t in tools["tools"]}  # the default trust, workspace


async def test_did_change_configuration_applies_new_settings(sidecar):
    sidecar.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"sunwell": {"model": "anthropic:claude-sonnet-4-5", "trust": "discovery"}}))
    deadline = time.monotonic() + 5
    while (await sidecar.request(protocol.MODELS, {}))["current"] != "anthropic:claude-sonnet-4-5":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    tools = await sidecar.request(protocol.TOOLS, {})
    assert {t["name"] for t in tools["tools"]} == {"list_files", "search_files", *AGENTS_OWN}


async def test_stdout_carries_only_protocol(sidecar, fake):
    """A chat, a lens document and a bad request later, every byte pytest-lsp read was a valid message
    (pytest-lsp fails the test on anything else); and the server logs went to stderr, not stdout."""
    fake.script(Reply(text="fine"))
    await sidecar.chat("hello")
    assert sidecar.client.error is None


class RawRpc:
    """JSON-RPC with LSP framing over a subprocess' pipes, byte for byte."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self) -> dict:
        length = None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed its stdout"
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def read_response(self, msg_id: int) -> dict:
        while True:
            message = self.read()
            if message.get("id") == msg_id and "method" not in message:
                return message



class _ModelServer:
    """A model server on 127.0.0.1 that lists its models as an OpenAI-compatible server (`/v1/models`) and as
    Ollama (`/api/tags`) do."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listed = [{"id": "qwen2.5-coder-7b"}, {"id": "llama3.1-8b"}, {"id": "llama3.1-8b"}, {"nope": 1}]
                bodies = {"/v1/models": {"object": "list", "data": listed},
                          "/api/tags": {"models": [{"name": "qwen2.5:7b"}, {"name": "llava:7b"}]}}
                body = json.dumps(bodies.get(self.path, {"error": "not found"})).encode()
                self.send_response(200 if self.path in bodies else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_the_model_picker_lists_what_the_configured_server_offers(sidecar_factory, tmp_path):
    """Issue 46 item 6: an OpenAI-compatible server's /v1/models and Ollama's tags reach `sunwell/models`, once
    each, beside the configured model; a hosted provider's catalogue and a server that is down add nothing."""
    server = _ModelServer()
    try:
        compatible = await sidecar_factory({"dataDir": str(tmp_path / "a"), "model": "openai-compatible:qwen2.5-coder-7b",
                                            "baseUrl": f"{server.url}/v1"})
        listed = await compatible.request(protocol.MODELS, {})
        assert listed["current"] == "openai-compatible:qwen2.5-coder-7b"
        ids = [(m["id"], m["served"]) for m in listed["models"]]
        assert ids == [("openai-compatible:qwen2.5-coder-7b", False), ("openai-compatible:llama3.1-8b", True)]

        ollama = await sidecar_factory({"dataDir": str(tmp_path / "b"), "model": "ollama:qwen2.5:7b"},
                                       env_extra={"OLLAMA_HOST": server.url})
        ids = [(m["id"], m["served"]) for m in (await ollama.request(protocol.MODELS, {}))["models"]]
        assert ids == [("ollama:qwen2.5:7b", False), ("ollama:llava:7b", True)]
    finally:
        server.close()
    down = await sidecar_factory({"dataDir": str(tmp_path / "c"), "model": "openai-compatible:qwen2.5-coder-7b",
                                  "baseUrl": server.url + "/v1"})
    assert [m["id"] for m in (await down.request(protocol.MODELS, {}))["models"]] == ["openai-compatible:qwen2.5-coder-7b"]


async def test_stop_closes_a_small_local_models_stream_too(sidecar_factory, fake, tmp_path):
    """Issue 46 item 3: Stop on a small local model (tool calls taught in the prompt, answer-or-call) closes the
    request's stream, so a server such as llama-cpp-python stops generating instead of finishing the stopped answer
    while the next turn waits."""
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": "openai-compatible:qwen2.5-coder-0.5b",
                                     "baseUrl": f"{fake.url}/v1"})
    fake.script(*[Reply(text="word " * 400, chunk=5, delay=0.02)] * 3)
    msg_id = sidecar.next_id()
    request = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "talk a lot"}, msg_id=msg_id))
    await sidecar.wait_for(lambda: fake.requests, timeout=20)
    await asyncio.sleep(0.3)  # the stream has begun
    sidecar.cancel(msg_id)
    await sidecar.wait_for(lambda: fake.abandoned >= 1, timeout=10)
    try:
        await asyncio.wait_for(request, 10)
    except JsonRpcException as exc:
        assert exc.code == -32800
    assert fake.abandoned == len(fake.requests), "a request of the stopped turn was left running"
