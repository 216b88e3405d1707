"""The session store: real SQLite files in a temp dir, real processes killed mid-write."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sunwell.agent.history_repair import repair_history
from sunwell.agent.log_lines import message_line
from sunwell.agent.sessions import (
    EventRow,
    SessionNotFound,
    SessionStore,
    SessionStoreError,
)
from sunwell.wire.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolError,
    ToolResultMessage,
    UserMessage,
)

SERVER = Path(__file__).resolve().parents[2] / "server"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions.db"


@pytest.fixture
def store(db_path: Path):
    with SessionStore(db_path) as store:
        yield store


def call(call_id: str, name: str = "read_file", **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def result(call_id: str, name: str = "read_file", output: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(call_id=call_id, name=name, output=output)


def interrupted(call_id: str, name: str = "read_file") -> ToolResultMessage:
    error = ToolError(code="interrupted", message="the tool did not finish: the turn was interrupted")
    return ToolResultMessage(call_id=call_id, name=name, output="", ok=False, error=error)


EVERY_MESSAGE = [
    SystemMessage(text="You are Sunwell."),
    UserMessage(text="Read a.txt — and tell me 🌞\nsecond line"),
    AssistantMessage(
        text="Reading both.",
        thinking="The user wants a.txt.",
        thinking_signature="sig==",
        tool_calls=[
            call("c1", path="a.txt", offset=2, limit=None),
            ToolCall(id="c2", name="search_files", arguments={}, raw='{"pattern": "x'),
        ],
    ),
    ToolResultMessage(call_id="c1", name="read_file", output="line 1\nline 2\n"),
    ToolResultMessage(
        call_id="c2",
        name="search_files",
        output="",
        ok=False,
        error=ToolError(code="validation", message="pattern is required", suggestion="pass a regex"),
    ),
    AssistantMessage(text="a.txt has two lines."),
]


def test_every_message_type_round_trips(store: SessionStore) -> None:
    session = store.create("round trip")
    for seq, message in enumerate(EVERY_MESSAGE):
        store.append_message(session, "t1", seq, message)

    assert store.messages(session) == EVERY_MESSAGE
    rows = store.events(session)
    assert [row.kind for row in rows] == ["message"] * len(EVERY_MESSAGE)
    assert [row.seq for row in rows] == list(range(len(EVERY_MESSAGE)))
    assert rows[1].data == {"role": "user", "text": "Read a.txt — and tell me 🌞\nsecond line"}
    assert [row.content for row in rows] == [
        "system: You are Sunwell.",
        "user: Read a.txt — and tell me 🌞 second line",
        'assistant: Reading both.; read_file(path="a.txt", offset=2, limit=null); search_files({"pattern": "x)',
        "✔ read_file 2 lines",
        "✘ search_files validation: pattern is required",
        "assistant: a.txt has two lines.",
    ]


def test_event_rows_keep_their_structured_data(store: SessionStore) -> None:
    session = store.create()
    data = {"type": "toolCall", "callId": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}
    store.append(session, "t1", 0, "toolCall", 'read_file(path="a.txt")', data)
    store.append(session, "t1", 1, "turnStart", "turn started", None)

    first, second = store.events(session)
    assert isinstance(first, EventRow)
    assert (first.session, first.turn, first.seq, first.kind) == (session, "t1", 0, "toolCall")
    assert first.content == 'read_file(path="a.txt")' and first.data == data
    assert second.data is None and second.id > first.id and second.ts >= first.ts
    assert store.messages(session) == []  # event rows are not part of the model's history


def test_history_survives_reopening(db_path: Path) -> None:
    with SessionStore(db_path) as first:
        session = first.create("kept")
        for seq, message in enumerate(EVERY_MESSAGE):
            first.append_message(session, "t1", seq, message)
    with SessionStore(db_path) as second:
        assert second.exists(session)
        assert second.messages(session) == EVERY_MESSAGE
        assert [info.title for info in second.list()] == ["kept"]


def test_export_is_json_ready(store: SessionStore) -> None:
    import json

    session = store.create("exported")
    store.append_message(session, "t1", 0, UserMessage(text="hi"))
    store.append(session, "t1", 1, "done", "completed", {"type": "done", "status": "completed"})

    exported = json.loads(json.dumps(store.export(session)))
    assert exported["id"] == session and exported["title"] == "exported"
    assert exported["created"] <= exported["updated"]
    assert [(e["turn"], e["seq"], e["kind"]) for e in exported["events"]] == [
        ("t1", 0, "message"),
        ("t1", 1, "done"),
    ]
    assert exported["events"][0]["data"] == {"role": "user", "text": "hi"}


# -- repair of what a crash leaves behind


def test_a_dangling_tool_call_gets_an_interrupted_result(store: SessionStore) -> None:
    session = store.create()
    store.append_message(session, "t1", 0, UserMessage(text="read a"))
    store.append_message(session, "t1", 1, AssistantMessage(tool_calls=[call("c1", path="a")]))
    # the process died here, mid-tool; the user comes back later
    store.append_message(session, "t2", 0, UserMessage(text="again?"))

    assert store.messages(session) == [
        UserMessage(text="read a"),
        AssistantMessage(tool_calls=[call("c1", path="a")]),
        interrupted("c1"),
        UserMessage(text="again?"),
    ]
    assert len(store.events(session)) == 3  # repaired when read; the log itself stays as written


def test_the_results_of_two_calls_come_in_call_order_the_unanswered_one_interrupted(store: SessionStore) -> None:
    session = store.create()
    asked = AssistantMessage(tool_calls=[call("c1", path="a"), call("c2", "list_files")])
    for seq, message in enumerate([UserMessage(text="go"), asked, result("c2", "list_files")]):
        store.append_message(session, "t1", seq, message)

    assert store.messages(session) == [
        UserMessage(text="go"),
        asked,
        interrupted("c1"),
        result("c2", "list_files"),
    ]
    # a turn taken up again answers the open call itself
    assert store.messages(session, open_tail=True) == [UserMessage(text="go"), asked, result("c2", "list_files")]


def test_results_that_answer_no_pending_call_are_dropped() -> None:
    asked = AssistantMessage(tool_calls=[call("c1")])
    history = [
        result("ghost"),  # no call before it
        UserMessage(text="go"),
        asked,
        result("c1"),
        result("c1", output="twice"),  # a second answer
        result("nobody"),
        AssistantMessage(text="done"),
        result("c1", output="late"),  # out of place: after the next message
    ]
    assert repair_history(history) == [
        UserMessage(text="go"),
        asked,
        result("c1"),
        AssistantMessage(text="done"),
    ]


def test_a_valid_history_is_left_as_it_is() -> None:
    assert repair_history(EVERY_MESSAGE) == EVERY_MESSAGE


def test_a_stray_result_in_the_log_is_dropped(store: SessionStore) -> None:
    session = store.create()
    store.append_message(session, "t1", 0, UserMessage(text="hi"))
    store.append_message(session, "t1", 1, result("stray"))
    store.append_message(session, "t1", 2, AssistantMessage(text="hello"))
    assert store.messages(session) == [UserMessage(text="hi"), AssistantMessage(text="hello")]


# -- listing


def test_list_is_newest_first_with_turn_counts(store: SessionStore) -> None:
    older = store.create("older")
    newer = store.create("newer")
    empty = store.create()
    for turn in ("t1", "t2"):
        for seq in range(3):
            store.append(older, turn, seq, "notice", "n", {"seq": seq})
    store.append_message(newer, "t1", 0, UserMessage(text="hi"))
    store.append(older, "t3", 0, "done", "completed", None)  # older becomes the most recently updated

    listed = store.list()
    assert [(i.id, i.title, i.turns) for i in listed] == [
        (older, "older", 3),
        (newer, "newer", 1),
        (empty, None, 0),
    ]
    assert listed[0].updated_at >= listed[1].updated_at >= listed[2].updated_at


def test_session_ids_are_short_sortable_and_unique(store: SessionStore) -> None:
    ids = [store.create() for _ in range(200)]
    assert len(set(ids)) == 200 and ids == sorted(ids)
    assert all(12 <= len(i) <= 16 and i.isalnum() for i in ids)


# -- failures the user must understand


@pytest.mark.parametrize(
    "operation",
    [
        lambda s: s.messages("nope"),
        lambda s: s.events("nope"),
        lambda s: s.export("nope"),
        lambda s: s.append("nope", "t1", 0, "notice", "n", None),
        lambda s: s.append_message("nope", "t1", 0, UserMessage(text="hi")),
    ],
)
def test_an_unknown_session_says_how_to_list_sessions(store: SessionStore, operation) -> None:
    with pytest.raises(SessionNotFound) as caught:
        operation(store)
    assert isinstance(caught.value, KeyError)
    assert "'nope'" in str(caught.value) and "sunwell sessions list" in str(caught.value)
    assert store.list() == []  # nothing half-written


def test_a_garbage_file_is_refused_and_left_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    garbage = os.urandom(8192)
    db_path.write_bytes(garbage)

    with pytest.raises(SessionStoreError) as caught:
        SessionStore(db_path)
    assert str(caught.value) == (
        f"{db_path} is not a valid Sunwell session database (corrupt?); it was left untouched"
    )
    assert db_path.read_bytes() == garbage
    assert sorted(p.name for p in db_path.parent.iterdir()) == ["sessions.db"]


def test_a_corrupt_database_is_refused_and_left_untouched(db_path: Path) -> None:
    with SessionStore(db_path) as store:
        store.create("soon corrupt")
    damaged = bytearray(db_path.read_bytes())
    damaged[16:] = os.urandom(len(damaged) - 16)  # a valid magic string, then noise
    db_path.write_bytes(bytes(damaged))

    with pytest.raises(SessionStoreError, match="not a valid Sunwell session database"):
        SessionStore(db_path)
    assert db_path.read_bytes() == bytes(damaged)


def test_another_programs_sqlite_database_is_not_taken_over(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    other = sqlite3.connect(db_path)
    other.execute("CREATE TABLE notes (text TEXT)")
    other.commit()
    other.close()
    before = db_path.read_bytes()

    with pytest.raises(SessionStoreError, match="not a valid Sunwell session database"):
        SessionStore(db_path)
    assert db_path.read_bytes() == before


def test_a_database_locked_by_another_writer_is_reported(db_path: Path) -> None:
    SessionStore(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = SessionStore(db_path, busy_timeout=0.2)  # WAL: reading is still possible
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match="locked") as caught:
            store.create()
        assert time.monotonic() - started >= 0.15  # it waited for the busy timeout first
        assert str(db_path) in str(caught.value)
        store.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_database_locked_while_being_set_up_is_reported(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    holder = sqlite3.connect(db_path, isolation_level=None)  # not WAL yet: the lock blocks readers too
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SessionStoreError, match="locked"):
            SessionStore(db_path, busy_timeout=0.1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with SessionStore(db_path) as store:  # once released, it opens normally
        assert store.list() == []


def test_sessions_that_open_a_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    """Two worktree sessions of one sidecar (or two `sunwell run`s) open a store nobody made yet at the same moment:
    SQLite answers the second switch to WAL "busy" without waiting, and that is no reason to fail a turn."""
    for attempt in range(20):
        db_path, start = tmp_path / f"data{attempt}" / "sessions.db", threading.Barrier(4)
        failures: list[Exception] = []

        def open_it() -> None:
            start.wait()
            try:
                with SessionStore(db_path) as store:
                    store.create()
            except SessionStoreError as exc:
                failures.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        with SessionStore(db_path) as store:
            assert len(store.list()) == 4


def test_a_data_dir_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    target = tmp_path / "a-file" / "data" / "sessions.db"
    with pytest.raises(SessionStoreError, match="cannot create the data directory") as caught:
        SessionStore(target)
    assert str(target.parent) in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_data_dir_is_named(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o500)
    try:
        with pytest.raises(SessionStoreError, match="not writable") as caught:
            SessionStore(data / "sessions.db")
        assert str(data) in str(caught.value)
    finally:
        data.chmod(0o700)


# -- crashes: real processes, killed without any chance to clean up

_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from sunwell.agent.sessions import SessionStore
    from sunwell.wire.messages import AssistantMessage, ToolCall, UserMessage

    store = SessionStore(sys.argv[1])
    session = store.create("crash")
    print(session, flush=True)
    if sys.argv[2] == "mid-tool":
        store.append_message(session, "t1", 0, UserMessage(text="read a"))
        call = ToolCall(id="c1", name="read_file", arguments={"path": "a"})
        store.append_message(session, "t1", 1, AssistantMessage(tool_calls=[call]))
        os.kill(os.getpid(), signal.SIGKILL)  # dies while the tool "runs"
    seq = 0
    while True:  # until the parent kills us
        store.append(session, "t1", seq, "notice", f"event {seq}", {"seq": seq})
        print(seq, flush=True)  # acknowledged
        seq += 1
    """
)


def _writer(db_path: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db_path), mode], stdout=subprocess.PIPE, text=True, env=env
    )


def test_every_acknowledged_event_survives_kill_9(db_path: Path) -> None:
    writer = _writer(db_path, "loop")
    session = writer.stdout.readline().strip()
    acknowledged = -1
    while acknowledged < 300:
        acknowledged = int(writer.stdout.readline())
    writer.send_signal(signal.SIGKILL)
    rest = writer.stdout.read().split()  # acknowledgements still in the pipe
    writer.wait(timeout=10)
    assert writer.returncode == -signal.SIGKILL
    acknowledged = int(rest[-1]) if rest else acknowledged

    with SessionStore(db_path) as store:
        stored = [row.data["seq"] for row in store.events(session)]
    assert stored[: acknowledged + 1] == list(range(acknowledged + 1))
    assert stored == list(range(len(stored)))  # at most one more, unacknowledged, and no gaps
    assert len(stored) - 1 - acknowledged in (0, 1)


def test_a_process_killed_mid_tool_leaves_a_valid_conversation(db_path: Path) -> None:
    writer = _writer(db_path, "mid-tool")
    session = writer.stdout.readline().strip()
    assert writer.wait(timeout=30) == -signal.SIGKILL

    with SessionStore(db_path) as store:
        assert store.messages(session) == [
            UserMessage(text="read a"),
            AssistantMessage(tool_calls=[call("c1", path="a")]),
            interrupted("c1"),
        ]


def test_message_lines_are_single_short_lines() -> None:
    long = UserMessage(text="x\n" * 500)
    line = message_line(long)
    assert "\n" not in line and len(line) <= 200 and line.endswith("…")
    assert message_line(result("c1", output="one")) == "✔ read_file 1 line"
    assert message_line(AssistantMessage(thinking="hmm")) == "assistant: (thinking)"
