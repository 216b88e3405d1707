"""`parse_arguments`, the one reader of tool-call arguments, on every path a call takes: native calls (read in the
loop), calls found in a model's text (emulation and recovery), and calls written as Python (no JSON to read)."""

from __future__ import annotations

import json

import json_repair
import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.models.arguments import parse_arguments
from sunwell.models.base import Notice, ToolCallDone
from sunwell.models.emulation.call_detector import CallDetector

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"
SMALL = "openai-compatible:qwen2.5-coder-0.5b"
NAMES = ["read_file", "list_files"]
BROKEN = "{'path': 'a.txt',}"
DEEP = '{"path": ' + "[" * 600
"""Not JSON, and past the nesting `json_repair` takes: it raises instead of repairing."""
DEEPER = "[" * 1500 + "]" * 1500
"""Valid JSON nested deeper than `json.loads` itself can go: it raises RecursionError."""


def test_arguments_are_read_repaired_or_left_raw():
    assert parse_arguments('{"path": "a.txt", "limit": 2}') == ({"path": "a.txt", "limit": 2}, [])
    assert parse_arguments("") == ({}, []) and parse_arguments(" {} ") == ({}, [])
    arguments, repairs = parse_arguments(BROKEN)
    assert arguments == {"path": "a.txt"} and len(repairs) == 1
    assert repairs[0].startswith("repaired malformed JSON")
    for not_an_object in ['["a.txt"]', '"a.txt"', "null", "3", "not json at all", "{,}"]:
        assert parse_arguments(not_an_object) == (None, []), not_an_object


def test_what_breaks_the_json_readers_is_unparsable_not_an_exception():
    with pytest.raises(ValueError):
        json_repair.loads(DEEP)
    with pytest.raises(RecursionError):
        json.loads(DEEPER)
    assert parse_arguments(DEEP) == (None, [])
    assert parse_arguments('{"path": ' + DEEPER + "}") == (None, [])


# --------------------------------------------------------------------------- native calls, read in the loop


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_native_call_the_repair_library_chokes_on_is_answered_not_a_crash(sunwell, fake, model):
    fake.script(Reply(tool_calls=[Call("read_file", DEEP)], chunk=50), Reply(text="Sorry."))
    run = sunwell("run", "read a.txt", "--model", model, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    call = next(e for e in run.events if e["type"] == "toolCall")
    assert call["arguments"] == {} and call["raw"] == DEEP
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "validation" and "not a valid JSON object" in result["error"]["message"]
    assert run.events[-1]["status"] == "completed"


# --------------------------------------------------------------------------- calls found in text


def detect(text: str) -> list:
    detector = CallDetector(NAMES)
    return detector.feed(text) + detector.finish()


def done(events) -> ToolCallDone:
    [call] = [e for e in events if isinstance(e, ToolCallDone)]
    return call


def test_a_call_found_in_text_carries_its_arguments_as_read():
    call = done(detect('<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>'))
    assert call.parsed == {"path": "a.txt"}
    assert json.loads(call.arguments) == call.parsed  # the text is what the toolCallDelta event shows


@pytest.mark.parametrize("form", ["string", "function"])
def test_arguments_in_text_are_read_as_native_ones_are(form):
    def found(arguments: str) -> list:
        if form == "string":  # {"arguments": "<JSON text>"}
            return detect(f"<tool_call>{json.dumps({'name': 'read_file', 'arguments': arguments})}</tool_call>")
        return detect(f"<function=read_file>{arguments}</function>")

    events = found(BROKEN)
    assert done(events).parsed == parse_arguments(BROKEN)[0] == {"path": "a.txt"}
    assert any("repaired malformed JSON" in e.message for e in events if isinstance(e, Notice))
    call = done(found(DEEP))  # what the native path keeps raw is raw here too
    assert call.parsed is None and call.arguments == DEEP and parse_arguments(call.arguments) == (None, [])


def test_a_call_nested_deeper_than_json_goes_is_text_not_a_crash():
    text = '<tool_call>{"name": "read_file", "arguments": {"path": ' + DEEPER + "}}</tool_call>"
    events = detect(text)
    assert not [e for e in events if isinstance(e, ToolCallDone)]


def test_an_emulated_call_the_repair_library_chokes_on_is_answered(sunwell, fake):
    hermes = json.dumps({"name": "read_file", "arguments": DEEP})
    fake.script(Reply(text=f"<tool_call>\n{hermes}\n</tool_call>", chunk=40), Reply(text="Sorry."))
    run = sunwell("run", "read a.txt", "--model", SMALL, "--base-url", f"{fake.url}/v1", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    call = next(e for e in run.events if e["type"] == "toolCall")
    assert call["arguments"] == {} and call["raw"] == DEEP
    assert next(e for e in run.events if e["type"] == "toolResult")["error"]["code"] == "validation"


# --------------------------------------------------------------------------- calls written as Python


def test_a_python_call_carries_json_values_without_json_text_to_read():
    call = done(detect('read_file(path="a.txt", lines=(1, 2), flags={1: True})'))
    assert call.parsed == {"path": "a.txt", "lines": [1, 2], "flags": {"1": True}}  # what JSON would say
