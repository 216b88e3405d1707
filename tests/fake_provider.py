"""A scripted fake LLM provider: a real local HTTP server for tests.

It speaks both wire formats our product uses, closely enough that the real
``openai`` and ``anthropic`` SDKs consume it unchanged:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (SSE ``data:`` chunks + ``[DONE]``)
* Anthropic Messages:      ``POST /v1/messages`` (SSE ``event:``/``data:`` pairs)

Only the model's answers are scripted; everything else (HTTP, SSE framing,
chunking, ids, usage, error bodies, request validation) behaves like the real
services::

    from fake_provider import Call, Fail, FakeProvider, Reply  # tests/ is on sys.path under pytest

    with FakeProvider() as fake:
        fake.script(
            Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=3),
            Fail(429, headers={"retry-after": "0"}),
            lambda body: Reply(text=f"saw {len(body['messages'])} messages"),
        )
        client = AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="test")  # OpenAI format
        client = AsyncAnthropic(base_url=fake.url, api_key="test")        # Anthropic format
        # a subprocess gets OPENAI_BASE_URL=f"{fake.url}/v1" or ANTHROPIC_BASE_URL=fake.url
        ...
        assert fake.remaining == 0
        assert fake.requests[0].headers["authorization"] == "Bearer test"

Rules:

* ``script()`` appends to ONE FIFO queue shared by both endpoints. A callable
  entry is called with the parsed request body and must return a Reply or Fail.
* Every request is recorded in ``fake.requests`` (also invalid ones).
* A request is first validated like the real service does (``validate_openai`` /
  ``validate_anthropic``); an invalid one is answered 400 with the vendor's error
  body and does NOT consume a scripted response (the model is never reached).
* An empty queue answers 500 "fake provider: no scripted response left".
* Scripted tool call names/arguments are never checked against the offered tools.
* A thinking block sent back to the Anthropic endpoint must carry the signature the
  fake gave that very text (``thinking_signature``; ``FAKE_SIGNATURE`` passes for any).
* Streaming responses use chunked transfer encoding and ``Connection: close``;
  ``Reply.cut_after`` closes the socket mid-body so the client gets a real
  protocol error (incomplete chunked read), exactly like a dropped connection.
* ``Reply(wait_for=path)`` / ``Fail(wait_for=path)`` holds the answer until the file exists (the request is
  recorded at once): a test waits for ``len(fake.requests)`` to grow, then kills the client at that exact step.
* ``FakeProvider(cache=True)`` bills each request's prompt as the service's prompt cache would (fake_cache.py):
  Anthropic from the ``cache_control`` breakpoints it carries, OpenAI from the prefixes of earlier requests; the
  usage reported is that count (``Recorded.billed``), whatever the script says of the input. Without it, a reply
  reports ``Reply.cache`` (read, written) as part of its scripted input. More than 4 breakpoints is always a 400.
* ``FakeProvider(context_limit=N)`` counts every request's prompt tokens (``count_tokens``, with
  ``tokenizer`` or an approximation of a BPE tokenizer) and refuses one that does not fit with the
  vendor's real length refusal (400; not consuming a scripted response); while counting, replies report
  the counted prompt tokens as their input usage, as the real services do. ``Recorded.tokens`` keeps the
  count, ``fake.refusals`` the number of refusals.
"""

# The one import point of the tests; the parts live in fakes/: script.py (what a test scripts, what is recorded),
# openai_wire.py and anthropic_wire.py (each API's validation, errors and answers), server.py (the HTTP server).
from fakes.anthropic_wire import (
    ANTHROPIC_PATH,
    anthropic_error_body,
    anthropic_length_refusal,
    validate_anthropic,
)
from fakes.openai_wire import OPENAI_PATH, openai_error_body, openai_length_refusal, validate_openai
from fakes.script import (
    FAKE_SIGNATURE,
    MESSAGE_OVERHEAD,
    NO_SCRIPT_LEFT,
    Call,
    Fail,
    Recorded,
    Reply,
    Scripted,
    Thinking,
    approximate_tokens,
    count_tokens,
    thinking_signature,
)
from fakes.server import (
    FakeProvider,
    _Handler,  # noqa: F401 - bench/bench_sidecar.py stamps its _write_chunk
)

__all__ = ["ANTHROPIC_PATH", "FAKE_SIGNATURE", "MESSAGE_OVERHEAD", "NO_SCRIPT_LEFT", "OPENAI_PATH", "Call", "Fail",
           "FakeProvider", "Recorded", "Reply", "Scripted", "Thinking", "anthropic_error_body",
           "anthropic_length_refusal", "approximate_tokens", "count_tokens", "openai_error_body",
           "openai_length_refusal", "thinking_signature", "validate_anthropic", "validate_openai"]
