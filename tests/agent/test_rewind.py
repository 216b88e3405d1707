"""A line sent in place of a turn (issue 34: Edit & resend, Retry): a `rewind` row takes the session's conversation
back to before that turn (agent/branch.py). The log keeps both branches; the model, the replay, `::context`, usage,
the sessions list and resume read the chosen one; the files stay as they are (Undo still goes turn by turn). Against
a real engine, session store and workspace, the fake provider as the model; the crash as a real `sunwell run` killed
with SIGKILL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from sunwell.agent.branch import on_branch
from sunwell.agent.chat import UserInput
from sunwell.agent.replay import replay
from sunwell.agent.session import Session, rewind
from sunwell.agent.sessions import SessionStore
from sunwell.agent.turn import TurnLog
from sunwell.agent.usage import session_usage
from sunwell.errors import InvalidReplace, SessionBusy
from sunwell.wire.messages import AssistantMessage, UserMessage
from test_durable_turns import Crashing

OPENAI = "openai:gpt-4o"


async def line(engine, session, text, replace=None):
    events = []
    result = await Session(engine, session).submit(UserInput(text, replace_turn=replace), events.append)
    return result.done, events


def sent(fake) -> list[str]:
    return [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] != "system"]


def texts(messages) -> list[str]:
    return [m.text for m in messages]


def last_turn(env, session: str) -> str:
    """The last turn of `session`'s branch with a line, read from its log as another process would."""
    with SessionStore(Path(env["SUNWELL_DATA_DIR"]) / "sessions.db") as store:
        return [row.turn for row in store.events(session) if row.kind == "message"][-1]


def exchange(store: SessionStore, session: str, question: str, answer: str) -> str:
    """One turn as a turn writes its log: its settings, the line, the answer, its `done`."""
    log = TurnLog(store, session, sink=lambda event: None)
    store.append(session, log.turn, 0, "settings", "model", {"model": OPENAI})
    log.record(UserMessage(text=question))
    log.record(AssistantMessage(text=answer))
    store.append(session, log.turn, 1, "done", "completed", {"status": "completed", "toolCalls": 0, "usage": None})
    return log.turn


def test_a_rewind_cuts_the_turn_and_all_after_it_from_what_is_read_and_the_log_keeps_them(tmp_path):
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("a")
        first = exchange(store, session, "a", "A")
        second = exchange(store, session, "b", "B")
        store.append_compaction(session, "", 0, UserMessage(text="summary of a and b"), [], 4, 100, 10)  # ::compact
        exchange(store, session, "c", "C")
        rewind(store, session, second)
        assert texts(store.messages(session)) == ["a", "A"]  # the ::compact made after it went with it
        fourth = exchange(store, session, "d", "D")
        assert texts(store.messages(session)) == ["a", "A", "d", "D"]
        assert texts(store.messages(session, original=True)) == ["a", "A", "d", "D"]  # ::save's transcript too
        assert {row.turn for row in store.events(session) if row.turn} == {first, fourth}
        assert len({row.turn for row in store.events(session, whole=True) if row.turn}) == 4
        assert [e["kind"] for e in store.export(session)["events"]].count("compaction") == 1

        rewind(store, session, fourth)  # a second fork, from the branch chosen
        with pytest.raises(InvalidReplace, match="no turn"):
            rewind(store, session, second)  # off the branch already
        assert texts(store.messages(session)) == ["a", "A"]
        [info] = store.list()
        assert (info.turns, info.status) == (1, "completed")
        rewind(store, session, first)
        [info] = store.list()
        assert (info.turns, info.status) == (0, None) and store.messages(session) == []


def test_a_rewind_a_racing_process_wrote_for_a_turn_already_cut_changes_nothing():
    rows = [("t1", "message", "a"), ("t2", "message", "b"), ("", "rewind", {"turn": "t2"}),
            ("", "rewind", '{"turn": "t2"}'), ("", "rewind", {"turn": "t_forged"}), ("t3", "message", "c")]
    assert [row[2] for row in on_branch(rows, lambda row: row) if row[1] == "message"] == ["a", "c"]


async def test_the_model_the_replay_usage_and_context_read_the_branch_chosen(engine, fake):
    fake.script(Reply(text="One."), Reply(text="Two."), Reply(text="Three."), Reply(text="Two, again."))
    first, _ = await line(engine, None, "one")
    session = first.session
    second, _ = await line(engine, session, "two")
    await line(engine, session, "three")

    again, events = await line(engine, session, "two, edited", replace=second.turn)
    assert again.status == "completed" and events[-1] == again
    assert sent(fake) == ["one", "One.", "two, edited"]  # neither the old line nor what came after it

    rows = engine.store.events(session)
    shown = [e for e in replay(rows) if e.type == "userMessage"]
    assert [(e.turn, e.text) for e in shown] == [(first.turn, "one"), (again.turn, "two, edited")]
    usage = session_usage(rows, OPENAI)
    assert [t.turn for t in usage.turns] == [first.turn, again.turn]
    whole = session_usage(engine.store.events(session, whole=True), OPENAI)
    assert len(whole.turns) == 4 and whole.input_tokens > usage.input_tokens

    _, answered = await line(engine, session, "::context")
    said = next(e for e in answered if e.type == "commandOutput").output
    assert "- messages: 4" in said and "over 2 turns" in said and "history: 4 messages" in said
    assert f"{usage.input_tokens:,} in" in said


async def test_a_turn_of_another_session_a_forged_id_a_command_or_a_busy_session_is_refused(engine, fake):
    fake.script(Reply(text="Mine."), Reply(text="Theirs."))
    mine, _ = await line(engine, None, "mine")
    theirs, _ = await line(engine, None, "theirs")
    for session, turn in ((mine.session, theirs.turn), (mine.session, "t_forged"), (None, mine.turn),
                          ("nope", mine.turn)):
        with pytest.raises(InvalidReplace):
            await line(engine, session, "take over", replace=turn)
    with pytest.raises(InvalidReplace, match="::command"):
        await line(engine, mine.session, "::clear", replace=mine.turn)
    async with engine.live.get(mine.session).lock:  # a turn runs in that session
        with pytest.raises(SessionBusy, match="running"):
            await asyncio.wait_for(line(engine, mine.session, "instead", replace=mine.turn), 5)  # not queued
    assert len(fake.requests) == 2
    for session in (mine.session, theirs.session):
        assert [row for row in engine.store.events(session, whole=True) if row.kind == "rewind"] == []
    assert texts(engine.store.messages(mine.session)) == ["mine", "Mine."]


async def test_rewinding_leaves_the_files_and_undo_still_takes_back_the_replaced_turns_changes(engine, fake, workspace):
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "made.txt", "content": "x\n"}))]),
                Reply(text="Made it."), Reply(text="Nothing made."))
    made, _ = await line(engine, None, "make a file")
    assert (workspace / "made.txt").exists()
    instead, _ = await line(engine, made.session, "make nothing", replace=made.turn)
    assert instead.status == "completed" and (workspace / "made.txt").exists()
    undone = engine.undo(made.session)
    assert undone.turn == made.turn and not (workspace / "made.txt").exists()


def test_a_line_killed_after_its_rewind_reads_back_on_its_branch_and_resumes_there(sunwell, fake, env, workspace):
    env["SUNWELL_MODEL"] = OPENAI  # the `sunwell` fixture reads this very dict, as `Crashing` does
    fake.script(Reply(text="One."), Reply(text="Two."))
    first = sunwell("run", "one", "--json")
    session = first.events[0]["session"]
    old = sunwell("run", "two", "--json", "--session", session)
    assert old.code == 0, old.stderr

    fake.script(Reply(text="never seen", wait_for=workspace / "never"))
    killed = Crashing(env, workspace, "two, edited", "--json", "--session", session,
                      "--replace-turn", old.events[0]["turn"])
    killed.kill_when(lambda: len(fake.requests) == 3)  # the request waits: nothing was streamed yet
    edited = last_turn(env, session)
    assert edited != old.events[0]["turn"]
    assert sent(fake) == ["one", "One.", "two, edited"]

    listed = sunwell("sessions", "list")
    assert f"{session}" in listed.stdout and "2 turn(s)" in listed.stdout and "[interrupted]" in listed.stdout
    shown = sunwell("sessions", "show", session)
    assert "rewind" in shown.stdout and "user: two\n" not in shown.stdout and "user: two, edited" in shown.stdout
    exported = json.loads(sunwell("sessions", "export", session).stdout)
    assert "user: two" in [e["content"] for e in exported["events"]]  # the log keeps the old branch

    fake.script(Reply(text="Two, edited: done."))
    resumed = sunwell("run", "--resume", "--json", "--session", session)
    assert resumed.code == 0, resumed.stderr
    assert {e["turn"] for e in resumed.events} == {edited}  # the new line's turn, not the replaced one
    assert sent(fake) == ["one", "One.", "two, edited"]

    # the replaced turn, had it been left interrupted, is never taken up: the branch ends in a finished turn
    fake.script(Reply(text="cut", wait_for=workspace / "never"))
    cut = Crashing(env, workspace, "three", "--json", "--session", session)
    cut.kill_when(lambda: len(fake.requests) == 5)
    three = last_turn(env, session)
    fake.script(Reply(text="Three, again."))
    instead = sunwell("run", "three, again", "--json", "--session", session, "--replace-turn", three)
    assert instead.code == 0, instead.stderr
    nothing = sunwell("run", "--resume", "--session", session)
    assert nothing.code == 2 and "nothing to resume" in nothing.stderr
    refused = sunwell("run", "again", "--session", session, "--replace-turn", three)
    assert refused.code == 2 and "no turn" in refused.stderr
