"""Model text cannot drive the terminal: escape sequences in a command, a diff, an answer or a stored session are
shown escaped, never sent raw (issue 11, item 3)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

from fake_provider import Call, Reply
from sunwell.cli.rendering import visible

OPENAI = "openai:gpt-4o"
SPOOF = "touch PWN; \x1b[2K\r\x1b[1A\x1b[2Kgit status"
SPOOF_SHOWN = rb"touch PWN; \x1b[2K\r\x1b[1A\x1b[2Kgit status"
# what the model sends besides: a C1 CSI (U+009B, "ESC [" in one character), a title change, concealed text, and
# a right-to-left override that shows "txt.exe" as "exe.txt"
EXTRA = "\u009b2K \x1b]0;owned\x07 \x1b[8mhidden \u202etxt.exe"
EXTRA_SHOWN = rb"\u009b2K \x1b]0;owned\x07 \x1b[8mhidden \u202etxt.exe"
RAW = [b"\x1b[2K", b"\x1b[1A", b"\x1b]0;", b"\x1b[8m", "\u009b".encode(), "\u202e".encode(), b"\x07"]
OURS = re.compile(rb"\x1b\[[0-9;]*m|\x1b\[\?2004[hl]|\x1b\[\?1034h")  # our colors; readline's bracketed paste


def assert_nothing_raw(screen: bytes) -> None:
    """No model escape reached the terminal: only our own color codes (and readline's modes) are there."""
    for raw in RAW:
        assert raw not in screen, f"{raw!r} reached the terminal"
    assert b"\x1b" not in OURS.sub(b"", screen), screen


class Pty:
    """`sunwell ARGS` with stdin, stdout and stderr on one pseudo-terminal; keeps every byte it writes."""

    def __init__(self, env, cwd, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "sunwell", *args], cwd=cwd,
                                     env={**env, "TERM": "xterm"}, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True)
        os.close(slave)
        self.screen, self.seen = b"", 0

    def _read(self) -> None:
        with contextlib.suppress(OSError):  # the process is gone
            self.screen += os.read(self.master, 65536)

    def expect(self, needle: str, timeout: float = 60) -> bytes:  # failures only; xdist: 4 workers, 2 cores
        """Wait for `needle` after what was already expected; returns the bytes from there to it."""
        wanted, deadline = needle.encode(), time.monotonic() + timeout
        while (found := self.screen.find(wanted, self.seen)) < 0:
            assert time.monotonic() < deadline, f"never saw {needle!r} in:\n{self.screen[self.seen:]!r}"
            if select.select([self.master], [], [], 0.1)[0]:
                self._read()
        start, self.seen = self.seen, found + len(wanted)
        return self.screen[start:self.seen]

    def line(self, text: str) -> None:
        os.write(self.master, text.encode() + b"\r")

    def exit_code(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:  # keep reading, or a full pty would block the process
            assert time.monotonic() < deadline, f"still running; screen:\n{self.screen[self.seen:]!r}"
            if select.select([self.master], [], [], 0.1)[0]:
                self._read()
        while select.select([self.master], [], [], 0.1)[0]:  # what it wrote just before leaving
            before = len(self.screen)
            self._read()
            if len(self.screen) == before:
                break
        os.close(self.master)
        return self.proc.returncode


@pytest.fixture
def terminal(env, workspace):
    started: list[Pty] = []

    def start(*args: str) -> Pty:
        started.append(Pty(env, workspace, *args))
        return started[-1]

    yield start
    for term in started:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()


def test_a_spoofed_command_is_shown_escaped_at_the_approval_prompt(terminal, fake, workspace):
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": SPOOF + " " + EXTRA}))]),
                Reply(text="Status shown." + EXTRA))
    term = terminal("run", "show the status", "--model", OPENAI, "--trust", "shell")
    question = term.expect("Allow? [y]es / [n]o / [a]llow for this session: ")
    assert b"$ " + SPOOF_SHOWN + b" " + EXTRA_SHOWN in question
    term.line("n")
    assert term.exit_code() == 0
    assert_nothing_raw(term.screen)
    assert b"Status shown." + EXTRA_SHOWN in term.screen  # the answer, streamed
    assert not (workspace / "PWN").exists()


def test_a_write_diff_and_the_chat_transcript_are_escaped(terminal, fake, workspace):
    content = f"line one\n{SPOOF}\n{EXTRA}\n\tindented\n"
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "notes.txt", "content": content}))]),
                Reply(text="Written." + EXTRA, tool_calls=[Call("no_such\x1b[2Ktool" + EXTRA)]),
                Reply(text="Done."))
    term = terminal("chat", "--model", OPENAI)
    term.expect("›")
    term.line("write the notes")
    diff = term.expect("Allow? [y]es / [n]o / [a]llow for this session: ")
    assert b"+" + SPOOF_SHOWN in diff and b"+" + EXTRA_SHOWN in diff
    assert b"+\tindented" in diff and b"+line one" in diff  # tabs and newlines stay as they are
    term.line("y")
    term.expect("Done.")
    assert (workspace / "notes.txt").read_bytes() == content.encode()  # escaped on screen only
    term.expect("›")
    os.write(term.master, b"\x04")  # Ctrl-D: `::exit` would be repainted, with our own cursor moves
    assert term.exit_code() == 0
    assert_nothing_raw(term.screen)
    assert b"Written." + EXTRA_SHOWN in term.screen
    assert rb"no_such\x1b[2Ktool" in term.screen  # the unknown tool's name, in its call and its error


def test_sessions_show_and_export_are_escaped_on_a_terminal(terminal, sunwell, fake):
    fake.script(Reply(text="Hi." + EXTRA, tool_calls=[Call("no_such\x1b[2Ktool" + EXTRA)]), Reply(text="Done."))
    run = sunwell("run", "hi", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    session = run.events[0]["session"]

    term = terminal("sessions", "show", session)
    assert term.exit_code() == 0
    assert_nothing_raw(term.screen)
    assert rb"error no_such\x1b[2Ktool" + EXTRA_SHOWN in term.screen

    term = terminal("sessions", "export", session)
    assert term.exit_code() == 0
    assert_nothing_raw(term.screen)
    # still JSON, and the same JSON as when piped
    assert json.loads(term.screen.decode()) == json.loads(sunwell("sessions", "export", session).stdout)
    piped = sunwell("sessions", "export", session).stdout
    assert "\u202e" in piped  # piped output is data: left exact


def test_visible_escapes_controls_and_keeps_lines():
    assert visible(SPOOF) == r"touch PWN; \x1b[2K\r\x1b[1A\x1b[2Kgit status"
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x00\x7f\u0085\u009f\u202a\u202e\u2066\u2069") == r"\x00\u007f\u0085\u009f\u202a\u202e\u2066\u2069"
    assert visible("café ✔ 日本") == "café ✔ 日本"
    assert visible(r"printf '\x1b'") == r"printf '\x1b'"


def test_blank_lines_and_spaces_cannot_push_the_command_off_screen():
    from sunwell.cli.approvals import _shown_command

    shown = _shown_command("rm -rf ~ #" + "\n" * 60 + "git status")
    assert shown == "rm -rf ~ #\n⟨59 blank lines⟩\ngit status"
    assert _shown_command("echo x" + " " * 100 + "; rm y") == "echo x ⟨100 spaces⟩ ; rm y"
    assert _shown_command("a\n\nb") == "a\n\nb"  # an ordinary blank line stays
