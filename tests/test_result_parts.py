"""A tool result as parts (text, JSON data, an image, a resource link) and data for the front ends (issue 43, item
4): what the executor makes of what a tool returns, how the session log keeps it, how each provider is sent it, and
that a result of one text (every result logged before parts) reads, logs and goes out exactly as it always did."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from sunwell.agent.sessions import SessionStore, apply_elision
from sunwell.models.base import ModelRequest
from sunwell.models.emulation.prompt import render_history_for_emulation
from sunwell.models.providers.anthropic_messages import map_conversation
from sunwell.models.providers.openai_chat import map_messages
from sunwell.tools.base import Limits, Tool, ToolContext, ToolReturn, TurnServices
from sunwell.tools.executor import answered, execute
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.events import ToolResultEvent
from sunwell.wire.messages import AssistantMessage, TextPart, ToolCall, ToolResultMessage, UserMessage
from sunwell.wire.results import DataPart, ImagePart, ResourceLinkPart, SearchHit, SearchHits, WebPage

CALL = ToolCall(id="c1", name="look", arguments={})
DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PARTS = [TextPart(text="a caption"), ImagePart(media_type="image/png", data=DOT), DataPart(data={"n": 1}),
         ResourceLinkPart(uri="notes://team/a", name="a")]
TEXT = ('a caption\n[image: image/png, about 72 bytes — not shown, tool results are text]\n{\n  "n": 1\n}\n'
        "[resource link: notes://team/a (a)]")


def request(result: ToolResultMessage) -> ModelRequest:
    messages = [UserMessage(text="look"), AssistantMessage(tool_calls=[CALL]), result]
    return ModelRequest(model="m", system="", messages=messages)


def test_a_result_of_one_text_is_the_message_it_always_was():
    result = ToolResultMessage.of("c1", "look", [TextPart(text="hello")])
    assert result == ToolResultMessage(call_id="c1", name="look", output="hello")
    assert result.wire() == {"role": "tool_result", "callId": "c1", "name": "look", "output": "hello", "ok": True,
                             "error": None}  # no `parts`, no `data`: the wire and the log as before
    assert result.content == [TextPart(text="hello")]
    assert ToolResultMessage.model_validate({"role": "tool_result", "call_id": "c1", "name": "look",
                                             "output": "old"}).content == [TextPart(text="old")]


def test_parts_are_one_text_line_each_for_a_text_reader_and_blocks_for_anthropic():
    result = ToolResultMessage.of("c1", "look", PARTS)
    assert result.output == TEXT and result.content == PARTS
    [tool] = [m for m in map_messages(request(result)) if m["role"] == "tool"]
    assert tool["content"] == TEXT  # Chat Completions: text only, the image a note
    emulated = render_history_for_emulation(request(result).messages, "json")
    assert isinstance(emulated[-1], UserMessage) and emulated[-1].text.endswith(TEXT)  # the emulation path: text
    _, turns = map_conversation(request(result))
    [block] = [b for b in turns[-1]["content"] if b["type"] == "tool_result"]
    assert block["content"] == [
        {"type": "text", "text": "a caption"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": DOT}},
        {"type": "text", "text": '{\n  "n": 1\n}'},
        {"type": "text", "text": "[resource link: notes://team/a (a)]"},
    ]


def test_an_error_result_goes_out_as_its_error_text_whatever_it_held():
    failed = ToolResultMessage(call_id="c1", name="look", output="", ok=False,
                               error={"code": "execution", "message": "it broke"})
    _, turns = map_conversation(request(failed))
    [block] = [b for b in turns[-1]["content"] if b["type"] == "tool_result"]
    assert block["content"] == "Error [execution]: it broke" and block["is_error"]


def test_the_session_log_keeps_parts_and_data_and_an_elision_leaves_text(tmp_path: Path):
    result = ToolResultMessage.of("c1", "look", PARTS, WebPage(url="https://a.example/", host="a.example"))
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("parts")
        for seq, message in enumerate(request(result).messages):
            store.append_message(session, "t1", seq, message)
        read = store.messages(session)[-1]
    assert read == result and read.data == WebPage(url="https://a.example/", host="a.example", title=None)
    history: list = [read]
    apply_elision(history, {"c1": "[elided]"})
    assert history[0].content == [TextPart(text="[elided]")] and history[0].data == read.data


def test_the_executor_masks_every_part_and_the_data_and_cuts_an_oversized_result_to_text(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-31415926535")
    ctx = ToolContext(jail=None, limits=Limits(max_output_bytes=400),
                      turn=TurnServices(secrets=EnvSecrets({"MY_SERVICE_TOKEN": "tok-31415926535"})))
    leaky = ToolReturn([TextPart(text="key tok-31415926535"), DataPart(data={"k": "tok-31415926535"}),
                        ResourceLinkPart(uri="https://a.example/?t=tok-31415926535"),
                        ImagePart(media_type="image/png", data=DOT)],
                       SearchHits(query="tok-31415926535", hits=[SearchHit(title="t", url="https://a.example/",
                                                                           host="a.example")]))
    result = answered(CALL, leaky, ctx)
    assert "tok-31415926535" not in json.dumps(result.wire()) and result.parts is not None
    assert result.data.query == "[REDACTED]" and result.parts[3] == leaky.parts[3]  # an image is not text
    big = answered(CALL, ToolReturn([TextPart(text="x" * 1000), ImagePart(media_type="image/png", data=DOT)]), ctx)
    assert big.parts is None and len(big.output.encode()) <= 400 and "output truncated" in big.output


def test_what_a_handler_returns_reaches_the_result_and_its_event_carries_the_data():
    async def search(arguments: dict, ctx: ToolContext) -> ToolReturn:
        hits = [SearchHit(title="Docs", url="https://docs.example/", host="docs.example")]
        return ToolReturn.text("1. Docs\n   https://docs.example/", SearchHits(query="q", hits=hits))

    tool = Tool.dynamic({"type": "object"}, search, name="look", description="d")
    result = asyncio.run(execute(tool, CALL, {}, ToolContext(jail=Jail(Path.cwd()))))
    assert result.output == "1. Docs\n   https://docs.example/" and result.parts is None
    event = ToolResultEvent(call_id="c1", name="look", ok=True, output=result.output, error=None, duration_ms=1,
                            data=result.data).wire()
    assert event["data"] == {"kind": "webSearch", "query": "q", "hits": [
        {"title": "Docs", "url": "https://docs.example/", "host": "docs.example", "snippet": ""}]}
    plain = ToolResultEvent(call_id="c1", name="look", ok=True, output="x", error=None, duration_ms=1).wire()
    assert "data" not in plain  # absent, as before, on every result that has none
