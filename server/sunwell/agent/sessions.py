"""Sessions: an append-only event log in SQLite (WAL), and the canonical history rebuilt from it.

Every event of a turn is one row: a `kind` ("message" for a canonical message, else an event type such as
"toolCall"), a one-line human-readable `content`, and JSON `data`: enough to rebuild the exact provider
request. Two kinds change what the model is sent from then on without removing anything from the log: an
"elision" (old tool outputs replaced by one line each) and a "compaction" (the history so far replaced by a summary
and the messages kept verbatim); `messages` applies them, `messages(original=True)` and `export` show everything. A
"rewind" takes the conversation back to before a turn (agent/branch.py): every reader but `export` sees that branch.
Each append is committed before it returns, so an acknowledged event survives the process being killed. What is
written is made encodable first (a lone surrogate becomes U+FFFD): model text is cleaned where it enters, but a log
that refuses a row would end the turn, so the log does it once more.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Self

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, from_json

from sunwell.agent.branch import on_branch
from sunwell.agent.history_repair import apply_elision, repair_history
from sunwell.agent.image_files import ImageFiles
from sunwell.agent.log_lines import message_line
from sunwell.errors import SunwellError
from sunwell.models.encodable import encodable
from sunwell.wire.messages import Message

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
APPLICATION_ID = 0x53574C4C  # "SWLL" in the SQLite header: tells our file from any other SQLite database
_SQLITE_MAGIC = b"SQLite format 3\x00"
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)

_SCHEMA = (
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created REAL, updated REAL)",
    (
        "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT, turn TEXT, seq INTEGER,"
        " kind TEXT, content TEXT, data TEXT, ts REAL)"
    ),
    "CREATE INDEX events_by_session ON events (session, id)",
    f"PRAGMA application_id = {APPLICATION_ID}",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)


class SessionStoreError(SunwellError):
    """The session database cannot be used (corrupt, locked, unwritable); the message is one line to show."""


class SessionNotFound(SessionStoreError, KeyError):
    def __init__(self, session: str) -> None:
        super().__init__(f"no session {session!r}; see the stored sessions with `sunwell sessions list`")

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    title: str | None
    updated_at: float
    turns: int
    status: str | None = None
    """How its last turn ended (`completed`, `error`…), `interrupted` when the log never saw it end; None: no turn."""


@dataclass(slots=True)  # not frozen: that makes building one 6x slower, and a restore builds thousands
class EventRow:
    id: int
    session: str
    turn: str
    seq: int
    kind: str
    content: str
    data: Any
    ts: float


class SessionStore:
    """One SQLite connection, shared by the event loop and worker threads under a lock."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._last_ms = 0
        data_dir = self.path.parent
        self.images = ImageFiles(data_dir / "images")  # each image once, by its hash, beside the database
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionStoreError(f"cannot create the data directory {data_dir}: {exc.strerror}") from exc
        if not os.access(data_dir, os.W_OK):
            raise SessionStoreError(f"the data directory {data_dir} is not writable")
        self._refuse_foreign_file()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, check_same_thread=False, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        try:
            self._prepare()
        except BaseException:
            self._db.close()
            raise

    def create(self, title: str | None = None) -> str:
        now, title = time.time(), encodable(title)
        with self._write() as db:
            while True:  # a clash needs two processes in the same millisecond drawing the same 16 bits
                session = self._new_id(now)
                insert = "INSERT OR IGNORE INTO sessions VALUES (?, ?, ?, ?)"
                if db.execute(insert, (session, title, now, now)).rowcount:
                    return session

    def exists(self, session: str) -> bool:
        with self._read() as db:
            return db.execute("SELECT 1 FROM sessions WHERE id = ?", (session,)).fetchone() is not None

    def retitle(self, session: str, title: str) -> None:  # the history lists a session by its branch's first line
        with self._write() as db:
            db.execute("UPDATE sessions SET title = ? WHERE id = ?", (encodable(title[:80]), session))

    def append(
        self, session: str, turn: str, seq: int, kind: str, content: str, data: dict[str, Any] | None = None
    ) -> None:
        payload = None if data is None else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        self._insert(session, turn, seq, kind, content, payload)

    def append_elision(self, session: str, turn: str, seq: int, outputs: dict[str, str], tokens: int) -> None:
        """Old tool results replaced from now on: {call id: the line that stands for its output}."""
        line = f"elided {len(outputs)} old tool result{'' if len(outputs) == 1 else 's'} (~{tokens:,} tokens)"
        self.append(session, turn, seq, "elision", line, {"outputs": outputs, "tokens": tokens})

    def append_compaction(self, session: str, turn: str, seq: int, summary: Message, kept: list[Message],
                          replaced: int, tokens_before: int, tokens_after: int) -> None:
        """The history from now on: `summary` (of `replaced` older messages) and `kept`, verbatim."""
        self.append(session, turn, seq, "compaction",
                    f"compacted {replaced} messages (~{tokens_before:,} → ~{tokens_after:,} tokens)",
                    {"summary": _stored(summary), "kept": [_stored(self.images.stored(m)) for m in kept],
                     "replaced": replaced, "tokensBefore": tokens_before, "tokensAfter": tokens_after})

    def append_message(self, session: str, turn: str, seq: int, message: Message) -> None:
        # model_dump_json is the JSON text of model_dump(mode="json"), without the detour through a dict. What is
        # read from a message (an assistant message's text, thinking and tool_calls: its parts) is not stored.
        message = self.images.stored(message)
        try:
            data = message.model_dump_json(exclude=set(type(message).model_computed_fields))
        except PydanticSerializationError:  # text UTF-8 refuses (a lone surrogate): `_insert` replaces it
            data = json.dumps(_stored(message), ensure_ascii=False, separators=(",", ":"))
        self._insert(session, turn, seq, "message", message_line(message), data)

    def events(self, session: str, *, whole: bool = False) -> list[EventRow]:
        """The session's rows in log order, of the branch a rewind chose (agent/branch.py); `whole`: every row."""
        query = ("SELECT id, session, turn, seq, kind, content, data, ts FROM events WHERE session = ?"
                 " ORDER BY id")
        with self._read() as db:
            rows = db.execute(query, (session,)).fetchall()
        if not rows and not self.exists(session):
            raise SessionNotFound(session)
        # jiter (pydantic_core.from_json) parses the JSON twice as fast as json.loads: restores are bound by it
        events = [EventRow(*head, None if data is None else from_json(data), ts) for *head, data, ts in rows]
        return events if whole else on_branch(events, lambda row: (row.turn, row.kind, row.data))

    def messages(self, session: str, *, original: bool = False, open_tail: bool = False) -> list[Message]:
        """The canonical history as the model is sent it (elisions and compactions applied), repaired so that
        every provider accepts it (see `repair_history`). `original`: every message as it was, each compaction's
        summary where it was made (a transcript). `open_tail`: the last answer's calls without a result are left
        unanswered (a turn that resumes answers them)."""
        query = ("SELECT id, turn, kind, data FROM events WHERE session = ? AND kind IN ('message', 'elision', "
                 "'compaction', 'rewind') ORDER BY id")
        with self._read() as db:
            rows = db.execute(query, (session,)).fetchall()
        if not rows and not self.exists(session):
            raise SessionNotFound(session)
        history: list[Message] = []
        for row_id, _, kind, data in on_branch(rows, lambda row: row[1:]):
            try:
                if kind == "message":
                    history.append(self.images.restored(_MESSAGE.validate_json(data)))
                elif kind == "compaction":
                    change = from_json(data)
                    summary = _MESSAGE.validate_python(change["summary"])
                    kept = [self.images.restored(_MESSAGE.validate_python(m)) for m in change["kept"]]
                    history = [*history, summary] if original else [summary, *kept]
                elif kind == "elision" and not original:
                    apply_elision(history, from_json(data)["outputs"])
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                # e.g. a row of a newer Sunwell: skip it, repair the rest
                log.warning("session %s: event %d is not a %s I can read (%s)", session, row_id, kind, exc)
        return repair_history(history, open_tail=open_tail)

    def export(self, session: str) -> dict[str, Any]:
        with self._read() as db:
            query = "SELECT title, created, updated FROM sessions WHERE id = ?"
            row = db.execute(query, (session,)).fetchone()
        if row is None:
            raise SessionNotFound(session)
        events = [
            {"turn": e.turn, "seq": e.seq, "kind": e.kind, "content": e.content, "data": e.data, "ts": e.ts}
            for e in self.events(session, whole=True)
        ]
        return {"id": session, "title": row[0], "created": row[1], "updated": row[2], "events": events}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def list(self) -> list[SessionInfo]:  # last, so that `list` in the annotations above is the builtin
        query = (
            "SELECT id, title, updated, (SELECT COUNT(DISTINCT turn) FROM events WHERE session = sessions.id AND turn != ''),"
            " (SELECT kind || ' ' || content FROM events WHERE session = sessions.id AND turn != '' ORDER BY id DESC"
            " LIMIT 1) FROM sessions ORDER BY updated DESC, id DESC"
        )
        with self._read() as db:
            infos = [SessionInfo(*row[:4], _status(row[4])) for row in db.execute(query)]
            forked = {row[0] for row in db.execute("SELECT DISTINCT session FROM events WHERE kind = 'rewind'")}
        return [self._branch_info(info) if info.id in forked else info for info in infos]

    def _branch_info(self, info: SessionInfo) -> SessionInfo:
        """`info` with the turns and the status of the branch a rewind chose (the query above counts every turn)."""
        rows = [row for row in self.events(info.id) if row.turn]
        return replace(info, turns=len({row.turn for row in rows}),
                       status=_status(f"{rows[-1].kind} {rows[-1].content}" if rows else None))

    # -- internals

    def _insert(self, session: str, turn: str, seq: int, kind: str, content: str, data: str | None) -> None:
        now, content, data = time.time(), encodable(content), encodable(data)
        with self._write() as db:
            if not db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session)).rowcount:
                raise SessionNotFound(session)
            insert = "INSERT INTO events (session, turn, seq, kind, content, data, ts) VALUES (?,?,?,?,?,?,?)"
            db.execute(insert, (session, turn, seq, kind, content, data, now))

    def _new_id(self, now: float) -> str:
        # 12 hex digits of milliseconds (sortable for millennia, increasing within a store) + 16 random bits
        self._last_ms = max(int(now * 1000), self._last_ms + 1)
        return f"{self._last_ms:012x}{secrets.token_hex(2)}"

    def _refuse_foreign_file(self) -> None:
        """Look at the first bytes ourselves, so that a file that is not SQLite is never handed to SQLite."""
        try:
            with self.path.open("rb") as file:
                head = file.read(len(_SQLITE_MAGIC))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionStoreError(f"cannot read the session database {self.path}: {exc.strerror}") from exc
        if head and head != _SQLITE_MAGIC:
            raise self._invalid()

    def _prepare(self) -> None:
        with self._read() as db:
            db.execute("BEGIN")  # one snapshot: another process may set the file up between two looks
            app_id, version = self._header()
            fresh = (app_id, version) == (0, 0) and db.execute("SELECT 1 FROM sqlite_master").fetchone() is None
            db.execute("COMMIT")
            if not fresh and app_id != APPLICATION_ID:
                raise self._invalid()  # before the first write: someone else's database stays as it was
            self._enter_wal(db)
            # In WAL mode NORMAL syncs at checkpoints, not at every commit: a killed process loses nothing
            # committed; only a power cut can lose the last commits. FULL would cost an fsync per event.
            db.execute("PRAGMA synchronous = NORMAL")
        if fresh:
            with self._write() as db:
                if self._header() == (0, 0):  # another process may have set it up while we were looking
                    for statement in _SCHEMA:
                        db.execute(statement)
                version = self._header()[1]
        if version != SCHEMA_VERSION:
            raise SessionStoreError(
                f"{self.path} has session schema {version}, this Sunwell reads {SCHEMA_VERSION}; "
                "use a matching Sunwell version (the file was left untouched)"
            )

    def _enter_wal(self, db: sqlite3.Connection) -> None:
        """WAL mode, which the file keeps once set. While another connection sets up a new file, SQLite answers
        the switch "busy" at once, without its busy handler: ask again until the busy timeout is spent."""
        deadline = time.monotonic() + self._busy_timeout
        while db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                db.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if not getattr(exc, "sqlite_errorname", "").startswith("SQLITE_BUSY") or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)

    def _header(self) -> tuple[int, int]:
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        return app_id, self._db.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._sqlite_errors():
            yield self._db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, committed on the way out (BEGIN IMMEDIATE: wait for the write lock up front)."""
        with self._lock, self._sqlite_errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: sqlite3.Error) -> SessionStoreError:
        name = getattr(exc, "sqlite_errorname", None) or ""
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return SessionStoreError(
                f"the session database {self.path} is locked by another process "
                f"(waited {self._busy_timeout:g}s); close the other Sunwell and try again"
            )
        if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
            return self._invalid()
        if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_FULL", "SQLITE_IO")):
            return SessionStoreError(f"cannot write the session database {self.path}: {exc}")
        return SessionStoreError(f"session database {self.path}: {exc}")

    def _invalid(self) -> SessionStoreError:
        return SessionStoreError(f"{self.path} is not a valid Sunwell session database (corrupt?); it was left untouched")


def _status(last_row: str | None) -> str | None:
    """A turn's status from its last row ("done completed", "done error: …"; any other row: it never ended)."""
    if last_row is None:
        return None
    return last_row[5:].split(":", 1)[0] if last_row.startswith("done ") else "interrupted"


def _stored(message: Message) -> dict[str, Any]:
    """A message as its row stores it (what is read from an assistant message's parts is left out)."""
    return message.model_dump(mode="json", exclude=set(type(message).model_computed_fields))
