"""Which window the engine budgets against, and where it came from: the user's config, what the server says (real
HTTP servers on 127.0.0.1, asked once per endpoint and model), the registry; `sunwell models` shows it; and
`scripts/start.sh` tells the config the window it starts llama-cpp-python with."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, SERVER
from fake_provider import Call, FakeProvider, Reply
from sunwell.agent.engine import Engine
from sunwell.agent.model_catalog import model_catalog
from sunwell.config import Settings
from sunwell.model_strings import ModelSpec

QWEN = ModelSpec("openai-compatible", "qwen2.5-coder-0.5b")


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class Endpoint:
    """A model server's discovery endpoints: JSON answers by "METHOD /path", a 404 for anything else; every request
    line is kept in `seen`. Bound at once, listening only from `listen()` (until then a connection is refused)."""

    def __init__(self, routes: dict[str, object]) -> None:
        self.routes, self.seen, self.listening = routes, [], False
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                endpoint.seen.append(f"{self.command} {self.path}")
                body = endpoint.routes.get(f"{self.command} {self.path}")
                data = json.dumps(body).encode()
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server.server_bind()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def listen(self) -> Endpoint:
        self.server.server_activate()
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()
        self.listening = True
        return self


@pytest.fixture
def endpoint():
    made: list[Endpoint] = []

    def make(routes: dict[str, object], *, listening: bool = True) -> Endpoint:
        made.append(Endpoint(routes))
        return made[-1].listen() if listening else made[-1]

    yield make
    for server in made:
        if server.listening:
            server.server.shutdown()
        server.server.server_close()


LLAMA_CPP = {"GET /props": {"default_generation_settings": {"n_ctx": 8192}}}
LLAMA_CPP_PYTHON = {"GET /v1/models": {"data": [{"id": "/models/qwen.gguf", "object": "model"}]}}  # states nothing


def engine(tmp_path: Path, base_url: str | None = None, **config) -> Engine:
    return Engine(Settings.model_validate({"base_url": base_url, "data_dir": str(tmp_path / "data"), **config}),
                  tmp_path)


async def test_the_users_config_wins_and_the_server_is_not_asked(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP)
    eng = engine(tmp_path, server.url, models={str(QWEN): {"context_window": 4096}})
    assert await eng.models.window(QWEN) == (4096, "config")
    bare = engine(tmp_path, server.url, models={QWEN.model: {"context_window": 6000}})  # keyed by the bare id
    assert await bare.models.window(QWEN) == (6000, "config")
    assert server.seen == []


async def test_the_server_is_asked_once_per_endpoint_and_model(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP)
    eng = engine(tmp_path, server.url)
    for _ in range(3):
        assert await eng.models.window(QWEN) == (8192, "server (llama.cpp /props n_ctx)")
    assert server.seen == ["GET /props"]
    await eng.models.window(ModelSpec("openai-compatible", "other"))
    assert server.seen == ["GET /props", "GET /props"]


async def test_a_server_that_states_nothing_leaves_the_registry_and_is_not_asked_again(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP_PYTHON)
    eng = engine(tmp_path, server.url)
    assert await eng.models.window(QWEN) == (32_768, "registry")
    asked = len(server.seen)
    assert asked >= 3 and await eng.models.window(QWEN) == (32_768, "registry") and len(server.seen) == asked


async def test_a_server_not_up_yet_is_asked_again(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP, listening=False)
    eng = engine(tmp_path, server.url)
    assert await eng.models.window(QWEN) == (32_768, "registry")  # refused: nothing answered
    server.listen()
    assert await eng.models.window(QWEN) == (8192, "server (llama.cpp /props n_ctx)")


async def test_hosted_providers_are_not_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # would be refused, were it asked
    assert await engine(tmp_path).models.window(ModelSpec("openai", "gpt-4o")) == (128_000, "registry")


async def test_a_window_a_refusal_taught_the_session_wins_for_its_model_only(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP)
    eng = engine(tmp_path, server.url, models={str(QWEN): {"context_window": 4096}})
    live = eng.live.get("s1")
    live.window, live.window_model = 2048, str(QWEN)  # what Engine.run_turn's on_window_learned stores
    assert await eng.models.window(QWEN, "s1") == (2048, "refusal")
    assert await eng.models.window(QWEN, "s2") == (4096, "config")
    assert await eng.models.window(ModelSpec("openai-compatible", "other"), "s1") == (
        8192, "server (llama.cpp /props n_ctx)")


def test_the_sidecars_catalogue_does_not_ask_but_shows_what_a_turn_heard(tmp_path, endpoint):
    server = endpoint(LLAMA_CPP)
    eng = engine(tmp_path, server.url, model=str(QWEN))
    [entry] = model_catalog(eng).models
    assert (entry.window, entry.window_source) == (32_768, "registry") and server.seen == []
    asyncio.run(eng.models.window(QWEN))  # a turn asked
    [entry] = model_catalog(eng).models
    assert (entry.window, entry.window_source) == (8192, "server (llama.cpp /props n_ctx)")
    assert entry.capabilities["contextWindow"] == 8192
    assert "context window: server (llama.cpp /props n_ctx)" in entry.capabilities["notes"]


def test_sunwell_models_says_where_the_window_came_from(sunwell, endpoint, tmp_path):
    server = endpoint(LLAMA_CPP)
    run = sunwell("models", str(QWEN), "gpt-4o", extra_env={"SUNWELL_BASE_URL": server.url})
    assert run.code == 0, run.stderr
    qwen, gpt = run.stdout.split("gpt-4o\n")
    assert "context window 8,192 tokens, from server (llama.cpp /props n_ctx)" in qwen
    assert "context window 128,000 tokens, from registry" in gpt
    as_json = json.loads(sunwell("models", "--json", str(QWEN), extra_env={"SUNWELL_BASE_URL": server.url}).stdout)
    assert as_json["window"] == 8192 and as_json["windowSource"] == "server (llama.cpp /props n_ctx)"
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f'models:\n  "{QWEN}": {{context_window: 4096}}\n')
    run = sunwell("models", str(QWEN), extra_env={"SUNWELL_BASE_URL": server.url})
    assert "context window 4,096 tokens, from config" in run.stdout, run.stdout + run.stderr


def _start_sh_config_writer() -> str:
    """The Python that scripts/start.sh runs to record its server's window in Sunwell's user config."""
    script = (ROOT / "scripts" / "start.sh").read_text()
    return re.search(r"<<'PY' \|\| say \"could not record[^\n]*\n(.*?)\nPY\n", script, re.DOTALL).group(1)


def test_start_sh_tells_the_config_its_servers_window_and_keeps_the_rest(tmp_path, endpoint):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    before = "# mine\ntrust: read_only\nmodels:\n  gpt-4o: {parallel_calls: false}\n"
    config.write_text(before)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "PYTHONPATH": str(SERVER)}
    for _ in range(2):  # the second time there is nothing to change
        done = subprocess.run([sys.executable, "-", str(QWEN), "4096"], input=_start_sh_config_writer(), env=env,
                              capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr
    assert config.with_name("config.yaml.bak").read_text() == before
    settings = Settings.model_validate(yaml.safe_load(config.read_text()))
    assert settings.trust == "read_only" and settings.models["gpt-4o"].parallel_calls is False
    server = endpoint(LLAMA_CPP_PYTHON)
    eng = engine(tmp_path, server.url, models=settings.model_dump()["models"])
    assert asyncio.run(eng.models.window(QWEN)) == (4096, "config")


def test_a_refusal_teaches_the_session_its_window(tmp_path, workspace, monkeypatch):
    """The registry says 128k; the server holds 6,000 and says so when it refuses (the second turn's second read):
    the turn goes on within 6,000, and the session's next turn starts from it."""
    for name in ("one.txt", "two.txt"):
        (workspace / name).write_text("".join(f"line {i}: the quick brown fox jumps\n" for i in range(250)))
    with FakeProvider(context_limit=6000) as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        fake.script(Reply(tool_calls=[Call("read_file", '{"path": "one.txt"}')]), Reply(text="a fox"),
                    Reply(tool_calls=[Call("read_file", '{"path": "two.txt"}')]),
                    *(lambda body: Reply(text="a fox again") for _ in range(4)))
        eng = Engine(Settings(model="openai:gpt-4o", max_tokens=200, data_dir=tmp_path / "data"), workspace)
        events: list = []

        def turn(text: str, session: str | None = None) -> None:
            events.clear()
            done = asyncio.run(eng.run_turn(text, events.append, session=session))
            assert done.status == "completed", done.error

        turn("What is one.txt about?")
        session = events[0].session
        assert fake.refusals == 0 and {e.window_tokens for e in events if e.type == "contextUsage"} == {128_000}
        turn("And two.txt?", session)
        [overflow] = [e for e in events if e.type == "notice" and e.code == "context_overflow"]
        assert fake.refusals == 1 and "6,000" in overflow.message
        assert asyncio.run(eng.models.window(ModelSpec("openai", "gpt-4o"), session)) == (6000, "refusal")
        turn("In one word?", session)
        assert fake.refusals == 1 and {e.window_tokens for e in events if e.type == "contextUsage"} == {6000}
