"""`sunwell/session` replays a stored session as events (`events`), the ones a client feeds to the same reducer that
draws the live stream: over real stdio against the sidecar, and `replay` on a real session log."""

from __future__ import annotations

import asyncio

from fake_provider import Call, Reply
from sunwell.agent.replay import UNFINISHED, replay
from sunwell.agent.sessions import SessionStore
from sunwell.agent.turn import TurnLog
from sunwell.wire import protocol
from sunwell.wire.events import ApprovalEvent, NoticeEvent, ToolCallEvent, ToolResultEvent
from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures


def _without_seq(event: dict) -> dict:
    return {key: value for key, value in event.items() if key not in ("seq", "error")}


async def test_a_session_is_replayed_as_the_events_of_its_turns(sidecar, fake):
    fake.script(Reply(text="Let me look.", tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=3),
                Reply(text="It says hello."), Reply(text="Bye."))
    first, live = await sidecar.chat("What does a.txt say?")
    second, live_second = await sidecar.chat("thanks", session=first["session"])

    shown = await sidecar.request(protocol.SESSION, {"session": first["session"]})
    events = shown["events"]
    assert [(e["type"], e["turn"]) for e in events] == [
        ("userMessage", first["turn"]), ("text", first["turn"]), ("toolCall", first["turn"]),
        ("contextUsage", first["turn"]), ("toolResult", first["turn"]), ("text", first["turn"]),
        ("contextUsage", first["turn"]), ("done", first["turn"]),
        ("userMessage", second["turn"]), ("text", second["turn"]), ("contextUsage", second["turn"]),
        ("done", second["turn"])]
    assert [e["type"] for e in live if e["type"] in ("toolCall", "contextUsage", "toolResult", "done")] == [
        "toolCall", "contextUsage", "toolResult", "contextUsage", "done"]  # where the stream had them
    assert {e["session"] for e in events} == {first["session"]}
    assert events[0]["text"] == "What does a.txt say?" and events[8]["text"] == "thanks"
    # the answer's text whole, where the stream had deltas, and before the call, where the stream had it
    assert [e["delta"] for e in events if e["type"] == "text"] == ["Let me look.", "It says hello.", "Bye."]
    for kind in ("toolCall", "toolResult", "done"):
        [stored] = [e for e in events if e["type"] == kind and e["turn"] == first["turn"]]
        [sent] = [e for e in live if e["type"] == kind]
        assert _without_seq(stored) == _without_seq(sent)
    assert events[-1]["status"] == "completed" and events[-1]["usage"] == live_second[-1]["usage"]
    assert len(shown["messages"]) == 6  # the canonical messages are still there


async def test_a_cancelled_turn_replays_to_its_cancelled_done(sidecar, fake):
    fake.script(Reply(text="word " * 400, chunk=5, delay=0.02))
    msg_id = sidecar.next_id()
    request = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "talk a lot"}, msg_id=msg_id))
    first = await sidecar.wait_for(lambda: next((e for e in sidecar.events if e["type"] == "text"), None))
    sidecar.cancel(msg_id)
    await asyncio.wait_for(asyncio.gather(request, return_exceptions=True), 5)

    events = (await sidecar.request(protocol.SESSION, {"session": first["session"]}))["events"]
    assert [e["type"] for e in events] == ["userMessage", "done"]
    assert events[-1]["status"] == "cancelled"


def test_replay_keeps_approvals_and_notices_and_ends_a_turn_the_sidecar_never_finished(tmp_path):
    """Written the way a turn writes its log (TurnLog), then cut off: the sidecar died while the tool ran."""
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("write it")
        log = TurnLog(store, session, sink=lambda event: None)
        log.record(UserMessage(text="write it"))
        log.emit(NoticeEvent(level="info", code="tools_fitted", message="fitted"))
        call = ToolCall(id="c1", name="write_file", arguments={"path": "b.txt", "content": "x"})
        log.emit(ToolCallEvent(call_id=call.id, name=call.name, arguments=call.arguments))
        log.record(AssistantMessage(text="Writing.", thinking="plan", tool_calls=[call]))
        log.emit(ApprovalEvent(call_id=call.id, decision="allow", by="user"))
        log.record(UserMessage(text="(the loop's own prompt, never shown)"))
        rows = store.events(session)

    events = [event.wire() for event in replay(rows)]
    assert [e["type"] for e in events] == ["userMessage", "notice", "thinking", "text", "toolCall", "approval",
                                           "done"]
    assert events[2]["delta"] == "plan" and events[3]["delta"] == "Writing."
    done = events[-1]
    assert (done["status"], done["toolCalls"], done["error"]) == ("interrupted", 1, UNFINISHED)
    assert done["turn"] == log.turn and done["seq"] > events[-2]["seq"]


def test_replay_skips_rows_it_cannot_read(tmp_path):
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("hi")
        log = TurnLog(store, session, sink=lambda event: None)
        log.record(UserMessage(text="hi"))
        store.append(session, log.turn, 1, "toolResult", "?", {"type": "toolResult", "from": "the future"})
        store.append(session, log.turn, 2, "compaction", "summary", {"summary": "..."})
        log.emit(ToolResultEvent(call_id="c9", name="read_file", ok=True, output="x", error=None, duration_ms=3))
        log.record(ToolResultMessage(call_id="c9", name="read_file", output="x"))
        rows = store.events(session)

    assert [e.type for e in replay(rows)] == ["userMessage", "toolResult", "done"]


async def test_a_sidecar_killed_mid_turn_restarts_and_resumes_the_turn(sidecar_factory, fake, workspace, env,
                                                                       tmp_path):
    """The sidecar dies (SIGKILL) while the second request of a turn waits; a new one replays the turn as
    `interrupted`, lists it so, and `sunwell/resume` completes it with the same request, the same turn id."""
    import os
    import signal

    from test_sidecar_support import OPENAI, start_sidecar

    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]),
                Reply(text="never", wait_for=workspace / "never"))
    first = await start_sidecar(env, workspace, {"dataDir": str(tmp_path / "data"), "model": OPENAI})
    chat = asyncio.ensure_future(first.request(protocol.CHAT, {"text": "read a"}))
    await first.wait_for(lambda: len(fake.requests) == 2)
    session = first.events[0]["session"]
    os.kill(first.client._server.pid, signal.SIGKILL)
    await asyncio.gather(chat, return_exceptions=True)  # the request dies with its server

    again = await sidecar_factory()
    [listed] = (await again.request(protocol.SESSIONS, {}))["sessions"]
    assert listed["status"] == "interrupted"
    shown = (await again.request(protocol.SESSION, {"session": session}))["events"]
    assert shown[-1]["type"] == "done" and shown[-1]["status"] == "interrupted"

    fake.script(Reply(text="It says hello."))
    result = await again.request(protocol.RESUME, {"session": session})
    assert result["status"] == "completed" and result["turn"] == shown[-1]["turn"]
    assert fake.requests[2].body == fake.requests[1].body
    resumed = again.turn_events(result["turn"])
    assert resumed[0]["seq"] >= shown[-2]["seq"] + 1 and resumed[-1]["type"] == "done"
    [listed] = (await again.request(protocol.SESSIONS, {}))["sessions"]
    assert listed["status"] == "completed"
    finished = await again.request(protocol.RESUME, {"session": session})  # nothing left to resume
    assert finished["status"] == "error" and "nothing to resume" in finished["error"]
