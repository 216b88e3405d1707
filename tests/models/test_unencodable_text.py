"""Text no encoder takes (issue 25, item 6): a lone UTF-16 surrogate in what a model sends.

JSON may spell a lone surrogate as an escape (`"\\ud800"`); decoded, it is a Python str that UTF-8 refuses, so the
first writer (the session log, the event stream, a file) used to fail the turn. Model output of any shape is data:
what cannot be encoded becomes U+FFFD where it enters, a valid pair (`\\ud83d\\ude00`) stays the character it spells,
and the turn goes on. Through the real CLI, sidecar and SDKs against the scripted server, both wire formats.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import FAKE_SIGNATURE, Call, Reply, Thinking
from sunwell.agent.sessions import SessionStore
from sunwell.models.arguments import parse_arguments
from sunwell.models.base import TextDelta, ThinkingDelta, ToolCallArgs, ToolCallDone, ToolCallStarted
from sunwell.models.encodable import encodable
from sunwell.wire.messages import AssistantMessage, TextPart, ToolCall, ToolCallPart
from test_sidecar_support import check_turn

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` fixture

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"
SMALL = "openai-compatible:qwen2.5-coder-0.5b"  # emulated tool calls: the model writes them as text

SENT = "a\ud800b\udfffc \U0001f600"  # lone high and low surrogates, and an emoji the wire spells as a pair
READ = "a\ufffdb\ufffdc \U0001f600"
LONE = re.compile("[\ud800-\udfff]")


def test_the_scripted_server_sends_the_escapes_a_real_server_sends():
    # the fake writes each SSE payload with json.dumps: lone surrogates and the pair go out as six-character escapes
    assert json.dumps({"content": SENT}) == '{"content": "a\\ud800b\\udfffc \\ud83d\\ude00"}'


def finished(run) -> list[dict]:
    """The run ended normally: exit 0, nothing on stderr, a valid stream of UTF-8 JSON lines."""
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    for line in run.stdout.splitlines():
        assert not LONE.search(line)
        json.loads(line.encode("utf-8"))
    check_stream_rules(run.events)
    assert run.events[-1]["status"] == "completed"
    return run.events


def stored(sunwell, session: str) -> str:
    """`sessions show` and `sessions export` of the session work; the export's text."""
    shown = sunwell("sessions", "show", session)
    assert shown.code == 0 and shown.stderr == "", shown.stderr
    exported = sunwell("sessions", "export", session)
    assert exported.code == 0 and exported.stderr == "", exported.stderr
    assert json.loads(exported.stdout)["id"] == session
    assert not LONE.search(shown.stdout + exported.stdout)
    return exported.stdout


def joined(events: list[dict], kind: str) -> str:
    return "".join(e["delta"] for e in events if e["type"] == kind)


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_lone_surrogates_in_text_and_thinking_become_replacement_characters(sunwell, fake, model):
    if model == OPENAI:  # as `reasoning_content`, the way DeepSeek and vLLM stream it
        fake.script(Reply(blocks=[Thinking(f"think {SENT}", FAKE_SIGNATURE), SENT], chunk=3))
    else:
        fake.script(Reply(thinking=f"think {SENT}", text=SENT, chunk=3))
    events = finished(sunwell("run", "hi", "--model", model, "--json"))
    assert joined(events, "text") == READ
    assert joined(events, "thinking") == f"think {READ}"
    session = events[0]["session"]
    assert READ in stored(sunwell, session)

    fake.script(Reply(text="again"))  # the stored history goes back to the model as it was read
    finished(sunwell("run", "more", "--model", model, "--json", "--session", session))
    assert READ in json.dumps(fake.requests[-1].body, ensure_ascii=False)


def _escaped_in_the_arguments(path: str, content: str) -> str:
    """The arguments' own JSON spells the surrogates as escapes: they appear only when the arguments are parsed."""
    return json.dumps({"path": path, "content": content})


def _raw_in_the_stream(path: str, content: str) -> str:
    """The surrogates are characters of the argument text: the stream's JSON spells them as escapes."""
    return json.dumps({"path": path, "content": content}, ensure_ascii=False)


@pytest.mark.parametrize("spell", [_escaped_in_the_arguments, _raw_in_the_stream])
@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_lone_surrogates_in_tool_arguments_are_written_as_replacement_characters(sunwell, fake, workspace, model,
                                                                                  spell):
    fake.script(Reply(tool_calls=[Call("write_file", spell("out\ud800.txt", f"{SENT}\n"))], chunk=5),
                Reply(text="written"))
    events = finished(sunwell("run", "write it", "--model", model, "--yes", "--json"))
    [call] = [e for e in events if e["type"] == "toolCall"]
    assert call["arguments"] == {"path": "out\ufffd.txt", "content": f"{READ}\n"}
    [result] = [e for e in events if e["type"] == "toolResult"]
    assert result["ok"], result["error"]
    assert (workspace / "out\ufffd.txt").read_bytes().decode("utf-8") == f"{READ}\n"
    assert joined(events, "text") == "written"
    assert "out\ufffd.txt" in stored(sunwell, events[0]["session"])


@pytest.mark.parametrize(("model", "call_id"), [(OPENAI, "call_\udfff"), (ANTHROPIC, "toolu_\udfff")])
def test_a_lone_surrogate_in_a_tool_name_or_call_id_is_answered_like_any_wrong_name(sunwell, fake, model, call_id):
    fake.script(Reply(tool_calls=[Call("read_\ud800file", '{"path": "a.txt"}', id=call_id)]), Reply(text="sorry"))
    events = finished(sunwell("run", "read a.txt", "--model", model, "--json"))
    [call] = [e for e in events if e["type"] == "toolCall"]
    assert call["name"] == "read_\ufffdfile" and call["callId"] == call_id.replace("\udfff", "\ufffd")
    [result] = [e for e in events if e["type"] == "toolResult"]
    assert result["callId"] == call["callId"]
    assert joined(events, "text") == "sorry"
    stored(sunwell, events[0]["session"])


def test_an_emulated_call_written_as_text_with_escaped_surrogates(sunwell, fake, workspace):
    call = json.dumps({"name": "write_file", "arguments": {"path": "small.txt", "content": SENT}})
    # opened free, then the same again under the schema (a server that ignores it): choice.py
    fake.script(*[Reply(text=f"<tool_call>\n{call}\n</tool_call>", chunk=7)] * 2, Reply(text="done"))
    events = finished(sunwell("run", "write it", "--model", SMALL, "--base-url", f"{fake.url}/v1", "--yes",
                              "--json"))
    assert [e["arguments"] for e in events if e["type"] == "toolCall"] == [{"path": "small.txt", "content": READ}]
    assert (workspace / "small.txt").read_text(encoding="utf-8") == READ
    stored(sunwell, events[0]["session"])


async def test_the_sidecar_streams_and_stores_replacement_characters(sidecar, fake, workspace):
    fake.script(Reply(text=SENT, tool_calls=[Call("read_file", _raw_in_the_stream("a.txt\ud800", ""))], chunk=4),
                Reply(text=SENT))
    result, events = await sidecar.chat("go")
    check_turn(events, result)
    assert result["status"] == "completed"
    assert joined(events, "text") == READ + READ
    [call] = [e for e in events if e["type"] == "toolCall"]
    assert call["arguments"]["path"] == "a.txt\ufffd"
    assert not LONE.search(json.dumps(events, ensure_ascii=False))


# -- the pieces: one function, applied where model output enters


def test_encodable_replaces_lone_surrogates_and_keeps_pairs():
    assert encodable(SENT) == READ
    assert encodable("\ud83d\ude00") == "\U0001f600"  # a pair as two code points is the character it spells
    assert encodable("\ude00\ud83d") == "\ufffd\ufffd"  # the wrong way round is no pair
    assert encodable("\udcff") == "\ufffd"  # what surrogateescape makes of a byte that is not UTF-8
    assert encodable({"k\ud800": ["\udfff", 1, None, {"x": "\ud800"}]}) == {"k\ufffd": ["\ufffd", 1, None,
                                                                                     {"x": "\ufffd"}]}
    text = "plain ascii"
    assert encodable(text) is text and encodable(3) == 3


def test_stream_events_carry_only_encodable_text():
    assert TextDelta(SENT).text == READ
    assert ThinkingDelta(SENT, signature="s\ud800").signature == "s\ufffd"
    assert ToolCallStarted("c\ud800", "n\udfff") == ToolCallStarted("c\ufffd", "n\ufffd")
    assert ToolCallArgs("c", '{"a": "\ud800').delta == '{"a": "\ufffd'
    done = ToolCallDone("c", "write_file", "{}", parsed={"content": ["\ud800"]})
    assert done.parsed == {"content": ["\ufffd"]}


@pytest.mark.parametrize("raw", ['{"p": "\\ud800", "\\udfff": ["\\ud83d\\ude00"]}',
                                 '{"p": "\\ud800", "\\udfff": ["\\ud83d\\ude00"]'])  # the second is repaired
def test_parsed_arguments_read_escaped_lone_surrogates_as_replacement_characters(raw):
    arguments, _ = parse_arguments(raw)
    assert arguments == {"p": "\ufffd", "\ufffd": ["\U0001f600"]}


def test_the_session_log_never_fails_on_a_lone_surrogate(tmp_path: Path):
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("title \ud800")
        store.append(session, "t1", 0, "notice", "warning: \ud800", {"message": "\udfff"})
        call = ToolCall(id="c1", name="write_file", arguments={"content": "\ud800"})
        store.append_message(session, "t1", 1, AssistantMessage(parts=[TextPart(text=SENT), ToolCallPart(call=call)]))
        exported = store.export(session)
        assert exported["title"] == "title \ufffd"
        notice = exported["events"][0]
        assert (notice["content"], notice["data"]) == ("warning: \ufffd", {"message": "\ufffd"})
        message = store.messages(session)[0]  # then the call's result `repair_history` adds
        assert message.text == READ and message.tool_calls[0].arguments == {"content": "\ufffd"}
