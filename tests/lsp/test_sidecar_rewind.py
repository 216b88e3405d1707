"""Edit & resend and Retry over real stdio (issue 34 items 8 and 10): `sunwell/chat` with `replaceTurn` sends a line in
place of a turn of the session. The model never sees the turn replaced (nor what followed it); the replay, the
sessions list and the usage show the branch chosen; the log keeps both. A turn of another session, a made-up id, a
::command or a line sent while a turn runs are refused, and nothing is written."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from fake_provider import Reply
from sunwell.agent.sessions import SessionStore
from sunwell.wire import protocol
from test_sidecar_support import check_turn

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures


def sent(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] != "system"]


async def test_an_edited_line_replaces_the_last_exchange_and_the_model_never_sees_the_old_one(sidecar, fake, tmp_path):
    fake.script(Reply(text="First answer."), Reply(text="Old answer."), Reply(text="New answer."),
                Reply(text="Regenerated answer."))
    first, _ = await sidecar.chat("first question")
    session = first["session"]
    old, _ = await sidecar.chat("second question", session=session)

    edited, events = await sidecar.chat("second question, edited", session=session, replaceTurn=old["turn"])
    check_turn(events, edited)
    assert edited["session"] == session and edited["turn"] != old["turn"] and edited["status"] == "completed"
    assert sent(fake.requests[-1]) == ["first question", "First answer.", "second question, edited"]

    # Retry of a completed answer: the same line again, in place of the turn it answered
    again, _ = await sidecar.chat("second question, edited", session=session, replaceTurn=edited["turn"])
    assert sent(fake.requests[-1]) == ["first question", "First answer.", "second question, edited"]

    shown = await sidecar.request(protocol.SESSION, {"session": session})
    users = [(e["turn"], e["text"]) for e in shown["events"] if e["type"] == "userMessage"]
    assert users == [(first["turn"], "first question"), (again["turn"], "second question, edited")]
    assert [e["delta"] for e in shown["events"] if e["type"] == "text"] == ["First answer.", "Regenerated answer."]
    assert [(m["role"], m["text"]) for m in shown["messages"]] == [
        ("user", "first question"), ("assistant", "First answer."),
        ("user", "second question, edited"), ("assistant", "Regenerated answer.")]
    [info] = (await sidecar.request(protocol.SESSIONS, {}))["sessions"]
    assert info["turns"] == 2 and info["status"] == "completed"
    usage = await sidecar.request(protocol.USAGE, {"session": session})
    assert [t["turn"] for t in usage["turns"]] == [first["turn"], again["turn"]]
    assert usage["inputTokens"] == sum(t["inputTokens"] for t in usage["turns"])

    with SessionStore(tmp_path / "data" / "sessions.db") as store:  # the log keeps every branch
        logged = {row.turn for row in store.events(session, whole=True) if row.kind == "message"}
        assert logged == {first["turn"], old["turn"], edited["turn"], again["turn"]}
        assert [row.data for row in store.events(session, whole=True) if row.kind == "rewind"] == [
            {"turn": old["turn"]}, {"turn": edited["turn"]}]


async def test_a_turn_of_another_session_a_forged_id_or_a_command_is_refused_and_nothing_is_written(
        sidecar, fake, tmp_path):
    fake.script(Reply(text="Mine."), Reply(text="Theirs."))
    mine, _ = await sidecar.chat("my question")
    theirs, _ = await sidecar.chat("their question")
    assert mine["session"] != theirs["session"]
    before = len(sidecar.events)

    refused = [
        ({"session": mine["session"], "replaceTurn": theirs["turn"]}, "no turn"),  # another session's turn
        ({"session": mine["session"], "replaceTurn": "t_000000000000"}, "no turn"),  # a forged id
        ({"session": mine["session"], "replaceTurn": mine["session"]}, "no turn"),  # not even a turn
        ({"replaceTurn": mine["turn"]}, "new chat"),  # no session: nothing to replace in
        ({"session": "nope", "replaceTurn": mine["turn"]}, "no turn"),
        ({"session": mine["session"], "replaceTurn": ""}, "replaceTurn"),
    ]
    for params, why in refused:
        with pytest.raises(JsonRpcInvalidParams, match=why) as caught:
            await sidecar.request(protocol.CHAT, {"text": "take over", **params})
        assert caught.value.code == -32602
    with pytest.raises(JsonRpcInvalidParams, match="::command"):
        await sidecar.request(protocol.CHAT, {"text": "::context", "session": mine["session"],
                                               "replaceTurn": mine["turn"]})

    assert len(sidecar.events) == before  # no turn ran: not even a `done`
    assert len(fake.requests) == 2
    with SessionStore(tmp_path / "data" / "sessions.db") as store:
        assert not [row for s in (mine, theirs) for row in store.events(s["session"], whole=True)
                    if row.kind == "rewind"]
        assert [m.text for m in store.messages(theirs["session"])] == ["their question", "Theirs."]
    # the session goes on as before
    fake.script(Reply(text="Still here."))
    after, _ = await sidecar.chat("and now?", session=mine["session"])
    assert sent(fake.requests[-1]) == ["my question", "Mine.", "and now?"]
    assert after["status"] == "completed"


async def test_a_line_that_replaces_a_turn_is_refused_while_a_turn_runs_in_that_session(sidecar, fake, workspace):
    fake.script(Reply(text="Done."), Reply(text="held", wait_for=workspace / "go"), Reply(text="Replaced."))
    first, _ = await sidecar.chat("first")
    session = first["session"]
    msg_id = sidecar.next_id()
    running = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "slow", "session": session},
                                                    msg_id=msg_id))
    await sidecar.wait_for(lambda: len(fake.requests) == 2)
    with pytest.raises(JsonRpcException, match="running") as caught:
        await asyncio.wait_for(sidecar.request(protocol.CHAT, {"text": "instead", "session": session,
                                                               "replaceTurn": first["turn"]}), 10)  # not queued
    assert caught.value.code == protocol.REQUEST_FAILED
    (workspace / "go").touch()
    slow = await asyncio.wait_for(running, 10)
    assert slow["status"] == "completed" and len(fake.requests) == 2  # the refused line asked no model

    # once it ended, replacing the running one's turn works
    replaced, _ = await sidecar.chat("instead", session=session, replaceTurn=slow["turn"])
    assert replaced["status"] == "completed"
    assert sent(fake.requests[-1]) == ["first", "Done.", "instead"]
