"""The real context window: what a server says (real HTTP servers on 127.0.0.1), what a length refusal states, and
what a stream that ends too early means (the real `openai` and `anthropic` SDKs against real servers)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fake_provider import FakeProvider, Reply
from sunwell.agent.context import SessionContext
from sunwell.agent.windows import calibrated_estimate
from sunwell.models.base import ContextOverflow, ModelRequest, TextDelta
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.models.providers.retry import StreamCut, stream_with_retries
from sunwell.models.providers.window import (
    ServerUnreachable,
    WindowedProvider,
    discover_window,
    is_length_refusal,
    length_refusal,
    stated_limit,
)
from sunwell.wire.messages import UserMessage


@pytest.mark.parametrize("message, limit", [
    (("This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
      "Please reduce the length of the messages."), 128000),  # OpenAI context_length_exceeded
    ("prompt is too long: 208576 tokens > 200000 maximum", 200000),  # Anthropic invalid_request_error
    (("input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or "
      "`max_tokens` and try again"), 200000),  # Anthropic, the prompt and max_tokens together
    ("Requested tokens (13915) exceed context window of 4096", 4096),  # llama-cpp-python, in its log
    (("This model's maximum context length is 4096 tokens. However, you requested 13965 tokens (13915 in the "
      "messages, 50 in the completion). Please reduce the length of the messages or completion."), 4096),
    # ^ llama-cpp-python's 400 to a request that is not streamed (and vLLM's, worded the same)
    (('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
      '"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}'), 4096),  # llama.cpp server
    (("Trying to keep the first 10136 tokens when context the overflows. However, the model is loaded with "
      "context length of only 7866 tokens, which is not enough."), 7866),  # LM Studio
    (("The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= "
      "n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."), 4096),
    ("The input (61709 tokens) is longer than the model's context length (40960 tokens).", 40960),  # SGLang
    ("Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
     32768),  # Mistral
    ("This model's maximum prompt length is 131072 but the request contains 150000 tokens.", 131072),  # xAI
    ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", 1048576),  # Gemini
    (("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 2000 `inputs` tokens "
      "and 100 `max_new_tokens`"), 2048),  # Text Generation Inference
    ("Input length 6491 exceeds context length 1500", 1500),  # LM Studio, older
    ("the request exceeds the available context size, try increasing it", None),
    ("Prompt exceeds maximum context length", None),
    ("rate limit reached for requests", None),
])  # fmt: skip
def test_the_limit_a_refusal_states(message, limit):
    assert stated_limit(message) == limit
    assert is_length_refusal(message) == ("rate limit" not in message)


def test_a_refusal_for_length_is_told_from_other_errors():
    overflow = length_refusal("openai", 400, "Please reduce the length of the messages.", "context_length_exceeded")
    assert isinstance(overflow, ContextOverflow) and overflow.limit is None and not overflow.retryable
    # OpenAI's tokens-per-minute limit says "Request too large" too: a rate limit, not the window
    assert length_refusal("openai", 429, "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, "
                                         "Requested 50000. The input or output tokens must be reduced.") is None
    assert length_refusal("anthropic", 413, "Request exceeds the maximum allowed number of bytes.",
                          "request_too_large") is not None
    assert length_refusal("openai", 400, "Invalid value for 'tool_choice'") is None
    assert length_refusal("openai-compatible", None, "exceed context window of 2048").limit == 2048  # in a stream


ESTIMATE = calibrated_estimate(SessionContext())  # the budget's own estimate (agent/context.py), uncalibrated


def _request(text: str, **extra) -> ModelRequest:
    return ModelRequest(model="m", system="", messages=[UserMessage(text=text)], **extra)


async def _drain(provider, request: ModelRequest) -> list:
    return [event async for event in provider.stream(request)]


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_refusal_is_a_context_overflow_never_retried(vendor):
    with FakeProvider(context_limit=300) as fake:
        fake.script(Reply(text="never sent"))
        provider = (OpenAIChat(base_url=f"{fake.url}/v1", api_key="k") if vendor == "openai"
                    else AnthropicMessages(base_url=fake.url, api_key="k"))
        with pytest.raises(ContextOverflow) as caught:
            [e async for e in stream_with_retries(provider, _request("word " * 2000, max_tokens=100))]
        assert caught.value.limit == 300 and caught.value.status == 400
        assert f"{vendor} refused the request for length (400)" in str(caught.value)
        assert len(fake.requests) == 1 and fake.refusals == 1 and fake.remaining == 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(routes: dict[str, object], seen: list | None = None):
    """JSON answers by "METHOD /path"; anything else is a 404. `seen` collects (request line, headers)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if seen is not None:
                seen.append((f"{self.command} {self.path}", dict(self.headers)))
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
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    return server


@pytest.mark.parametrize("provider, routes, expected", [
    ("openai-compatible", {"GET /props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}},
     (4096, "server (llama.cpp /props n_ctx)")),
    ("openai-compatible", {"GET /api/v0/models": {"data": [{"id": "m", "max_context_length": 32768,
                                                             "loaded_context_length": 8192}]}},
     (8192, "server (LM Studio /api/v0/models)")),
    ("openai-compatible", {"GET /v1/models": {"data": [{"id": "other", "max_model_len": 2048},
                                                       {"id": "m", "max_model_len": 16384}]}},
     (16384, "server (/models max_model_len)")),  # vLLM, SGLang
    ("openai-compatible", {"GET /v1/models": {"data": [{"id": "m", "context_length": 65536}, {"id": "n"}]}},
     (65536, "server (/models context_length)")),  # OpenRouter, Together
    ("openai-compatible", {"GET /v1/models": {"data": [{"id": "m", "context_window": 131072}, {"id": "n"}]}},
     (131072, "server (/models context_window)")),  # Groq
    ("openai-compatible", {"GET /info": {"model_id": "m", "max_input_tokens": 4095, "max_total_tokens": 4096}},
     (4096, "server (TGI /info max_total_tokens)")),  # Text Generation Inference
    ("ollama", {"GET /api/ps": {"models": [{"name": "m:latest", "model": "m:latest", "context_length": 2048}]},
                "POST /api/show": {"parameters": "num_ctx 12288"}},
     (2048, "server (Ollama /api/ps context_length)")),  # loaded: the window it really runs with
    ("ollama", {"GET /api/ps": {"models": []},
                "POST /api/show": {"parameters": "stop <|im_end|>\nnum_ctx 12288",
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


async def test_the_key_goes_only_to_its_endpoint_and_the_models_list_is_the_sdks():
    seen: list = []
    server = serve({"GET /api/openai/v1/models": {"data": [{"id": "m", "context_length": 8000}, {"id": "n"}]}},
                   seen)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api/openai/v1"  # the SDK lists `{base_url}/models`
        assert await discover_window("openai-compatible", url, "m", api_key="sk-local") == (
            8000, "server (/models context_length)")
        assert all(headers.get("Authorization") == "Bearer sk-local" for _, headers in seen)
    finally:
        server.shutdown()


async def test_a_server_that_does_not_answer_is_asked_again_later():
    with pytest.raises(ServerUnreachable):
        await discover_window("openai-compatible", "http://127.0.0.1:9/v1", "m")


class _Streams(BaseHTTPRequestHandler):
    """Chat Completions streams the way llama-cpp-python ends them: `[DONE]` with no chunk at all (a request too
    long for it), `[DONE]` after one chunk (another client's request interrupted it), or a whole answer. A kept-alive
    connection's second request is dropped unanswered, as a server that has just closed it does."""

    protocol_version = "HTTP/1.1"
    ways: list[str]
    drop_second: bool = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.handled = getattr(self, "handled", 0) + 1
        if self.drop_second and self.handled == 2:
            type(self).drop_second = False
            self.close_connection = True
            return
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
        done = dict(chunk, choices=[{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}])
        way = self.ways.pop(0)
        events = {"silent": [], "interrupted": [chunk], "answer": [chunk, done]}[way]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def streams():
    handler = type("Handler", (_Streams,), {"ways": []})
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    yield handler, OpenAIChat(name="openai-compatible", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                              api_key="k")
    server.shutdown()


async def test_a_stream_ended_before_its_first_chunk_after_a_large_request_is_a_likely_overflow(streams):
    handler, chat = streams
    handler.ways += ["silent", "silent"]
    big = _request("def f(x):\n    return x\n" * 400)
    assert ESTIMATE(big) > 2048  # more than half of the window below
    with pytest.raises(ContextOverflow) as caught:
        await _drain(WindowedProvider(chat, 4096, ESTIMATE), big)
    assert caught.value.limit is None and "most likely it did not fit" in str(caught.value)
    with pytest.raises(StreamCut) as cut:  # a small request cut the same way is a fault, retried as before
        await _drain(WindowedProvider(chat, 4096, ESTIMATE), _request("hi"))
    assert cut.value.retryable and not cut.value.began and str(cut.value).endswith("before its first token")


async def test_a_large_request_cut_under_a_window_taken_too_large_says_what_to_set(streams):
    handler, chat = streams
    handler.ways.append("silent")
    with pytest.raises(StreamCut) as cut:  # the registry's nominal 32k, where the server runs 4k (issue 13)
        await _drain(WindowedProvider(chat, 32_768, ESTIMATE), _request("def f(x):\n    return x\n" * 400))
    assert cut.value.retryable and "set the model's `context_window` in your config" in str(cut.value)


async def test_a_stream_cut_after_it_began_says_another_client_may_have_interrupted_it(streams):
    handler, chat = streams
    handler.ways.append("interrupted")
    with pytest.raises(StreamCut) as cut:
        await _drain(WindowedProvider(chat, 4096, ESTIMATE), _request("def f(x):\n    return x\n" * 400))
    assert cut.value.began and "another client's request interrupts" in str(cut.value)


async def test_a_connection_the_server_closed_is_replaced_at_once(streams):
    handler, chat = streams
    handler.ways += ["answer", "answer"]
    handler.drop_second = True
    for _ in range(2):  # the second goes out on the kept-alive connection, which the server drops unanswered
        events = await _drain(chat, _request("hi"))
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi"]
    assert not handler.drop_second and handler.ways == []

