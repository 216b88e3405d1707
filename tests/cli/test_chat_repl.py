"""`sunwell chat` as a real subprocess: lines piped on stdin, and a person at a pseudo-terminal (Ctrl-C included)."""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.cli.rendering import highlight_command, render_markdown

OPENAI = "openai:gpt-4o"
BOLD_CYAN = "\x1b[1;36m"
PROMPT = "›"


def chat_command() -> list[str]:
    return [sys.executable, "-m", "sunwell", "chat"]


def chat(env, workspace, lines: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*chat_command(), "--model", OPENAI, *args], input="".join(f"{x}\n" for x in lines),
                          capture_output=True, text=True, env=env, cwd=workspace, timeout=60, check=False)


def write_call(path="notes.txt", content="new notes\n") -> Call:
    return Call("write_file", json.dumps({"path": path, "content": content}))


# ---- piped: lines until the end of input ----------------------------------------------------------------------


def test_piped_lines_are_turns_and_commands(env, workspace, fake):
    fake.script(Reply(text="Hello, streamed."), Reply(text="Templates, yes."))
    run = chat(env, workspace, ["hi", "::help", "::tools", "::MODEL", "::nope", "std::vector is a template?",
                                "::save notes.md", "::save ../x.md", "::exit", "never sent"])
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith("Hello, streamed.\n") and "\x1b[" not in out  # no color when stdout is no terminal
    assert "- `::save <path>` — " in out and "- `::exit` — Leave the chat." in out
    assert "- `read_file` — core · trust read_only · auto" in out
    assert "- `write_file` — core · trust workspace · deny (--approve deny)" in out  # no terminal: deny
    assert "Model: **openai:gpt-4o**" in out and "Unknown command: ::nope. Try ::help" in out
    assert "Templates, yes." in out  # `std::vector` is no command
    assert "Saved 4 messages to `notes.md`." in out and "Cannot save to `../x.md`: path escapes" in out
    assert out.rstrip().endswith("Bye.") and fake.remaining == 0 and len(fake.requests) == 2
    assert "## You\n\nstd::vector is a template?" in (workspace / "notes.md").read_text()
    assert not (workspace.parent / "x.md").exists()


def test_json_lines_number_every_command_and_turn(env, workspace, fake):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]), Reply(text="It says hello."))
    run = chat(env, workspace, ["::trust", "read a.txt", "::context"], "--json")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    turns: dict[str, list[dict]] = {}
    for event in events:
        turns.setdefault(event["turn"], []).append(event)
    assert len(turns) == 3
    for turn in turns.values():
        check_stream_rules(turn)
    first, _, last = turns.values()
    assert [e["type"] for e in first] == ["commandOutput", "done"] and first[0]["command"] == "trust"
    assert first[0]["session"] == "" and last[0]["session"] == events[-1]["session"] != ""
    assert "messages: 4" in last[0]["output"]


def test_bad_options_are_usage_errors(env, workspace):
    run = chat(env, workspace, [], "--session", "nope")
    assert run.returncode == 2 and "unknown session 'nope'" in run.stderr
    (workspace / "bad.lens").write_text("name: bad\n")
    run = chat(env, workspace, [], "--lens", "bad.lens")
    assert run.returncode == 2 and "not activated" in run.stderr


# ---- a person at a terminal -------------------------------------------------------------------------------------


def _make_controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the child is a session leader (start_new_session); stdin is the pty
    # A terminal's foreground job: SIGINT as the default, even where these tests run as a background job of a
    # shell without job control, which starts its children with SIGINT ignored (Python then installs no handler).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Terminal:
    """`sunwell chat` on a pseudo-terminal that is its controlling terminal, so ^C is a real SIGINT."""

    def __init__(self, env, cwd, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # wide: nothing wraps
        self.proc = subprocess.Popen([*chat_command(), *args], cwd=cwd, env={**env, "TERM": "xterm"},
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                     preexec_fn=_make_controlling_terminal)  # noqa: PLW1509 - only ioctl runs
        os.close(slave)
        self.screen, self.seen = "", 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a read may end inside a character

    def _read(self) -> None:
        with contextlib.suppress(OSError):  # the process is gone
            self.screen += self._decoder.decode(os.read(self.master, 65536))

    def expect(self, needle: str, timeout: float = 60) -> str:  # failures only; xdist: 4 workers, 2 cores
        """Wait for `needle` after what was already expected; returns the screen from there to it."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(needle, self.seen)) < 0:
            assert time.monotonic() < deadline, f"never saw {needle!r} in:\n{self.screen[self.seen:]}"
            if select.select([self.master], [], [], 0.1)[0]:
                self._read()
        start, self.seen = self.seen, found + len(needle)
        return self.screen[start:self.seen]

    def line(self, text: str) -> None:
        os.write(self.master, text.encode() + b"\r")

    def say(self, text: str) -> None:
        """Type a line at the chat's prompt, once it is there."""
        self.expect(PROMPT)
        self.line(text)

    def key(self, data: bytes) -> None:
        os.write(self.master, data)

    def exit_code(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:  # keep reading, or a full pty would block the process
            assert time.monotonic() < deadline, f"still running; screen:\n{self.screen[self.seen:]}"
            if select.select([self.master], [], [], 0.1)[0]:
                self._read()
        os.close(self.master)
        return self.proc.returncode


@pytest.fixture
def terminal(env, workspace):
    started: list[Terminal] = []

    def start(*args: str) -> Terminal:
        started.append(Terminal(env, workspace, "--model", OPENAI, *args))
        return started[-1]

    yield start
    for term in started:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()


def test_a_chat_at_the_terminal(terminal, fake, workspace, tmp_path):
    fake.script(Reply(text="Hello from the model.", chunk=4),
                Reply(tool_calls=[write_call()]), Reply(text="Written."),
                Reply(text="Once upon a time " + "and then " * 200, chunk=9, delay=0.05),
                Reply(text="Still here."))
    term = terminal()
    term.expect("Ctrl-D leaves")
    term.say("hi")
    term.expect("Hello from the model.")

    term.say("::help")
    shown = term.expect("Any other line goes to the model.")
    assert f"{BOLD_CYAN}::help\x1b[0m" in shown  # the command as entered, repainted, and in the listing
    assert f"{BOLD_CYAN}::save\x1b[0m <path>" in shown
    term.say("::tools")
    assert "run_command" in term.expect("(shell).")
    term.say("::model")
    assert "openai:gpt-4o" in term.expect("Switch with")
    term.say("::bogus")
    assert f"Unknown command: {BOLD_CYAN}::bogus\x1b[0m. " in term.expect(f"Try {BOLD_CYAN}::help")

    term.say("write the notes")  # a terminal: approvals are asked at the prompt
    assert "+new notes" in term.expect("Allow? [y]es / [n]o / [a]llow for this session: ")
    term.line("y")
    term.expect("Written.")
    assert (workspace / "notes.txt").read_text() == "new notes\n"

    term.say("::save chat.md")
    term.expect("Saved 6 messages to ")
    term.say("::save ../x.md")
    term.expect("Cannot save to ")
    assert (workspace / "chat.md").exists() and not (workspace.parent / "x.md").exists()

    term.say("tell me a long story")
    term.expect("Once upon a time")
    term.key(b"\x03")
    term.expect("cancelled")
    term.say("are you there?")
    term.expect("Still here.")
    assert "are you there?" in json.dumps(fake.requests[-1].body["messages"][-1])

    term.say("::exit")
    term.expect("Bye.")
    assert term.exit_code() == 0
    assert "::help" in (tmp_path / "data" / "chat_history").read_text()  # readline history, kept


def test_ctrl_c_during_an_approval_question_cancels_the_turn_only(terminal, fake, workspace):
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="Next answer."))
    term = terminal()
    term.say("write the notes")
    term.expect("Allow?")
    term.key(b"\x03")
    term.expect("cancelled")
    term.say("hello again")  # goes to the model, not to the abandoned question
    term.expect("Next answer.")
    assert not (workspace / "notes.txt").exists()
    messages = json.dumps(fake.requests[-1].body["messages"])
    assert "interrupted" in messages and "hello again" in messages
    term.expect(PROMPT)
    term.key(b"\x04")  # Ctrl-D
    assert term.exit_code() == 0


def test_a_second_ctrl_c_leaves(terminal, fake):
    fake.script(Reply(text="slow " * 400, chunk=5, delay=0.05))
    term = terminal()
    term.say("go on")
    term.expect("slow")
    term.key(b"\x03")
    time.sleep(0.05)
    term.key(b"\x03")
    assert term.exit_code() == 130

    term = terminal()
    term.expect(PROMPT)
    time.sleep(0.3)  # readline misses a SIGINT that arrives before it waits for keys: a person is never that fast
    term.key(b"\x03")
    term.expect("Ctrl-C again or Ctrl-D to leave")
    time.sleep(0.3)
    term.key(b"\x03")
    assert term.exit_code() == 130


def test_highlighting_and_rendering():
    assert highlight_command("::lens review") == f"{BOLD_CYAN}::lens\x1b[0m review"
    assert highlight_command("std::vector") == "std::vector"
    text = "**Tools**\n- `read_file` — try `::trust shell`, or ::help\n```\nraw `x`\n```"
    assert render_markdown(text, color=False) == text
    painted = render_markdown(text, color=True)
    assert painted.startswith("\x1b[1mTools\x1b[0m\n- \x1b[36mread_file\x1b[0m")
    assert f"{BOLD_CYAN}::trust\x1b[0m shell" in painted and f"{BOLD_CYAN}::help\x1b[0m" in painted
    assert "\x1b[2mraw `x`\x1b[0m" in painted and "```" not in painted
