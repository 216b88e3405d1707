"""The real context window: what a server says (real HTTP servers on 127.0.0.1), what a length refusal states."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sunwell.models.window import discover_window, is_length_refusal, stated_limit


@pytest.mark.parametrize("message, limit", [
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
     "Please reduce the length of the messages.", 128000),  # OpenAI context_length_exceeded
    ("prompt is too long: 208576 tokens > 200000 maximum", 200000),  # Anthropic invalid_request_error
    ("Requested tokens (13915) exceed context window of 4096", 4096),  # llama-cpp-python
    ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the "
     "messages, 1000 in the completion). Please reduce the length of the messages or completion.", 32768),  # vLLM
    ('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
     '"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}', 4096),  # llama.cpp server
    ("the request exceeds the available context size, try increasing it", None),
    ("rate limit reached for requests", None),
])  # fmt: skip
def test_the_limit_a_refusal_states(message, limit):
    assert stated_limit(message) == limit
    assert is_length_refusal(message) == ("rate limit" not in message)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(routes: dict[str, object]):
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = routes.get(f"{self.command} {self.path}")
            data = json.dumps(body).encode()
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("provider, routes, expected", [
    ("openai-compatible", {"GET /props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}},
     (4096, "server (llama.cpp /props n_ctx)")),
    ("openai-compatible", {"GET /api/v0/models": {"data": [{"id": "m", "max_context_length": 32768,
                                                             "loaded_context_length": 8192}]}},
     (8192, "server (LM Studio /api/v0/models)")),
    ("openai-compatible", {"GET /v1/models": {"data": [{"id": "other", "max_model_len": 2048},
                                                       {"id": "m", "max_model_len": 16384}]}},
     (16384, "server (vLLM /v1/models max_model_len)")),
    ("ollama", {"POST /api/show": {"parameters": "stop <|im_end|>\nnum_ctx 12288",
                                   "model_info": {"qwen2.context_length": 32768}}},
     (12288, "server (Ollama num_ctx)")),
    ("ollama", {"POST /api/show": {"model_info": {"qwen2.context_length": 32768}}},
     (4096, "server (Ollama default num_ctx)")),
    ("openai-compatible", {"GET /v1/models": {"data": [{"id": "m"}]}}, None),  # llama-cpp-python says nothing
])  # fmt: skip
async def test_what_the_server_says(provider, routes, expected):
    server = serve(routes)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert await discover_window(provider, url, "m") == expected
    finally:
        server.shutdown()


async def test_a_server_that_does_not_answer_says_nothing():
    assert await discover_window("openai-compatible", "http://127.0.0.1:9/v1", "m") is None
