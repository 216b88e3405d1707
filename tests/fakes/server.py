"""The fake provider's server: a real HTTP server on 127.0.0.1 that records each request, validates it as its
vendor would, and answers from the script in that vendor's wire format (fakes/openai_wire.py,
fakes/anthropic_wire.py). fake_provider.py documents the whole."""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from fake_cache import AnthropicCache, Billed, OpenAICache
from fakes.anthropic_wire import (
    ANTHROPIC_PATH,
    anthropic_error_body,
    anthropic_events,
    anthropic_length_refusal,
    anthropic_message,
    validate_anthropic,
)
from fakes.openai_wire import (
    OPENAI_PATH,
    openai_completion,
    openai_error_body,
    openai_events,
    openai_length_refusal,
    validate_openai,
)
from fakes.script import NO_SCRIPT_LEFT, Fail, Recorded, Reply, Scripted, approximate_tokens, count_tokens


class _Cut(Exception):
    """The connection was dropped (on purpose or by the client); stop answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each SSE event must leave at once
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing

    def _send_head(self, status: int, content_type: str, extra: dict[str, str], length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("x-request-id", self.request_id)  # openai SDK: _request_id
        self.send_header("request-id", self.request_id)  # anthropic SDK: _request_id
        for key, value in extra.items():
            self.send_header(key, value)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()

    def _send_json(self, status: int, payload: dict, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_head(status, "application/json", extra or {}, len(data))
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        if self.vendor == "anthropic":
            payload = anthropic_error_body(status, message, self.request_id)
        else:
            payload = openai_error_body(status, message)
        self._send_json(status, payload, extra)

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as exc:  # the client went away (cancellation)
            with self.server.fake._lock:
                self.server.fake.abandoned += 1
            raise _Cut from exc

    def _cut(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()
        raise _Cut

    # -- request handling

    def do_POST(self) -> None:
        try:
            self._handle()
        except _Cut:
            self.close_connection = True

    def _handle(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        self.vendor = "anthropic" if path == ANTHROPIC_PATH else "openai"
        self.request_id = f"req_fake{fake._next_number('req')}"
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body)
        fake._record(recorded)

        if path not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send_error(404, f"fake provider: unknown endpoint POST {self.path}")
            return
        validate = validate_anthropic if self.vendor == "anthropic" else validate_openai
        if error := validate(body):
            self._send_error(400, error)
            return
        if fake.counting:
            recorded.tokens = count_tokens(body, fake.tokenizer)
            if (refusal := self._length_refusal(body, recorded.tokens)) is not None:
                fake._refused()
                self._send_json(400, refusal)
                return
        if fake.caches is not None:
            recorded.billed = fake._bill(self.vendor, body)
        try:
            response = fake._next_response(body)
        except Exception as exc:  # noqa: BLE001 - a scripted callable blew up: make the test fail loudly
            self._send_error(500, f"fake provider: scripted callable raised {exc!r}")
            return
        if response is None:
            self._send_error(500, NO_SCRIPT_LEFT)
            return
        if response.wait_for is not None:
            self._wait(response.wait_for)
        if isinstance(response, Fail):
            self._send_error(response.status, response.message, response.headers)
            return
        if recorded.tokens is not None:  # the real services report what they counted, not what a test scripted
            said = response.text + "".join(call.arguments for call in response.tool_calls)
            response = copy.copy(response)  # a scripted Reply may be answered again (a callable's)
            response.usage = (recorded.tokens, max(1, fake.tokenizer(said)))
        if recorded.billed is not None:
            response = copy.copy(response)
            response.usage = (recorded.billed.total, response.usage[1])
            response.cache = (recorded.billed.cache_read, recorded.billed.cache_write)
        self._answer(response, body)

    def _wait(self, path: str | os.PathLike[str]) -> None:
        """Hold the answer until `path` exists; a stopped fake drops the connection instead."""
        while not os.path.exists(path):
            if self.server.fake.stopping.is_set():
                self._cut()
            time.sleep(0.02)

    def _length_refusal(self, body: dict, prompt: int) -> dict | None:
        """The vendor's refusal when `prompt` tokens (and the completion asked for) do not fit the limit."""
        limit = self.server.fake.context_limit
        if limit is None:
            return None
        completion = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        if prompt + completion <= limit:
            return None
        if self.vendor == "anthropic":
            return anthropic_length_refusal(limit, prompt, completion, self.request_id)
        functions = self.server.fake.tokenizer(json.dumps(body["tools"])) if body.get("tools") else 0
        return openai_length_refusal(limit, prompt, completion, functions)

    def _answer(self, reply: Reply, body: dict) -> None:
        fake = self.server.fake
        anthropic = self.vendor == "anthropic"
        prefix = "toolu_" if anthropic else "call_"
        call_ids = [call.id or f"{prefix}{fake._next_number('call')}" for call in reply.tool_calls]
        number = fake._next_number("msg")
        ident = f"msg_fake{number}" if anthropic else f"chatcmpl-fake{number}"

        if not body.get("stream"):
            if reply.delay:
                time.sleep(reply.delay)
            if reply.cut_after is not None:
                self._cut()
            build = anthropic_message if anthropic else openai_completion
            self._send_json(200, build(reply, body, ident, call_ids))
            return

        if anthropic:
            events = [
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                for e in anthropic_events(reply, body, ident, call_ids)
            ]
        else:
            events = [f"data: {json.dumps(c)}\n\n" for c in openai_events(reply, body, ident, call_ids)]
            events.append("data: [DONE]\n\n")
        self._send_head(200, "text/event-stream; charset=utf-8", {}, None)
        for n, event in enumerate(events):
            if n == reply.cut_after:
                self._cut()
            if n and reply.delay:
                time.sleep(reply.delay)
            self._write_chunk(event.encode())
        if reply.cut_after is not None:
            self._cut()  # never a complete body when a cut was asked for
        self._write_chunk(b"")  # terminal chunk


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeProvider


class FakeProvider:
    """The scripted fake provider server. Use as a context manager or call start()/stop()."""

    def __init__(self, *, context_limit: int | None = None, tokenizer: Callable[[str], int] | None = None,
                 cache: bool = False) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Scripted] = deque()
        self._counters: dict[str, int] = {}
        self.requests: list[Recorded] = []
        self.context_limit = context_limit
        """The window in tokens: longer requests (prompt + the completion asked for) are refused; None: no limit."""
        self.tokenizer = tokenizer or approximate_tokens
        self._count = tokenizer is not None
        self.refusals = 0
        self.abandoned = 0
        """Streams the client closed before their end (a stopped turn): a server then stops generating."""
        self.caches = {"anthropic": AnthropicCache(), "openai": OpenAICache()} if cache else None
        """Each vendor's prompt cache (fake_cache.py), when the fake bills by it."""
        self.stopping = threading.Event()
        """Set by stop(): answers waiting on a file (``wait_for``) give up."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- public API

    def script(self, *responses: Scripted) -> None:
        """Append answers to the FIFO queue shared by both endpoints."""
        for response in responses:
            if not (isinstance(response, (Reply, Fail)) or callable(response)):
                raise TypeError(f"cannot script {response!r}: expected Reply, Fail or a callable")
        with self._lock:
            self._queue.extend(responses)

    @property
    def counting(self) -> bool:
        """Whether prompts are counted (and usage reported from the count): with a context limit or a tokenizer."""
        return self._count or self.context_limit is not None

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    def start(self) -> Self:
        if self._server is None:
            self.stopping.clear()
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.fake = self
            host, port = self._server.server_address[:2]
            self.url = f"http://{host}:{port}"
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.01,), name="fake-provider", daemon=True
            )  # a short poll interval keeps stop() (and each test's teardown) fast
            self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- used by the handler threads

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _refused(self) -> None:
        with self._lock:
            self.refusals += 1

    def _bill(self, vendor: str, body: dict) -> Billed:
        assert self.caches is not None
        with self._lock:  # requests in order: a cache is a sequence of writes and reads
            return self.caches[vendor].bill(body)

    def _next_number(self, kind: str) -> int:
        """1, 2, 3... per kind ("call", "msg", "req"), so ids are predictable in tests."""
        with self._lock:
            self._counters[kind] = self._counters.get(kind, 0) + 1
            return self._counters[kind]

    def _next_response(self, body: dict) -> Reply | Fail | None:
        with self._lock:
            if not self._queue:
                return None
            response = self._queue.popleft()
        if not isinstance(response, (Reply, Fail)):
            response = response(body)
            if not isinstance(response, (Reply, Fail)):
                raise TypeError(f"scripted callable returned {response!r}, expected Reply or Fail")
        return response
