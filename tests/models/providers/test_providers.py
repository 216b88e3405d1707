"""Provider adapters through the real `openai` and `anthropic` SDKs against the fake provider's server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from fake_provider import Call, Fail, FakeProvider, Reply
from sunwell.model_strings import ModelSpec, ModelSpecError, parse_model_string
from sunwell.models.base import (
    Finished,
    ModelRequest,
    ProviderError,
    Retrying,
    TextDelta,
    ThinkingDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.factory import ProviderConfigError, create_provider, ollama_base_url
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.models.providers.openai_chat import ChatStreamReducer, OpenAIChat
from sunwell.models.providers.retry import parse_retry_after, stream_with_retries
from sunwell.wire.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolError,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

READ_FILE = ToolSpec(name="read_file", description="Read a file.",
                     parameters={"type": "object", "properties": {"path": {"type": "string"}}})
LIST_FILES = ToolSpec(name="list_files", description="List files.", parameters={"type": "object"})
ARGS_A = '{"path": "src/a.py", "offset": 10}'
ARGS_B = '{"pattern": "**/*.ts", "path": "."}'


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def openai_provider(fake: FakeProvider) -> OpenAIChat:
    return OpenAIChat(base_url=f"{fake.url}/v1", api_key="test-key")


def anthropic_provider(fake: FakeProvider) -> AnthropicMessages:
    return AnthropicMessages(base_url=fake.url, api_key="test-key")


BOTH = pytest.mark.parametrize("make", [openai_provider, anthropic_provider], ids=["openai", "anthropic"])


def request(*messages, tools=(READ_FILE, LIST_FILES), tool_choice="auto") -> ModelRequest:
    return ModelRequest(model="test-model", system="You are terse.", messages=list(messages),
                        tools=list(tools), tool_choice=tool_choice)


async def collect(events) -> list:
    return [event async for event in events]


async def collect_until_error(events) -> tuple[list, ProviderError]:
    seen = []
    with pytest.raises(ProviderError) as caught:
        async for event in events:
            seen.append(event)
    return seen, caught.value


class FakeSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.calls.append(delay)


def calls_by_id(events) -> dict[str, tuple[str, str, str]]:
    """call id -> (name from ToolCallStarted, concatenated ToolCallArgs, ToolCallDone arguments)."""
    out: dict[str, list[str]] = {}
    for event in events:
        match event:
            case ToolCallStarted(call_id, name):
                assert call_id not in out, "started twice"
                out[call_id] = [name, "", ""]
            case ToolCallArgs(call_id, delta):
                assert out[call_id][2] == "", "args after done"
                out[call_id][1] += delta
            case ToolCallDone(call_id, name, arguments):
                assert out[call_id][0] == name
                out[call_id][2] = arguments
    return {call_id: tuple(v) for call_id, v in out.items()}


# --------------------------------------------------------------------------- model strings

@pytest.mark.parametrize("text, provider, model", [
    ("openai:gpt-4o", "openai", "gpt-4o"),
    ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
    ("ollama:qwen2.5:7b", "ollama", "qwen2.5:7b"),
    ("openai-compatible:qwen2.5-coder-0.5b", "openai-compatible", "qwen2.5-coder-0.5b"),
    ("openai-compatible:org/model:tag", "openai-compatible", "org/model:tag"),
    (" gpt-4o-mini ", "openai", "gpt-4o-mini"),
    ("o1", "openai", "o1"),
    ("o3-mini", "openai", "o3-mini"),
    ("o4-mini", "openai", "o4-mini"),
    ("chatgpt-4o-latest", "openai", "chatgpt-4o-latest"),
    ("ft:gpt-4o-mini:acme::abc123", "openai", "ft:gpt-4o-mini:acme::abc123"),
    ("claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest"),
])
def test_parse_model_string(text, provider, model):
    assert parse_model_string(text) == ModelSpec(provider, model)


@pytest.mark.parametrize("text, message", [
    ("", "no model configured: pass --model or set SUNWELL_MODEL"),
    ("   ", "no model configured: pass --model or set SUNWELL_MODEL"),
    ("llama3", ("cannot tell the provider of model 'llama3': write it as PROVIDER:MODEL "
                "(openai, anthropic, ollama, openai-compatible)")),
    ("qwen2.5:7b", "cannot tell the provider of model 'qwen2.5:7b'"),
    ("mistral:latest", "cannot tell the provider of model 'mistral:latest'"),
    ("gemma:2b", "cannot tell the provider of model 'gemma:2b'"),
    ("foo:bar", "unknown provider 'foo'"),
    ("azure:gpt-4o", "unknown provider 'azure'"),
    ("openai:", "no model id after 'openai:'"),
])
def test_parse_model_string_errors(text, message):
    with pytest.raises(ModelSpecError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_model_string(text)
    assert issubclass(ModelSpecError, ValueError)


# --------------------------------------------------------------------------- streaming

@BOTH
async def test_text_streams_in_pieces_and_finishes_with_usage(fake, make):
    fake.script(Reply(text="Hello, world!", chunk=4, usage=(42, 7)))
    events = await collect(make(fake).stream(request(UserMessage(text="hi"), tools=())))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hell", "o, w", "orld", "!"]
    assert isinstance(events[-1], Finished)
    assert events[-1].usage.input_tokens == 42 and events[-1].usage.output_tokens == 7
    assert events[-1].stop_reason in ("stop", "end_turn")
    body = fake.requests[0].body
    assert "tools" not in body and "tool_choice" not in body


@BOTH
@pytest.mark.parametrize("chunk", [1, 3])
@pytest.mark.parametrize("interleave", [False, True])
async def test_two_tool_calls_are_reassembled_per_part(fake, make, chunk, interleave):
    fake.script(Reply(text="Let me look.", tool_calls=[Call("read_file", ARGS_A), Call("list_files", ARGS_B)],
                      chunk=chunk, interleave=interleave))
    events = await collect(make(fake).stream(request(UserMessage(text="look"))))
    calls = calls_by_id(events)
    assert sorted(calls.values()) == [("list_files", ARGS_B, ARGS_B), ("read_file", ARGS_A, ARGS_A)]
    args = [e for e in events if isinstance(e, ToolCallArgs)]
    assert max(len(e.delta) for e in args) == chunk  # really streamed, not delivered whole
    assert isinstance(events[-1], Finished) and events[-1].stop_reason in ("tool_calls", "tool_use")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look."


async def test_anthropic_thinking_with_signature_text_and_tool_use(fake):
    fake.script(Reply(thinking="The user wants a file.", text="Reading it.",
                      tool_calls=[Call("read_file", ARGS_A)], chunk=5, usage=(100, 20)))
    events = await collect(anthropic_provider(fake).stream(request(UserMessage(text="read a.py"))))
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(e.text for e in thinking) == "The user wants a file."
    assert [e.signature for e in thinking if e.signature] == ["ZmFrZS1zaWduYXR1cmU="]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Reading it."
    assert list(calls_by_id(events).values()) == [("read_file", ARGS_A, ARGS_A)]
    assert events[-1] == Finished(events[-1].usage, "tool_use")
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (100, 20)
    body = fake.requests[0].body
    assert body["system"] == "You are terse." and body["max_tokens"] == 4096
    assert body["tools"][0] == {"name": "read_file", "description": "Read a file.",
                                "input_schema": READ_FILE.parameters}


async def test_anthropic_tool_use_without_arguments_is_an_empty_object(fake):
    fake.script(Reply(tool_calls=[Call("list_files", "")]))
    events = await collect(anthropic_provider(fake).stream(request(UserMessage(text="ls"))))
    assert next(e for e in events if isinstance(e, ToolCallDone)).arguments == "{}"


# --------------------------------------------------------------------------- round trips


def conversation_after_calls(events, *, error_for: str) -> list:
    """The canonical history a loop would build: the assistant's calls, one ok and one error result."""
    calls = calls_by_id(events)
    tool_calls = [ToolCall(id=call_id, name=name, arguments=json.loads(args))
                  for call_id, (name, _, args) in calls.items()]
    results = [
        ToolResultMessage(call_id=c.id, name=c.name, output="", ok=False,
                          error=ToolError(code="not_found", message="no such file",
                                          suggestion="list_files first"))
        if c.name == error_for else
        ToolResultMessage(call_id=c.id, name=c.name, output="a.py\nb.py")
        for c in tool_calls
    ]
    return [AssistantMessage(text="Let me look.", tool_calls=tool_calls), *results]


async def test_openai_round_trip_is_accepted(fake):
    provider = openai_provider(fake)
    fake.script(Reply(text="Let me look.",
                      tool_calls=[Call("read_file", ARGS_A), Call("list_files", ARGS_B)]),
                Reply(text="Done."))
    first = await collect(provider.stream(request(UserMessage(text="look"))))
    history = [SystemMessage(text="Be careful."), UserMessage(text="look"),
               *conversation_after_calls(first, error_for="read_file")]
    second = await collect(provider.stream(request(*history, tool_choice="read_file")))
    assert [e.text for e in second if isinstance(e, TextDelta)] == ["Done."]

    body = fake.requests[1].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert body["max_completion_tokens"] == 4096 and body["stream_options"] == {"include_usage": True}
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user", "assistant", "tool", "tool"]
    assert messages[0]["content"] == "You are terse."
    assert messages[3]["tool_calls"][0] == {"id": "call_1", "type": "function",
                                            "function": {"name": "read_file", "arguments": json.dumps(
                                                json.loads(ARGS_A))}}
    error_result = next(m for m in messages if m["role"] == "tool" and m["tool_call_id"] == "call_1")
    assert error_result["content"] == "Error [not_found]: no such file\nSuggestion: list_files first"


async def test_anthropic_round_trip_merges_results_and_user_text(fake):
    provider = anthropic_provider(fake)
    fake.script(Reply(thinking="hm", text="Let me look.",
                      tool_calls=[Call("read_file", ARGS_A), Call("list_files", ARGS_B)]),
                Reply(text="Done."))
    first = await collect(provider.stream(request(UserMessage(text="look"))))
    signature = next(e.signature for e in first if isinstance(e, ThinkingDelta) and e.signature)
    after = conversation_after_calls(first, error_for="list_files")
    after[0] = AssistantMessage(text=after[0].text, thinking="hm", thinking_signature=signature,
                                tool_calls=after[0].tool_calls)
    history = [SystemMessage(text="Be careful."), UserMessage(text="look"), *after,
               UserMessage(text="also check b.py"), AssistantMessage(thinking="unsigned, dropped")]
    second = await collect(provider.stream(request(*history, tool_choice="required")))
    assert [e.text for e in second if isinstance(e, TextDelta)] == ["Done."]

    body = fake.requests[1].body
    assert body["system"] == "You are terse.\n\nBe careful."
    assert body["tool_choice"] == {"type": "any"}
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert messages[1]["content"][0]["signature"] == signature
    assert messages[1]["content"][2]["input"] == json.loads(ARGS_A)
    results = messages[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                          "content": "a.py\nb.py"}
    assert results[1]["is_error"] is True and results[1]["content"].startswith("Error [not_found]")


@BOTH
async def test_unanswered_tool_call_is_rejected_with_the_providers_message(fake, make):
    history = [UserMessage(text="look"),
               AssistantMessage(tool_calls=[ToolCall(id="call_9", name="read_file",
                                                     arguments={"path": "a"})]),
               UserMessage(text="never mind")]
    provider = make(fake)
    _, error = await collect_until_error(provider.stream(request(*history)))
    assert error.status == 400 and not error.retryable
    assert str(error).startswith(f"{provider.name} rejected the request (400): ")
    assert "call_9" in str(error) and "\n" not in str(error)


@BOTH
async def test_scripted_400_surfaces_the_providers_message(fake, make):
    fake.script(Fail(400, "max_tokens is too large: 999999"))
    provider = make(fake)
    _, error = await collect_until_error(stream_with_retries(provider, request(UserMessage(text="x")),
                                                             sleep=FakeSleep()))
    assert str(error) == f"{provider.name} rejected the request (400): max_tokens is too large: 999999"
    assert len(fake.requests) == 1


# --------------------------------------------------------------------------- faults and retries

@BOTH
async def test_429_with_retry_after_is_retried_once(fake, make):
    fake.script(Fail(429, "slow down", headers={"retry-after": "0"}), Reply(text="ok"))
    sleep = FakeSleep()
    events = await collect(stream_with_retries(make(fake), request(UserMessage(text="x")), sleep=sleep))
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert len(retrying) == 1 and retrying[0].attempt == 2 and retrying[0].delay == 0
    assert "(429): slow down" in retrying[0].reason
    assert sleep.calls == [0]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"]
    assert len(fake.requests) == 2


async def test_retry_after_from_the_server_is_the_delay(fake):
    fake.script(Fail(529, "Overloaded", headers={"retry-after": "3"}), Reply(text="ok"))
    sleep = FakeSleep()
    events = await collect(stream_with_retries(anthropic_provider(fake), request(UserMessage(text="x")),
                                               sleep=sleep))
    assert sleep.calls == [3.0]
    reasons = [e.reason for e in events if isinstance(e, Retrying)]
    assert reasons == ["anthropic is overloaded (529): Overloaded"]


@BOTH
async def test_persistent_500_fails_after_three_attempts(fake, make):
    fake.script(*[Fail(500, "boom")] * 3)
    sleep = FakeSleep()
    seen, error = await collect_until_error(stream_with_retries(make(fake), request(UserMessage(text="x")),
                                                                sleep=sleep))
    assert [e.attempt for e in seen] == [2, 3] and all(isinstance(e, Retrying) for e in seen)
    assert len(fake.requests) == 3 and fake.remaining == 0
    assert error.status == 500 and "server error (500): boom" in str(error)
    assert 0.5 <= sleep.calls[0] <= 0.625 and 1.0 <= sleep.calls[1] <= 1.25  # exponential, a little jitter


@BOTH
async def test_cut_mid_stream_after_a_delta_is_not_retried_and_leaves_no_partial_call(fake, make):
    # Cut 8 SSE events in: OpenAI role chunk, 2 text chunks, the call's header, 4 argument pieces;
    # Anthropic message_start, ping, the text block (4), the tool block's start, 1 argument piece.
    fake.script(Reply(text="ab", tool_calls=[Call("read_file", ARGS_A)], chunk=1, cut_after=8),
                Reply(text="never"))
    seen, error = await collect_until_error(stream_with_retries(make(fake), request(UserMessage(text="x")),
                                                                sleep=FakeSleep()))
    assert any(isinstance(e, TextDelta) for e in seen)
    assert any(isinstance(e, ToolCallStarted) for e in seen)  # the call had begun...
    assert not any(isinstance(e, (ToolCallDone, Finished, Retrying)) for e in seen)  # ...and never completed
    assert len(fake.requests) == 1 and fake.remaining == 1
    assert "mid-answer" in str(error) or "before the answer was complete" in str(error)


@BOTH
async def test_cut_before_the_first_delta_is_retried(fake, make):
    fake.script(Reply(text="lost", cut_after=1), Reply(text="ok"))
    events = await collect(stream_with_retries(make(fake), request(UserMessage(text="x")), sleep=FakeSleep()))
    assert [type(e) for e in events][:1] == [Retrying]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"]


@pytest.mark.parametrize("vendor", ["ollama", "anthropic"])
async def test_connection_refused_is_retryable_cannot_reach(vendor):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}"
    provider = (AnthropicMessages(base_url=url, api_key="k") if vendor == "anthropic"
                else OpenAIChat(base_url=f"{url}/v1", api_key="k", name="ollama"))
    sleep = FakeSleep()
    seen, error = await collect_until_error(stream_with_retries(provider, request(UserMessage(text="x")),
                                                                sleep=sleep))
    assert error.retryable and str(error).startswith(f"cannot reach {provider.base_url}: ")
    assert "\n" not in str(error) and len(seen) == 2 and len(sleep.calls) == 2


@pytest.mark.parametrize("status, expected", [
    (401, "authentication failed for openai-compatible: check SUNWELL_API_KEY (401: bad key)"),
    (403, "authentication failed for openai-compatible: check SUNWELL_API_KEY (403: bad key)"),
    (404, "model or endpoint not found: bad key"),
    (418, "openai-compatible error (418): bad key"),
])
async def test_status_messages(fake, status, expected):
    fake.script(Fail(status, "bad key"))
    provider = create_provider(ModelSpec("openai-compatible", "m"), base_url=f"{fake.url}/v1", env={})
    _, error = await collect_until_error(provider.stream(request(UserMessage(text="x"))))
    assert str(error) == expected and not error.retryable and error.status == status


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "7"}) == 7
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "7"}) == 1.5
    assert 55 <= parse_retry_after({"retry-after": formatdate(time.time() + 60, usegmt=True)}) <= 60
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# --------------------------------------------------------------------------- the OpenAI reducer, edge servers


def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> dict:
    return {
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "usage": usage,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
    }


def test_reasoning_fields_become_thinking_and_missing_ids_are_synthesized():
    reducer = ChatStreamReducer()
    events = [event for c in [
        chunk({"reasoning_content": "deep"}),  # DeepSeek, vLLM
        chunk({"reasoning": "er"}),  # Ollama
        chunk({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": '{"pa'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a"}'}}]}),
        chunk({}, finish="tool_calls"),
        chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
    ] for event in reducer.feed(c)]
    events += list(reducer.finish("ollama"))
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["deep", "er"]
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.call_id.startswith("call_") and started.name == "read_file"
    assert [e for e in events if isinstance(e, ToolCallDone)] == [
        ToolCallDone(started.call_id, "read_file", '{"path": "a"}')]
    assert events[-1] == Finished(events[-1].usage, "tool_calls") and events[-1].usage.output_tokens == 4


@pytest.mark.parametrize("interleave", [False, True], ids=["in-sequence", "interleaved"])
async def test_tool_calls_without_index_are_keyed_by_their_id_or_the_open_call(fake, interleave):
    # In sequence, only each call's first delta names it: the pieces after it belong to the one open call.
    fake.script(Reply(tool_calls=[Call("read_file", ARGS_A), Call("list_files", ARGS_B)], chunk=3,
                      omit_index=True, interleave=interleave))
    events = await collect(openai_provider(fake).stream(request(UserMessage(text="look"))))
    assert calls_by_id(events) == {"call_1": ("read_file", ARGS_A, ARGS_A),
                                   "call_2": ("list_files", ARGS_B, ARGS_B)}
    assert isinstance(events[-1], Finished) and events[-1].stop_reason == "tool_calls"


@pytest.mark.parametrize("tool_calls", [[], [Call("read_file", ARGS_A)]], ids=["text", "tool-call"])
async def test_a_stream_without_a_usage_chunk_finishes_without_usage(fake, tool_calls):
    fake.script(Reply(text="Done.", tool_calls=tool_calls, send_usage=False))
    events = await collect(openai_provider(fake).stream(request(UserMessage(text="hi"))))
    assert fake.requests[0].body["stream_options"] == {"include_usage": True}  # asked for, not sent
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Done."
    assert events[-1] == Finished(usage=None, stop_reason="tool_calls" if tool_calls else "stop")
    assert [e.arguments for e in events if isinstance(e, ToolCallDone)] == [c.arguments for c in tool_calls]


@pytest.mark.parametrize("interleave", [False, True], ids=["in-sequence", "interleaved"])
async def test_argument_pieces_before_the_name_are_streamed_once_the_name_comes(fake, interleave):
    fake.script(Reply(tool_calls=[Call("read_file", ARGS_A), Call("list_files", ARGS_B)], chunk=4,
                      arguments_first=True, interleave=interleave))
    events = await collect(openai_provider(fake).stream(request(UserMessage(text="look"))))
    # calls_by_id fails on arguments before the start; the start's name must be whole, the arguments complete
    assert calls_by_id(events) == {"call_1": ("read_file", ARGS_A, ARGS_A),
                                   "call_2": ("list_files", ARGS_B, ARGS_B)}
    assert isinstance(events[-1], Finished) and events[-1].stop_reason == "tool_calls"


def test_chunks_of_odd_shapes_are_read_for_what_they_hold():
    # Chunks are the server's JSON as sent, so every field may be absent, null or of another type.
    reducer = ChatStreamReducer()
    events = [event for c in [
        "not a chunk", {"choices": None}, {"choices": ["x", {"delta": None}]},
        {"choices": [{"index": None, "delta": {"content": "a", "refusal": None, "tool_calls": None}}]},
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [{"delta": {"content": 7, "tool_calls": ["x", 3]}}]},
        {"choices": [{"delta": {"content": "b"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": None, "completion_tokens": 2}},
    ] for event in reducer.feed(c)]
    events += list(reducer.finish("openai-compatible"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a", "b"]
    assert events[-1] == Finished(Usage(input_tokens=0, output_tokens=2), "stop")
    assert not [e for e in events if isinstance(e, (ToolCallStarted, ToolCallDone))]


def test_a_stream_without_finish_reason_is_cut():
    reducer = ChatStreamReducer()
    events = list(reducer.feed(chunk({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "f"}}]})))
    assert events == [ToolCallStarted("x", "f")]
    with pytest.raises(ProviderError, match="ended before the answer was complete"):
        list(reducer.finish("openai"))


# --------------------------------------------------------------------------- factory and key rules


async def test_openai_compatible_never_sends_the_openai_key(fake, monkeypatch):
    # The SDK reads these from the real environment by itself; none of them may reach this endpoint.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-from-custom-headers")
    fake.script(Reply(text="a"), Reply(text="b"))
    env = {"OPENAI_API_KEY": "sk-real-openai-key"}

    dummy = create_provider(ModelSpec("openai-compatible", "m"), base_url=f"{fake.url}/v1", env=env)
    await collect(dummy.stream(request(UserMessage(text="x"))))
    own = create_provider(ModelSpec("openai-compatible", "m"),
                          env={**env, "SUNWELL_BASE_URL": f"{fake.url}/v1", "SUNWELL_API_KEY": "sk-local"})
    await collect(own.stream(request(UserMessage(text="x"))))

    assert [r.headers["authorization"] for r in fake.requests] == ["Bearer sk-no-key", "Bearer sk-local"]
    assert all("openai-organization" not in r.headers for r in fake.requests)
    assert all(r.body["max_tokens"] == 4096 for r in fake.requests)


async def test_openai_sends_its_key_to_its_configured_endpoint(fake, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    fake.script(Reply(text="a"))
    provider = create_provider(ModelSpec("openai", "gpt-4o"), base_url="http://elsewhere.invalid/v1",
                               env={"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": f"{fake.url}/v1"})
    await collect(provider.stream(request(UserMessage(text="x"))))
    assert fake.requests[0].headers["authorization"] == "Bearer sk-openai"


async def test_anthropic_uses_its_own_variables(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-process-env")
    fake.script(Reply(text="a"))
    provider = create_provider(ModelSpec("anthropic", "claude-x"),
                               env={"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": fake.url})
    await collect(provider.stream(request(UserMessage(text="x"))))
    sent = fake.requests[0].headers
    assert "sk-ant-from-process-env" not in json.dumps(sent) and "sk-ant" in json.dumps(sent)


async def test_ollama_host_without_scheme_and_a_dummy_key(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    fake.script(Reply(text="a"))
    host = fake.url.removeprefix("http://")
    provider = create_provider(ModelSpec("ollama", "qwen2.5:7b"),
                               env={"OLLAMA_HOST": host, "OPENAI_API_KEY": "sk-real-openai-key"})
    await collect(provider.stream(request(UserMessage(text="x"))))
    assert fake.requests[0].path == "/v1/chat/completions"
    assert fake.requests[0].headers["authorization"] == "Bearer ollama"


@pytest.mark.parametrize("host, url", [
    ("http://127.0.0.1:11434", "http://127.0.0.1:11434/v1"),
    ("0.0.0.0", "http://0.0.0.0:11434/v1"),
    ("gpu-box:8080", "http://gpu-box:8080/v1"),
    ("https://ollama.example.com/", "https://ollama.example.com/v1"),
    ("http://localhost:11434/v1", "http://localhost:11434/v1"),
])
def test_ollama_base_url(host, url):
    assert ollama_base_url(host) == url


@pytest.mark.parametrize("spec, env, message", [
    (ModelSpec("openai", "gpt-4o"), {}, "OPENAI_API_KEY is not set: export it or use another provider"),
    (ModelSpec("openai", "gpt-4o"), {"OPENAI_API_KEY": " "}, "OPENAI_API_KEY is not set"),
    (ModelSpec("anthropic", "claude-x"), {"OPENAI_API_KEY": "k"}, "ANTHROPIC_API_KEY is not set"),
    (ModelSpec("openai-compatible", "m"), {"OPENAI_BASE_URL": "http://x/v1"}, "pass --base-url"),
])
def test_factory_configuration_errors(spec, env, message):
    with pytest.raises(ProviderConfigError, match=message):
        create_provider(spec, env=env)


def test_default_endpoints():
    openai = create_provider(ModelSpec("openai", "gpt-4o"), env={"OPENAI_API_KEY": "k"})
    anthropic = create_provider(ModelSpec("anthropic", "claude-x"), env={"ANTHROPIC_API_KEY": "k"})
    ollama = create_provider(ModelSpec("ollama", "llama3"), env={})
    assert (openai.name, openai.base_url) == ("openai", "https://api.openai.com/v1")
    assert (anthropic.name, anthropic.base_url) == ("anthropic", "https://api.anthropic.com")
    assert (ollama.name, ollama.base_url) == ("ollama", "http://127.0.0.1:11434/v1")


def test_importing_the_factory_does_not_import_the_sdks():
    code = ("import sys, sunwell.models.factory, sunwell.models.providers.retry, sunwell.model_strings; "
            "print('openai' in sys.modules, 'anthropic' in sys.modules)")
    server = Path(__file__).resolve().parents[3] / "server"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(server)})
    assert out.stdout.split() == ["False", "False"]
