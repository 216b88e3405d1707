"""What `sunwell chat` reads: stdin's lines, shared by the prompt and the approval questions, and readline's prompt,
history and completion of `::commands`."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from sunwell.agent.commands import commands_catalog
from sunwell.cli.rendering import BOLD_CYAN, RESET, highlight_command

log = logging.getLogger(__name__)


class StdinLines:
    """Lines of a file descriptor for the prompt and the approval questions alike, and a read that can be abandoned.

    Reading the descriptor (not `sys.stdin`'s buffer) keeps one order of lines for both readers. `abort` wakes a
    `readline` blocked in another thread: it returns "" (an approval then counts as denied)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._busy = threading.Lock()

    def readline(self, gone: threading.Event | None = None) -> str:
        """The next line; "" at once when `gone` is set (the question it answered was abandoned)."""
        with self._busy:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._wake_r, 64):  # a wake-up meant for a read that had already returned
                    pass
            if gone is not None and gone.is_set():  # before the buffer: typeahead belongs to the prompt
                return ""
            while b"\n" not in self._buffer:
                ready, _, _ = select.select([self.fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return ""
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    rest, self._buffer = self._buffer, b""
                    return rest.decode(errors="replace")
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            return line.decode(errors="replace") + "\n"

    def abort(self) -> None:
        if self._busy.locked():
            os.write(self._wake_w, b"x")
            with self._busy:  # wait until that read has returned
                pass


def prompt_text(color: bool) -> str:
    # \001 and \002 tell readline that the escape codes between them take no room on the line
    return f"\001{BOLD_CYAN}\002›\001{RESET}\002 " if color else "› "


def repaint_command(out: TextIO, line: str) -> None:
    """Draw the command just entered again, highlighted, over the line readline echoed."""
    if len(line) + 2 >= shutil.get_terminal_size().columns:
        return  # it wrapped: moving up one row would paint over the wrong line
    out.write(f"\x1b[1A\r\x1b[2K{prompt_text(False)}{highlight_command(line)}\n")
    out.flush()


class History:
    """readline history in the data dir, when readline is there; a history that cannot be saved is no error."""

    def __init__(self, path: Path, more: Callable[[], list[str]] = list) -> None:
        """`more`: command names known only while the chat runs (`SERVER:PROMPT` of the MCP servers started)."""
        try:
            import readline  # only for an interactive chat: importing it changes how `input()` reads
        except ImportError:
            self.readline = None
            return
        self.readline, self.path = readline, path
        readline.set_history_length(1000)
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
        _complete_commands(readline, more)

    def save(self) -> None:
        if self.readline is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.readline.write_history_file(self.path)
            except OSError as exc:
                log.debug("chat history not saved: %s", exc)


def _complete_commands(readline, more: Callable[[], list[str]]) -> None:
    names = [f"::{doc.name} " for doc in commands_catalog(terminal=True)]

    def complete(text: str, index: int) -> str | None:
        known = [*names, *(f"::{name} " for name in more())] if text.startswith("::") else []
        matches = [name for name in known if name.lower().startswith(text.lower())]
        return matches[index] if index < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n")
    binding = "bind ^I rl_complete" if "libedit" in (readline.__doc__ or "") else "tab: complete"
    readline.parse_and_bind(binding)
