"""The audit log: one redacted JSON line per call, day files, 0600, read back by `recent` and `format_entry`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from sunwell.tools.handlers.edits import EDIT_FILE, WRITE_FILE
from sunwell.tools.policy.audit import AuditLog, format_entry, parse_since, redact

CANARY = "canary-9f8e7d6c5b"
DOTENV_CANARY = "dotenv-canary-31415926"
API_KEY = "sk-live-abcdef123456"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def call(log: AuditLog, tool: str = "run_command", arguments=None, **fields) -> dict:
    base = {"session": "s1", "turn": "t1", "tool": tool, "call_id": "c1", "arguments": arguments or {},
            "decision": "allow", "by": "user", "ok": True, "error": None, "duration_ms": 1234}
    return log.record(**{**base, **fields})


def every_byte_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_no_secret_ever_reaches_the_audit_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", CANARY)
    (tmp_path / "ws").mkdir()
    dotenv = tmp_path / "ws" / ".env"
    dotenv.write_text(f"SECRET_TOKEN={DOTENV_CANARY}\n")
    log = AuditLog(tmp_path / "data")
    dotenv_text = dotenv.read_text()
    call(log, arguments={"command": f"curl -H 'Authorization: Bearer {API_KEY}' https://example.com"})
    call(log, arguments={"command": f"echo {CANARY} | tee -a log.txt", "cwd": "."})
    call(log, arguments={"command": f"export API_TOKEN={DOTENV_CANARY}"})
    call(log, "write_file", {"path": "leak.txt", "content": f"token {CANARY}\n{dotenv_text}"},
         content=WRITE_FILE.content)
    call(log, "edit_file", {"path": "a.py", "old_text": CANARY, "new_text": dotenv_text, "replace_all": False},
         content=EDIT_FILE.content)
    call(log, "run_command", {"command": "x", "nested": {"list": [CANARY, {"deep": API_KEY}]}}, decision="deny",
         by="policy", ok=False, error="denied")
    call(log, "read_file", {"path": ".env"}, decision="auto", by=None, ok=False, error="permission")
    call(log, "weird", {"raw": f'{{"content": "{CANARY}"'}, decision=None, by=None, ok=False, error="validation")
    written = every_byte_under(tmp_path / "data")
    assert written.count(b"\n") == 8
    for secret in (CANARY, DOTENV_CANARY, API_KEY, "abcdef123456"):
        assert secret.encode() not in written, secret
    assert b"[REDACTED]" in written
    assert b"Authorization: Bearer [REDACTED]" in written


def test_contents_become_size_and_sha256(tmp_path):
    log = AuditLog(tmp_path, clock=Clock(datetime(2026, 11, 22, 5, 12, 3, 250000, tzinfo=UTC)), environ={})
    content = "héllo\n" * 1000
    entry = call(log, "write_file", {"path": "notes.txt", "content": content}, duration_ms=12.6,
                 content=WRITE_FILE.content)
    [line] = (tmp_path / "audit" / "tools-2026-11-22.jsonl").read_text().splitlines()
    assert json.loads(line) == entry == {
        "time": "2026-11-22T05:12:03.250Z", "session": "s1", "turn": "t1", "tool": "write_file", "call_id": "c1",
        "arguments": {"path": "notes.txt", "content": {"bytes": len(content.encode()),
                                                       "sha256": hashlib.sha256(content.encode()).hexdigest()}},
        "decision": "allow", "by": "user", "ok": True, "error": None, "duration_ms": 13,
    }  # fmt: skip
    edit = call(log, "edit_file", {"path": "a", "old_text": "x", "new_text": "", "replace_all": True},
                content=EDIT_FILE.content)
    assert edit["arguments"] == {"path": "a", "old_text": {"bytes": 1, "sha256": hashlib.sha256(b"x").hexdigest()},
                                 "new_text": {"bytes": 0, "sha256": hashlib.sha256(b"").hexdigest()},
                                 "replace_all": True}  # fmt: skip


def test_what_is_hashed_is_what_the_tools_model_marks_as_file_text_whatever_its_name():
    """The audit names no argument: write_file and edit_file mark theirs `CONTENT`; an argument called `content` of
    a tool that marks nothing (an MCP server's, whose schema says nothing of files) is logged as it is."""
    assert WRITE_FILE.content == {"content"} and EDIT_FILE.content == {"old_text", "new_text"}
    from sunwell.tools.registry import CORE_TOOLS

    assert {tool.name for tool in CORE_TOOLS if tool.content} == {"write_file", "edit_file"}


def test_the_arguments_named_as_content_are_hashed_and_no_others(tmp_path):
    log = AuditLog(tmp_path, environ={})
    entry = call(log, "notes__save", {"body": "the text", "content": "a title"}, content={"body"})
    assert entry["arguments"] == {"body": {"bytes": 8, "sha256": hashlib.sha256(b"the text").hexdigest()},
                                  "content": "a title"}


def test_one_file_per_utc_day(tmp_path):
    clock = Clock(datetime(2026, 11, 22, 23, 59, 59, tzinfo=UTC))
    log = AuditLog(tmp_path, clock=clock, environ={})
    call(log, call_id="before")
    clock.now += timedelta(seconds=2)
    call(log, call_id="after")
    clock.now = datetime(2026, 11, 23, 1, 30, tzinfo=timezone(timedelta(hours=2)))  # 23:30 UTC the day before
    call(log, call_id="local")
    files = sorted(p.name for p in (tmp_path / "audit").iterdir())
    assert files == ["tools-2026-11-22.jsonl", "tools-2026-11-23.jsonl"]
    day1 = [json.loads(x)["call_id"] for x in (tmp_path / "audit" / files[0]).read_text().splitlines()]
    assert day1 == ["before", "local"]


def test_recent_reads_back_across_days_with_since_and_limit(tmp_path):
    clock = Clock(datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
    log = AuditLog(tmp_path, clock=clock, environ={})
    for i in range(6):  # 20th 12:00, 20th 22:00, 21st 08:00, 21st 18:00, 22nd 04:00, 22nd 14:00
        call(log, call_id=f"c{i}")
        clock.now += timedelta(hours=10)
    with (tmp_path / "audit" / "tools-2026-11-21.jsonl").open("a") as f:
        f.write('{"torn": \n')  # a torn line hides nothing else
    (tmp_path / "audit" / "notes.txt").write_text("not a day file")

    def ids(entries):
        return [e["call_id"] for e in entries]

    assert ids(log.recent()) == ["c0", "c1", "c2", "c3", "c4", "c5"]
    assert ids(log.recent(limit=2)) == ["c4", "c5"]
    assert ids(log.recent(since=datetime(2026, 11, 21, 8, 0, tzinfo=UTC))) == ["c2", "c3", "c4", "c5"]
    assert ids(log.recent(since=datetime(2026, 11, 21, 8, 0, 1))) == ["c3", "c4", "c5"]  # naive means UTC
    assert ids(log.recent(since=parse_since("2026-11-22"))) == ["c4", "c5"]
    assert log.recent(since=datetime(2026, 12, 1, tzinfo=UTC)) == []
    assert log.recent(limit=0) == []
    assert AuditLog(tmp_path / "nothing-yet").recent() == []


def test_files_are_private(tmp_path):
    old = os.umask(0)  # the modes must not depend on the caller's umask
    try:
        log = AuditLog(tmp_path / "data", environ={})
        (tmp_path / "data" / "audit").mkdir(parents=True, mode=0o755)
        stale = log.path_for(datetime.now(UTC).date())
        stale.write_text("")
        stale.chmod(0o644)
        call(log)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "data" / "audit").stat().st_mode) == 0o700
    assert [stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "data" / "audit").iterdir()] == [0o600]


def test_a_symlinked_day_file_is_not_followed(tmp_path, caplog):
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched")
    clock = Clock(datetime(2026, 11, 22, tzinfo=UTC))
    log = AuditLog(tmp_path / "data", clock=clock, environ={})
    (tmp_path / "data" / "audit").mkdir(parents=True)
    log.path_for(clock.now.date()).symlink_to(target)
    with caplog.at_level(logging.WARNING):
        entry = call(log)  # a failing audit write is logged, not raised
    assert entry["tool"] == "run_command"
    assert target.read_text() == "untouched"
    assert "could not write the audit log" in caplog.text


def test_format_entry_is_one_readable_line():
    entry = {"time": "2026-11-22T05:12:03.250Z", "session": "s1", "turn": "t1", "tool": "run_command",
             "call_id": "c1", "arguments": {"command": "pytest -q"}, "decision": "allow", "by": "user", "ok": True,
             "error": None, "duration_ms": 1234}  # fmt: skip
    assert format_entry(entry) == '2026-11-22 05:12:03  run_command(command="pytest -q")  allow by user  ✔ 1.2 s'
    write = {**entry, "tool": "write_file", "arguments": {"path": "a.txt", "content": {"bytes": 12, "sha256": "ab" * 32}},
             "decision": "deny", "by": "policy", "ok": False, "error": "denied", "duration_ms": 3}
    assert format_entry(write) == ('2026-11-22 05:12:03  write_file(path="a.txt", content=<12 bytes, sha256 '
                                   'abababababab>)  deny by policy  ✘ denied 3 ms')  # fmt: skip
    read = {**entry, "tool": "read_file", "arguments": {"path": "x\ny" * 40}, "decision": "auto", "by": "policy"}
    line = format_entry(read)
    assert "\n" not in line and "  auto  ✔" in line and len(line) < 140
    assert "  —  " in format_entry({**entry, "decision": None, "by": None})


def test_parse_since():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert parse_since("1h", now) == datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
    assert parse_since("30m", now) == parse_since("30min", now) == datetime(2026, 11, 22, 11, 30, tzinfo=UTC)
    assert parse_since("2d", now) == datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    assert parse_since("1w", now) == datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
    assert parse_since("45s", now) == datetime(2026, 11, 22, 11, 59, 15, tzinfo=UTC)
    assert parse_since("2026-11-22") == datetime(2026, 11, 22, tzinfo=UTC)
    assert parse_since("2026-11-22T05:00:00+02:00") == datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    for bad in ("yesterday", "1y", "", "-1h"):
        with pytest.raises(ValueError, match="--since"):
            parse_since(bad, now)


@pytest.mark.parametrize(("text", "expected"), [
    ("curl -H 'Authorization: Bearer sk-live-abcdef123456'", "curl -H 'Authorization: Bearer [REDACTED]'"),
    ("curl -H 'authorization: token abcdefgh12345678' x", "curl -H 'authorization: token [REDACTED]' x"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop python x.py", "OPENAI_API_KEY=[REDACTED] python x.py"),
    ("key sk-ant-api03-abcdefghijklmnop", "key [REDACTED]"),
    ("git push https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x",
     "git push https://[REDACTED]@github.com/x"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"),
    ("slack xoxb-1234567890-abcdefghij and xoxp-1234567890-abcdefghij", "slack [REDACTED] and [REDACTED]"),
    ("aws_access_key_id AKIAIOSFODNN7EXAMPLE", "aws_access_key_id [REDACTED]"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nafter",
     "[REDACTED]\nafter"),
    ("-----BEGIN PRIVATE KEY-----\ncut short", "[REDACTED]"),
    ("https://api.example.com/x?access_token=abc123&page=2", "https://api.example.com/x?access_token=[REDACTED]&page=2"),
    ("mysql --password=hunter22 -u root", "mysql --password=[REDACTED] -u root"),
    ('{"password": "hunter22", "user": "bob"}', '{"password": "[REDACTED]", "user": "bob"}'),
    ("SECRET=abc; TOKEN: xyz", "SECRET=[REDACTED]; TOKEN: [REDACTED]"),
    ("postgres://bob:hunter22@db:5432/x", "postgres://bob:[REDACTED]@db:5432/x"),
    ("pytest -q --max_tokens=4096 tokenizer=fast", "pytest -q --max_tokens=4096 tokenizer=fast"),
    ("ask the task-runner about sk-", "ask the task-runner about sk-"),
])  # fmt: skip
def test_redact_masks_token_shaped_strings(text, expected):
    assert redact(text, environ={}) == expected


def test_redact_removes_credential_env_values_only():
    env = {"MY_SERVICE_TOKEN": CANARY, "DB_PASSWORD": "correct horse battery", "STRIPE_KEY": "plainvalue99",
           "SHORT_SECRET": "1234567", "PWD": "/home/me/project", "HOME": "/home/me", "TOKENIZERS_PARALLELISM": "falsefalse"}
    value = {"command": f"cd /home/me/project && echo {CANARY} correct horse battery plainvalue99 1234567",
             "args": [CANARY, 3, None, True], CANARY: "as a key", "flag": "falsefalse"}
    assert redact(value, environ=env) == {
        "command": "cd /home/me/project && echo [REDACTED] [REDACTED] [REDACTED] 1234567",
        "args": ["[REDACTED]", 3, None, True], "[REDACTED]": "as a key", "flag": "falsefalse",
    }  # fmt: skip


def test_the_environment_is_read_when_the_log_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv("LATE_API_KEY", "set-before-the-log")
    log = AuditLog(tmp_path)
    monkeypatch.delenv("LATE_API_KEY")
    assert call(log, arguments={"command": "echo set-before-the-log"})["arguments"]["command"] == "echo [REDACTED]"


def test_a_secret_added_to_the_environment_since_the_last_log_is_masked_by_the_next(tmp_path, monkeypatch):
    # The secrets' pattern is compiled once per environment: a changed environment must not get the old one.
    monkeypatch.setenv("FIRST_API_KEY", "first-secret-value")
    assert call(AuditLog(tmp_path), arguments={"command": "echo second-secret-value"})["arguments"]["command"] == (
        "echo second-secret-value")
    monkeypatch.setenv("SECOND_API_KEY", "second-secret-value")
    masked = call(AuditLog(tmp_path), arguments={"command": "echo second-secret-value first-secret-value"})
    assert masked["arguments"]["command"] == "echo [REDACTED] [REDACTED]"
