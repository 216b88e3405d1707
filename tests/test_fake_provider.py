"""The fake provider, driven through the REAL openai / anthropic SDKs (no mocks)."""

from __future__ import annotations

import itertools
import json
import time

import anthropic
import openai
import pytest

from fake_provider import (
    FAKE_SIGNATURE,
    Call,
    Fail,
    FakeProvider,
    Reply,
    Thinking,
    thinking_signature,
    validate_anthropic,
    validate_openai,
)

MODEL_OA = "gpt-test"
MODEL_AN = "claude-test"
TOOLS_OA = [
    {
        "type": "function",
        "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
    },
    {"type": "function", "function": {"name": "grep", "parameters": {"type": "object", "properties": {}}}},
]
TOOLS_AN = [
    {"name": "read_file", "input_schema": {"type": "object", "properties": {}}},
    {"name": "grep", "input_schema": {"type": "object", "properties": {}}},
]
ARGS_1 = '{"path": "src/main.py", "lines": [1, 20]}'
ARGS_2 = '{"pattern": "def \\\\w+\\\\(", "glob": "**/*.py", "note": "ünïcödé"}'
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def oa_async(fake: FakeProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="test", max_retries=0)


def an_async(fake: FakeProvider) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.url, api_key="test", max_retries=0)


def oa_sync(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{fake.url}/v1", api_key="test", max_retries=0)


def an_sync(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


async def collect_openai(stream) -> dict:
    """Reduce an OpenAI chunk stream the way a client must: tool calls keyed by `index`."""
    text, calls, finish, usage, n_chunks = "", {}, None, None, 0
    async for chunk in stream:
        n_chunks += 1
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            text += delta.content or ""
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    return {
        "text": text,
        "calls": [calls[i] for i in sorted(calls)],
        "finish": finish,
        "usage": usage,
        "chunks": n_chunks,
    }


# --------------------------------------------------------------------------- OpenAI streaming


@pytest.mark.parametrize("chunk,interleave", [(1, False), (3, False), (1, True), (3, True)])
async def test_openai_stream_text_and_two_tool_calls(fake, chunk, interleave):
    fake.script(
        Reply(
            text="Let me look.",
            tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)],
            chunk=chunk,
            interleave=interleave,
            usage=(42, 7),
        )
    )
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(
            model=MODEL_OA, messages=USER, tools=TOOLS_OA, stream=True, stream_options={"include_usage": True}
        )
        got = await collect_openai(stream)
    assert got["text"] == "Let me look."
    assert got["calls"] == [
        {"id": "call_1", "name": "read_file", "arguments": ARGS_1},
        {"id": "call_2", "name": "grep", "arguments": ARGS_2},
    ]
    assert json.loads(got["calls"][1]["arguments"])["note"] == "ünïcödé"
    assert got["finish"] == "tool_calls"
    assert (got["usage"].prompt_tokens, got["usage"].completion_tokens, got["usage"].total_tokens) == (
        42,
        7,
        49,
    )
    assert got["chunks"] > len(ARGS_1) // chunk  # really split into pieces
    assert fake.remaining == 0


async def test_openai_interleave_really_interleaves(fake):
    fake.script(Reply(tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)], chunk=5, interleave=True))
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        indexes = [tc.index async for chunk in stream for tc in (chunk.choices[0].delta.tool_calls or [])]
    switches = sum(1 for a, b in itertools.pairwise(indexes) if a != b)
    assert switches > 4


@pytest.mark.parametrize("interleave", [False, True])
async def test_openai_stray_streams_without_index_or_usage_and_with_the_name_last(fake, interleave):
    fake.script(Reply(tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)], chunk=5,
                      interleave=interleave, omit_index=True, send_usage=False, arguments_first=True))
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(
            model=MODEL_OA, messages=USER, tools=TOOLS_OA, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    assert all(chunk.usage is None for chunk in chunks)  # asked for, never sent
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    deltas = [tc for chunk in chunks for tc in chunk.choices[0].delta.tool_calls or []]
    assert deltas and all(tc.index is None for tc in deltas)
    # interleaved pieces carry their call's id; in sequence only each call's first delta does
    assert sum(tc.id is not None for tc in deltas) == (len(deltas) if interleave else 2)
    calls: dict[str, dict] = {}
    current = None
    for tc in deltas:
        current = tc.id or current
        call = calls.setdefault(current, {"name": "", "arguments": ""})
        assert not call["name"], "a piece after the name"
        call["name"] += tc.function.name or ""
        call["arguments"] += tc.function.arguments or ""
    assert calls == {"call_1": {"name": "read_file", "arguments": ARGS_1},
                     "call_2": {"name": "grep", "arguments": ARGS_2}}


async def test_openai_sdk_stream_helper_and_plain_text(fake):
    fake.script(
        Reply(tool_calls=[Call("read_file", ARGS_1, id="call_custom")], chunk=2),
        Reply(text="All done.", chunk=1),
    )
    async with oa_async(fake) as client:
        async with client.chat.completions.stream(model=MODEL_OA, messages=USER, tools=TOOLS_OA) as stream:
            final = await stream.get_final_completion()
        message = final.choices[0].message
        assert message.tool_calls[0].id == "call_custom"
        assert message.tool_calls[0].function.arguments == ARGS_1
        assert final.choices[0].finish_reason == "tool_calls"

        stream = await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        got = await collect_openai(stream)
    assert (got["text"], got["finish"], got["usage"]) == ("All done.", "stop", None)  # no include_usage


def test_openai_non_streaming(fake):
    fake.script(
        Reply(text="hello", usage=(3, 2)),
        Reply(tool_calls=[Call("grep", ARGS_2)]),
        Reply(text="cut", truncated=True),
    )
    with oa_sync(fake) as client:
        first = client.chat.completions.create(model=MODEL_OA, messages=USER)
        second = client.chat.completions.create(model=MODEL_OA, messages=USER, tools=TOOLS_OA)
        third = client.chat.completions.create(model=MODEL_OA, messages=USER)
    assert first.choices[0].message.content == "hello"
    assert first.model == MODEL_OA and first.usage.total_tokens == 5
    assert first.choices[0].finish_reason == "stop"
    call = second.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "grep", ARGS_2)
    assert second.choices[0].finish_reason == "tool_calls"
    assert third.choices[0].finish_reason == "length"


# --------------------------------------------------------------------------- Anthropic streaming


async def test_anthropic_stream_helper_text_and_tool_use(fake):
    fake.script(
        Reply(
            text="Reading both.",
            tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)],
            chunk=3,
            usage=(11, 22),
        )
    )
    async with (
        an_async(fake) as client,
        client.messages.stream(model=MODEL_AN, max_tokens=100, messages=USER, tools=TOOLS_AN) as s,
    ):
        texts = [t async for t in s.text_stream]
        final = await s.get_final_message()
    assert "".join(texts) == "Reading both." and len(texts) == 5
    assert [b.type for b in final.content] == ["text", "tool_use", "tool_use"]
    assert final.content[1].id == "toolu_1" and final.content[1].name == "read_file"
    assert final.content[1].input == json.loads(ARGS_1)
    assert final.content[2].input == json.loads(ARGS_2)
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (11, 22)
    assert final.model == MODEL_AN


async def test_anthropic_raw_events_and_thinking(fake):
    fake.script(Reply(thinking="Hmm, let me think.", text="Answer.", chunk=1))
    async with an_async(fake) as client:
        stream = await client.messages.create(
            model=MODEL_AN,
            max_tokens=2048,
            messages=USER,
            stream=True,
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0].message.content == [] and events[0].message.stop_reason is None
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["thinking", "text"]
    thinking = "".join(
        e.delta.thinking
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "thinking_delta"
    )
    assert thinking == "Hmm, let me think."
    assert any(e.type == "content_block_delta" and e.delta.type == "signature_delta" for e in events)
    assert events[-2].delta.stop_reason == "end_turn"

    fake.script(Reply(thinking="Deep.", text="Yes."))
    async with (
        an_async(fake) as client,
        client.messages.stream(
            model=MODEL_AN,
            max_tokens=2048,
            messages=USER,
            thinking={"type": "enabled", "budget_tokens": 1024},
        ) as s,
    ):
        final = await s.get_final_message()
    assert final.content[0].type == "thinking" and final.content[0].thinking == "Deep."
    assert final.content[0].signature
    assert final.content[1].text == "Yes."


async def test_anthropic_blocks_in_order_each_thinking_signed_for_its_text(fake):
    fake.script(Reply(blocks=[Thinking("one"), "Text.", Thinking("two"), Call("read_file", ARGS_1)], chunk=2))
    async with (
        an_async(fake) as client,
        client.messages.stream(model=MODEL_AN, max_tokens=2048, messages=USER, tools=TOOLS_AN) as s,
    ):
        final = await s.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text", "thinking", "tool_use"]
    assert [(b.thinking, b.signature) for b in final.content if b.type == "thinking"] == [
        ("one", thinking_signature("one")), ("two", thinking_signature("two"))]
    assert final.content[3].input == json.loads(ARGS_1) and final.stop_reason == "tool_use"


def test_anthropic_thinking_must_come_back_with_its_own_signature():
    def error(**block):
        assistant = {"role": "assistant", "content": [{"type": "thinking", **block}]}
        return validate_anthropic({"model": MODEL_AN, "max_tokens": 10,
                                   "messages": [*USER, assistant, {"role": "user", "content": "go"}]})

    assert error(thinking="one", signature=thinking_signature("one")) is None
    assert error(thinking="any", signature=FAKE_SIGNATURE) is None
    assert error(thinking="one", signature=thinking_signature("two")) == (
        "messages.1.content.0: Invalid `signature` in `thinking` block")
    assert error(thinking="one") == "messages.1.content.0.thinking.signature: Field required"


async def test_openai_streams_thinking_blocks_as_reasoning_content(fake):
    fake.script(Reply(blocks=[Thinking("Hmm."), "Answer."], chunk=2))
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        deltas = [chunk.choices[0].delta async for chunk in stream if chunk.choices]
    assert "".join(getattr(d, "reasoning_content", None) or "" for d in deltas) == "Hmm."
    assert "".join(d.content or "" for d in deltas) == "Answer."


def test_anthropic_non_streaming(fake):
    fake.script(
        Reply(text="Sure.", tool_calls=[Call("read_file", ARGS_1, id="toolu_mine")]),
        Reply(text="long", truncated=True),
    )
    with an_sync(fake) as client:
        message = client.messages.create(model=MODEL_AN, max_tokens=100, messages=USER, tools=TOOLS_AN)
        truncated = client.messages.create(model=MODEL_AN, max_tokens=100, messages=USER)
    assert message.content[0].text == "Sure."
    assert (message.content[1].id, message.content[1].input) == ("toolu_mine", json.loads(ARGS_1))
    assert message.stop_reason == "tool_use"
    assert truncated.stop_reason == "max_tokens"


# --------------------------------------------------------------------------- faults


async def test_rate_limit_with_retry_after(fake):
    fake.script(
        Fail(429, "slow down", headers={"retry-after": "0"}),
        Fail(429, "slow down", headers={"retry-after": "0"}),
    )
    async with oa_async(fake) as client:
        with pytest.raises(openai.RateLimitError) as oa_err:
            await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
    assert oa_err.value.response.headers["retry-after"] == "0"
    assert oa_err.value.body["message"] == "slow down"
    async with an_async(fake) as client:
        with pytest.raises(anthropic.RateLimitError) as an_err:
            await client.messages.create(model=MODEL_AN, max_tokens=10, messages=USER, stream=True)
    assert an_err.value.response.headers["retry-after"] == "0"
    assert an_err.value.body["error"] == {"type": "rate_limit_error", "message": "slow down"}


def test_sdk_retries_honour_retry_after(fake):
    fake.script(
        Fail(429, headers={"retry-after-ms": "1"}), Reply(text="ok")
    )  # "retry-after: 0" = SDK backoff
    client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="test", max_retries=1)
    assert client.chat.completions.create(model=MODEL_OA, messages=USER).choices[0].message.content == "ok"
    assert len(fake.requests) == 2


def test_server_errors_and_overloaded(fake):
    fake.script(Fail(500), Fail(529, "Overloaded"))
    with pytest.raises(openai.InternalServerError):
        oa_sync(fake).chat.completions.create(model=MODEL_OA, messages=USER)
    with pytest.raises(anthropic.APIStatusError) as err:
        an_sync(fake).messages.create(model=MODEL_AN, max_tokens=10, messages=USER)
    assert err.value.status_code == 529
    assert err.value.body["error"]["type"] == "overloaded_error"


async def test_cut_after_breaks_the_stream_mid_way(fake):
    fake.script(Reply(text="x" * 50, chunk=1, cut_after=5), Reply(text="y" * 50, chunk=1, cut_after=5))
    seen = []
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        with pytest.raises(openai.APIConnectionError):
            async for chunk in stream:
                seen.append(chunk)
    assert len(seen) == 5
    async with an_async(fake) as client:
        stream = await client.messages.create(model=MODEL_AN, max_tokens=10, messages=USER, stream=True)
        events = []
        with pytest.raises(Exception) as err:  # the anthropic SDK lets httpx's error through
            async for event in stream:
                events.append(event)
    assert len(events) == 4  # ping is swallowed by the SDK
    assert "incomplete" in str(err.value) or "closed" in str(err.value)


async def test_client_cancellation_mid_stream_keeps_server_alive(fake):
    fake.script(Reply(text="z" * 200, chunk=1, delay=0.01), Reply(text="next"))
    async with oa_async(fake) as client:
        stream = await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        t0 = time.monotonic()
        async for _ in stream:
            break
        await stream.close()
        assert time.monotonic() - t0 < 1
        got = await collect_openai(
            await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
        )
    assert got["text"] == "next"


async def test_empty_queue_is_a_loud_500(fake):
    async with oa_async(fake) as client:
        with pytest.raises(openai.InternalServerError, match="no scripted response left"):
            await client.chat.completions.create(model=MODEL_OA, messages=USER, stream=True)
    async with an_async(fake) as client:
        with pytest.raises(anthropic.InternalServerError, match="no scripted response left"):
            await client.messages.create(model=MODEL_AN, max_tokens=10, messages=USER)


# --------------------------------------------------------------------------- queue and recording


def test_shared_queue_callable_and_recorded_requests(fake):
    fake.script(
        Reply(text="one"), lambda body: Reply(text=f"{len(body['messages'])} msgs, model {body['model']}")
    )
    assert fake.remaining == 2
    oa_text = oa_sync(fake).chat.completions.create(model=MODEL_OA, messages=USER).choices[0].message.content
    an_msg = an_sync(fake).messages.create(
        model=MODEL_AN, max_tokens=10, system="sys", messages=[{"role": "user", "content": "a"}]
    )
    assert oa_text == "one"
    assert an_msg.content[0].text == "1 msgs, model claude-test"
    assert fake.remaining == 0
    first, second = fake.requests
    assert first.path == "/v1/chat/completions" and first.headers["authorization"] == "Bearer test"
    assert first.body["messages"] == USER
    assert second.path == "/v1/messages"
    # anthropic 2.x sends the api key as "Authorization: Bearer", older SDKs as "x-api-key"
    assert second.headers.get("authorization") == "Bearer test" or second.headers.get("x-api-key") == "test"
    assert "anthropic-version" in second.headers and second.body["system"] == "sys"


def test_invalid_scripted_tool_calls_are_passed_through(fake):
    fake.script(Reply(tool_calls=[Call("no such tool!", '{"broken": ')]))
    message = oa_sync(fake).chat.completions.create(model=MODEL_OA, messages=USER, tools=TOOLS_OA)
    call = message.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("no such tool!", '{"broken": ')


# --------------------------------------------------------------------------- validation: OpenAI

A_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
        {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
    ],
}


def tool_msg(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "result"}


OPENAI_BAD = {
    "unanswered call, then user": (
        {"messages": [*USER, A_CALL, tool_msg("call_a"), *USER]},
        "The following tool_call_ids did not have response messages: call_b",
    ),
    "unanswered call at the end": (
        {"messages": [*USER, A_CALL]},
        "did not have response messages: call_a, call_b",
    ),
    "tool answers nothing": (
        {"messages": [*USER, tool_msg("call_a")]},
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
    ),
    "tool answers a wrong id": (
        {"messages": [*USER, A_CALL, tool_msg("call_a"), tool_msg("call_zzz")]},
        "must be a response to a preceeding message",
    ),
    "missing model": ({"model": None, "messages": USER}, "model"),
    "missing messages": ({"messages": None}, "'messages'"),
    "tool is not a function": ({"tools": [{"type": "retrieval"}]}, "tools[0].type"),
    "bad tool name": ({"tools": [{"type": "function", "function": {"name": "read file"}}]}, "pattern"),
    "long tool name": ({"tools": [{"type": "function", "function": {"name": "x" * 65}}]}, "pattern"),
    "non-object parameters": (
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]},
        "schema must be a JSON Schema of 'type: \"object\"'",
    ),
    "empty tools": ({"tools": []}, "empty array"),
    "arguments not a string": (
        {
            "messages": [
                *USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}
                    ],
                },
                tool_msg("c"),
            ]
        },
        "expected a string",
    ),
}


@pytest.mark.parametrize("case", OPENAI_BAD, ids=list(OPENAI_BAD))
def test_openai_rejects_malformed_requests(fake, case):
    changes, expected = OPENAI_BAD[case]
    body = {"model": MODEL_OA, "messages": USER, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    fake.script(Reply(text="never"))
    with oa_sync(fake) as client, pytest.raises(openai.BadRequestError) as err:
        if "model" in body and "messages" in body:
            client.chat.completions.create(**body)
        else:  # create() itself insists on model/messages: send the raw body through the SDK's transport
            client.post("/chat/completions", body=body, cast_to=openai.types.chat.ChatCompletion)
    assert err.value.status_code == 400
    assert expected in err.value.body["message"]
    assert set(err.value.body) == {"message", "type", "param", "code"}
    assert err.value.body["type"] == "invalid_request_error"
    assert fake.remaining == 1  # a rejected request never reaches the "model"


async def test_openai_valid_multi_round_conversation(fake):
    fake.script(
        Reply(text="Checking.", tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)], chunk=4),
        Reply(text="The file defines main()."),
    )
    messages = [{"role": "system", "content": "be brief"}, *USER]
    async with oa_async(fake) as client:
        async with client.chat.completions.stream(
            model=MODEL_OA, messages=messages, tools=TOOLS_OA
        ) as stream:
            first = (await stream.get_final_completion()).choices[0].message
        messages.append(
            {
                "role": "assistant",
                "content": first.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in first.tool_calls
                ],
            }
        )
        messages += [tool_msg(c.id) for c in first.tool_calls]
        stream = await client.chat.completions.create(
            model=MODEL_OA, messages=messages, tools=TOOLS_OA, stream=True
        )
        got = await collect_openai(stream)
    assert got["text"] == "The file defines main()."
    assert validate_openai(fake.requests[-1].body) is None


# --------------------------------------------------------------------------- validation: Anthropic

AN_USE = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_a", "name": "grep", "input": {}},
        {"type": "tool_use", "id": "toolu_b", "name": "grep", "input": {}},
    ],
}


def results(*ids: str, text: str | None = None) -> dict:
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
    return {"role": "user", "content": blocks + ([{"type": "text", "text": text}] if text else [])}


ANTHROPIC_BAD = {
    "missing max_tokens": ({"max_tokens": None}, "max_tokens: Field required"),
    "empty messages": ({"messages": []}, "at least one message"),
    "system role": ({"messages": [{"role": "system", "content": "x"}, *USER]}, 'Unexpected role "system"'),
    "first is assistant": (
        {"messages": [{"role": "assistant", "content": "x"}, *USER]},
        "first message must use",
    ),
    "no alternation": ({"messages": [*USER, *USER]}, "roles must alternate"),
    "tool_use without result": (
        {"messages": [*USER, AN_USE, results("toolu_a")]},
        (
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. "
            "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        ),
    ),
    "tool_use at the end": ({"messages": [*USER, AN_USE]}, "immediately after: toolu_a, toolu_b"),
    "result without tool_use": (
        {"messages": [results("toolu_x")]},
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result`",
    ),
    "result for an older tool_use": (
        {
            "messages": [
                *USER,
                AN_USE,
                results("toolu_a", "toolu_b"),
                {"role": "assistant", "content": "so"},
                results("toolu_a"),
            ]
        },
        "messages.4.content.0: unexpected `tool_use_id`",
    ),
    "text before results": (
        {
            "messages": [
                *USER,
                AN_USE,
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "first"}, *results("toolu_a", "toolu_b")["content"]],
                },
            ]
        },
        "Did not find 2 `tool_result` block(s) at the beginning",
    ),
    "empty text block": (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
        "text content blocks must be non-empty",
    ),
    "tool_use input not an object": (
        {
            "messages": [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}],
                },
                results("t"),
            ]
        },
        "Input should be a valid dictionary",
    ),
    "bad tool name": (
        {"tools": [{"name": "a b", "input_schema": {"type": "object"}}]},
        "should match pattern",
    ),
    "tool without schema": ({"tools": [{"name": "ab"}]}, "input_schema: Field required"),
}


@pytest.mark.parametrize("case", ANTHROPIC_BAD, ids=list(ANTHROPIC_BAD))
def test_anthropic_rejects_malformed_requests(fake, case):
    changes, expected = ANTHROPIC_BAD[case]
    body = {"model": MODEL_AN, "max_tokens": 100, "messages": USER, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    fake.script(Reply(text="never"))
    with an_sync(fake) as client, pytest.raises(anthropic.BadRequestError) as err:
        if "max_tokens" in body:
            client.messages.create(**body)
        else:  # create() itself insists on max_tokens: send the raw body through the SDK's transport
            client.post("/v1/messages", body=body, cast_to=anthropic.types.Message)
    assert err.value.status_code == 400
    assert expected in err.value.body["error"]["message"]
    assert err.value.body["type"] == "error" and err.value.body["error"]["type"] == "invalid_request_error"
    assert fake.remaining == 1


async def test_anthropic_valid_multi_round_conversation(fake):
    fake.script(
        Reply(text="Checking.", tool_calls=[Call("read_file", ARGS_1), Call("grep", ARGS_2)], chunk=5),
        Reply(text="Done."),
    )
    messages: list[dict] = [*USER]
    async with an_async(fake) as client:
        async with client.messages.stream(
            model=MODEL_AN,
            max_tokens=100,
            system="be brief",
            messages=messages,
            tools=TOOLS_AN,
            tool_choice={"type": "auto"},
        ) as s:
            first = await s.get_final_message()
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}
        )
        messages.append(results(*(b.id for b in first.content if b.type == "tool_use"), text="continue"))
        async with client.messages.stream(
            model=MODEL_AN, max_tokens=100, messages=messages, tools=TOOLS_AN, tool_choice={"type": "none"}
        ) as s:
            second = await s.get_final_message()
    assert second.content[0].text == "Done."
    assert validate_anthropic(fake.requests[-1].body) is None


def test_validators_accept_minimal_valid_bodies():
    assert validate_openai({"model": "m", "messages": USER}) is None
    assert validate_anthropic({"model": "m", "max_tokens": 1, "messages": USER}) is None
    assert validate_anthropic({"model": "m", "max_tokens": 1, "messages": [*USER, AN_USE]}) is not None


# --------------------------------------------------------------------------- prompt caching (fake_cache.py)

LONG = "Instructions that stay the same in every request of a session. " * 130  # ~8 KB: ~2,000 tokens
EPHEMERAL = {"type": "ephemeral"}


def marked(text: str) -> dict:
    return {"type": "text", "text": text, "cache_control": EPHEMERAL}


def an_usage(fake: FakeProvider, **params) -> tuple[int, int, int]:
    fake.script(Reply(text="ok"))
    message = an_sync(fake).messages.create(model=MODEL_AN, max_tokens=100, **params)
    usage = message.usage
    return usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens


def test_anthropic_bills_from_the_breakpoints_it_is_sent():
    with FakeProvider(cache=True) as fake:
        system = [marked(LONG)]
        first = [{"role": "user", "content": [marked("read a.txt " * 400)]}]
        rest, read, written = an_usage(fake, system=system, messages=first)
        assert read == 0 and written > 2000 and rest < 10  # all of it written, up to the last breakpoint
        second = [first[0], {"role": "assistant", "content": "done"},
                  {"role": "user", "content": [marked("and b.txt")]}]
        again = an_usage(fake, system=system, messages=second)
        assert again[1] == written and 0 < again[2] < 50  # the whole first prompt read, the new turn written
        assert fake.requests[-1].billed.total == sum(again)
        # another tool_choice: the messages' entries do not count, the system's does
        changed = an_usage(fake, system=system, messages=second, tools=TOOLS_AN, tool_choice={"type": "any"})
        assert changed[1] == 0  # the tools came first: a new prefix from the start
        same_tools = an_usage(fake, system=system, messages=second, tools=TOOLS_AN, tool_choice={"type": "auto"})
        assert 2000 < same_tools[1] < written  # tools and system read; the messages written again


def test_anthropic_finds_an_entry_20_blocks_back_at_most_and_ignores_short_prefixes():
    base = [{"role": "user", "content": [marked("question")]}]

    def read_after(n: int) -> tuple[int, int]:
        """(written by the first request, read by one n exchanges later, whose last block alone is marked)."""
        with FakeProvider(cache=True) as fake:
            _, _, written = an_usage(fake, system=[marked(LONG)], messages=base)
            later = [{"role": "user", "content": "question"}]  # the same block, unmarked
            for i in range(n):
                later += [{"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": f"next {i}"}]
            later[-1] = {"role": "user", "content": [marked(later[-1]["content"])]}
            return written, an_usage(fake, system=[{"type": "text", "text": LONG}], messages=later)[1]

    written, read = read_after(10)
    assert read == written  # 20 blocks back
    assert read_after(11)[1] == 0  # 22 blocks back: not looked for
    with FakeProvider(cache=True) as fake:
        short = an_usage(fake, system=[marked("short")], messages=[{"role": "user", "content": "hi"}])
        assert short[1:] == (0, 0)  # under the model's minimum nothing is cached


def test_anthropic_refuses_a_fifth_breakpoint():
    with FakeProvider(cache=True) as fake:
        messages = [{"role": "user", "content": [marked(f"part {i}") for i in range(4)]}]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks with cache_control"):
            an_sync(fake).messages.create(model=MODEL_AN, max_tokens=10, system=[marked(LONG)], messages=messages)
        assert fake.remaining == 0


def test_openai_reads_the_longest_shared_prefix_in_steps_of_128_tokens_per_cache_key():
    with FakeProvider(cache=True) as fake:
        client = oa_sync(fake)

        def cached(messages: list[dict], key: str | None = None) -> tuple[int, int]:
            fake.script(Reply(text="ok"))
            extra = {"prompt_cache_key": key} if key else {}
            usage = client.chat.completions.create(model=MODEL_OA, messages=messages, **extra).usage
            return usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens

        first = [{"role": "system", "content": LONG}, {"role": "user", "content": "one"}]
        total, read = cached(first, "s1")
        assert read == 0 and total > 2000
        second = [*first, {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]
        total2, read2 = cached(second, "s1")
        assert read2 >= 1024 and (read2 - 1024) % 128 == 0 and total - 128 < read2 <= total < total2
        assert cached(second, "s2")[1] == 0  # another key: another machine's cache
        assert cached([{"role": "system", "content": "short"}], "s1")[1] == 0
