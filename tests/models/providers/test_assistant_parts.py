"""Assistant messages as ordered parts (text, thinking with its own signature, tool calls): streamed by both providers
through the real SDKs, kept by the loop and the session log in order, sent back in order; and a log written before
parts (one text, one thinking, the last signature) still read and replayed to the same requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import FAKE_SIGNATURE, Call, Reply, Thinking, thinking_signature
from sunwell.agent.log_lines import message_line
from sunwell.agent.sessions import SessionStore
from sunwell.agent.transcript_markdown import transcript_markdown
from sunwell.models.base import ModelRequest
from sunwell.models.emulation.prompt import render_history_for_emulation
from sunwell.models.providers.anthropic_messages import map_conversation
from sunwell.models.providers.openai_chat import map_messages
from sunwell.wire.messages import (
    AssistantMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"
READ_A = '{"path": "a.txt"}'
LIST_SRC = '{"path": "src"}'


def store_of(env: dict[str, str]) -> SessionStore:
    return SessionStore(Path(env["SUNWELL_DATA_DIR"]) / "sessions.db")


def assistant_blocks(request) -> list[dict]:
    return next(m for m in request.body["messages"] if m["role"] == "assistant")["content"]


# --------------------------------------------------------------------------- the message


def test_parts_keep_their_order_and_the_old_fields_are_read_from_them():
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    message = AssistantMessage(parts=[ThinkingPart(text="one", signature="s1"), TextPart(text="Let me "),
                                      ToolCallPart(call=call), ThinkingPart(text="two", signature="s2"),
                                      TextPart(text="look.")])
    assert (message.text, message.thinking, message.tool_calls) == ("Let me look.", "onetwo", [call])
    wire = message.wire()  # sunwell/session: parts, and the fields clients read
    assert [p["kind"] for p in wire["parts"]] == ["thinking", "text", "tool_call", "thinking", "text"]
    assert wire["parts"][3] == {"kind": "thinking", "text": "two", "signature": "s2"}
    assert wire["parts"][2]["call"] == {"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}, "raw": None}
    assert (wire["text"], wire["thinking"], wire["toolCalls"]) == ("Let me look.", "onetwo", [wire["parts"][2]["call"]])
    assert AssistantMessage.model_validate(wire) == message  # the read fields do not add parts
    assert message_line(message) == 'assistant: Let me ; read_file(path="a.txt"); look.'


def test_the_old_shape_becomes_thinking_text_calls():
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    old = AssistantMessage(text="Reading.", thinking="hm", thinking_signature="sig", tool_calls=[call])
    assert old.parts == [ThinkingPart(text="hm", signature="sig"), TextPart(text="Reading."), ToolCallPart(call=call)]
    camel = {"role": "assistant", "text": "Reading.", "thinking": "hm", "thinkingSignature": "sig",
             "toolCalls": [call.wire()]}
    assert AssistantMessage.model_validate(camel) == old
    assert AssistantMessage(text="", thinking="").parts == [] and AssistantMessage().parts == []


def test_each_part_maps_in_order_to_both_wire_formats():
    read = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    listing = ToolCall(id="c2", name="list_files", arguments={})
    message = AssistantMessage(parts=[
        ThinkingPart(text="first", signature="s1"), TextPart(text="Let me look."), ToolCallPart(call=read),
        ThinkingPart(text="unsigned"), ThinkingPart(text="second", signature="s2"), TextPart(text=""),
        ToolCallPart(call=listing)])
    results = [ToolResultMessage(call_id="c1", name="read_file", output="hi"),
               ToolResultMessage(call_id="c2", name="list_files", output="a.txt")]
    request = ModelRequest(model="m", system="", messages=[UserMessage(text="look"), message, *results])
    _, turns = map_conversation(request)
    assert turns[1]["content"] == [
        {"type": "thinking", "thinking": "first", "signature": "s1"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.txt"}},
        {"type": "thinking", "thinking": "second", "signature": "s2"},
        {"type": "tool_use", "id": "c2", "name": "list_files", "input": {}},
    ]
    assert map_messages(request)[1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
        {"id": "c2", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]}
    emulated = render_history_for_emulation(request.messages, "hermes")[1]
    assert [type(p) for p in emulated.parts] == [ThinkingPart, ThinkingPart, ThinkingPart, TextPart]
    assert emulated.text.startswith("Let me look.\n<tool_call>") and emulated.text.count("<tool_call>") == 2


# --------------------------------------------------------------------------- through the loop and the log


def test_anthropic_thinking_blocks_go_back_each_with_its_signature_in_order(sunwell, fake, env):
    first, second = "The user wants a.txt.", "And the folder too."
    blocks = [Thinking(first), "Let me look.", Thinking(second), Call("read_file", READ_A), Call("list_files", LIST_SRC)]
    fake.script(Reply(blocks=blocks, chunk=4), Reply(text="It says hello."), Reply(text="You asked about a.txt."))
    run = sunwell("run", "read a.txt", "--model", ANTHROPIC, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    expected = [
        {"type": "thinking", "thinking": first, "signature": thinking_signature(first)},
        {"type": "text", "text": "Let me look."},
        {"type": "thinking", "thinking": second, "signature": thinking_signature(second)},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "list_files", "input": {"path": "src"}},
    ]
    assert assistant_blocks(fake.requests[1]) == expected  # and the fake checked every signature against its text

    session = run.events[0]["session"]
    with store_of(env) as store:
        answer = next(m for m in store.messages(session) if isinstance(m, AssistantMessage))
        row = next(r for r in store.events(session) if r.kind == "message" and r.data["role"] == "assistant")
    assert [type(p) for p in answer.parts] == [ThinkingPart, TextPart, ThinkingPart, ToolCallPart, ToolCallPart]
    assert set(row.data) == {"role", "parts"}  # the log keeps the parts only

    again = sunwell("run", "what did I ask?", "--model", ANTHROPIC, "--json", "--session", session)
    assert again.code == 0, again.stderr
    assert assistant_blocks(fake.requests[2]) == expected  # restored from the log, the same blocks


def test_openai_gets_the_text_and_calls_in_order_and_no_thinking(sunwell, fake):
    blocks = [Thinking("Which file?"), "Let me look.", Call("read_file", READ_A), Call("list_files", LIST_SRC)]
    fake.script(Reply(blocks=blocks, chunk=3), Reply(text="It says hello."))
    run = sunwell("run", "read a.txt", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert "".join(e["delta"] for e in run.events if e["type"] == "thinking") == "Which file?"
    sent = next(m for m in fake.requests[1].body["messages"] if m["role"] == "assistant")
    assert sent["content"] == "Let me look."
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in sent["tool_calls"]] == [
        ("call_1", "read_file", {"path": "a.txt"}), ("call_2", "list_files", {"path": "src"})]
    assert "Which file?" not in json.dumps(fake.requests[1].body)


# --------------------------------------------------------------------------- a log written before parts


OLD_ROWS = [  # exactly what the old AssistantMessage stored (model_dump_json of text/thinking/signature/calls)
    {"role": "user", "text": "read a.txt"},
    {"role": "assistant", "text": "Reading it.", "thinking": "The user wants a.txt.",
     "thinking_signature": FAKE_SIGNATURE,
     "tool_calls": [{"id": "toolu_7", "name": "read_file", "arguments": {"path": "a.txt"}, "raw": None},
                    {"id": "toolu_8", "name": "search_files", "arguments": {}, "raw": '{"pattern": "x'}]},
    {"role": "tool_result", "call_id": "toolu_7", "name": "read_file", "output": "1\thello from a", "ok": True,
     "error": None},
    {"role": "tool_result", "call_id": "toolu_8", "name": "search_files", "output": "", "ok": False,
     "error": {"code": "validation", "message": "pattern is required", "suggestion": None}},
    {"role": "assistant", "text": "It says hello.", "thinking": "", "thinking_signature": None, "tool_calls": []},
]
# What the old adapters sent for it (the history before the new user line).
OLD_ANTHROPIC = [
    {"role": "user", "content": [{"type": "text", "text": "read a.txt"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "The user wants a.txt.", "signature": FAKE_SIGNATURE},
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_7", "name": "read_file", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_8", "name": "search_files", "input": {}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_7", "is_error": False, "content": "1\thello from a"},
        {"type": "tool_result", "tool_use_id": "toolu_8", "is_error": True,
         "content": "Error [validation]: pattern is required"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It says hello."}]},
]
OLD_OPENAI = [
    {"role": "user", "content": "read a.txt"},
    {"role": "assistant", "content": "Reading it.", "tool_calls": [
        {"id": "toolu_7", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
        {"id": "toolu_8", "type": "function", "function": {"name": "search_files", "arguments": '{"pattern": "x'}}]},
    {"role": "tool", "tool_call_id": "toolu_7", "content": "1\thello from a"},
    {"role": "tool", "tool_call_id": "toolu_8", "content": "Error [validation]: pattern is required"},
    {"role": "assistant", "content": "It says hello."},
]


def old_session(store: SessionStore) -> str:
    session = store.create("before parts")
    for seq, row in enumerate(OLD_ROWS):
        store.append(session, "t1", seq, "message", "", row)
    return session


def test_an_old_log_reads_as_parts(tmp_path):
    with SessionStore(tmp_path / "sessions.db") as store:
        messages = store.messages(old_session(store))
    first = messages[1]
    assert isinstance(first, AssistantMessage)
    assert [type(p) for p in first.parts] == [ThinkingPart, TextPart, ToolCallPart, ToolCallPart]
    assert first.parts[0] == ThinkingPart(text="The user wants a.txt.", signature=FAKE_SIGNATURE)
    assert first.tool_calls[1].raw == '{"pattern": "x' and messages[4].parts == [TextPart(text="It says hello.")]
    assert "Reading it.\n\n- ↪ `read_file(path=\"a.txt\")` ✔ 1 line\n- ↪ `search_files" in transcript_markdown(
        "s", messages)


def unmarked(value):
    """`value` without the `cache_control` breakpoints of an Anthropic request."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    return [unmarked(v) for v in value] if isinstance(value, list) else value


@pytest.mark.parametrize("model, old", [(ANTHROPIC, OLD_ANTHROPIC), (OPENAI, OLD_OPENAI)], ids=["anthropic", "openai"])
def test_an_old_log_replays_to_the_same_requests(sunwell, fake, env, model, old):
    with store_of(env) as store:
        session = old_session(store)
    fake.script(Reply(text="You asked about a.txt."))
    run = sunwell("run", "what did I ask?", "--model", model, "--json", "--session", session)
    assert run.code == 0, run.stderr
    sent = [m for m in fake.requests[0].body["messages"] if m["role"] != "system"]
    assert unmarked(sent[:-1]) == old  # the cache breakpoints Anthropic is sent aside
    assert sent[-1]["role"] == "user" and "what did I ask?" in json.dumps(sent[-1])
