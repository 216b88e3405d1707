"""`sunwell chat`: the engine in a terminal, one line at a time, with the same `::commands` as the sidecar.

The prompt is read outside the event loop (readline's editing and history need the main thread); each line then
runs as one task on a loop that lives as long as the chat, with Ctrl-C bound to cancelling that task. Approval
questions read their answer from the same stdin, through `StdinLines`, so that a question abandoned by Ctrl-C
does not leave a thread behind that swallows the next line typed at the prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from sunwell.agent.chat import Overrides, UserInput
from sunwell.agent.engine import Engine
from sunwell.agent.lens_commands import LensCommandError, activate_lens
from sunwell.agent.mcp_commands import prompt_docs
from sunwell.agent.session import LineResult, Session
from sunwell.agent.sessions import SessionStoreError
from sunwell.cli.client import TerminalClient
from sunwell.cli.exit_codes import EXIT_CANCELLED, EXIT_OK, UsageError
from sunwell.cli.options import tool_names, turn_settings
from sunwell.cli.rendering import DIM, RED, RESET, JsonLines, Transcript, render_markdown, visible
from sunwell.cli.terminal_input import History, StdinLines, prompt_text, repaint_command
from sunwell.commands_spec import parse_command
from sunwell.errors import SetupError
from sunwell.wire.client import Request

if TYPE_CHECKING:
    from sunwell.wire.events import DoneEvent, Event

log = logging.getLogger(__name__)
DOUBLE_PRESS_SEC = 2.0
"""A Ctrl-C at the prompt this soon after one that cancelled a turn leaves, as a second one during the turn does."""


def cmd_chat(args: argparse.Namespace) -> int:
    """`sunwell chat [options]`; raises UsageError for usage and setup problems."""
    workspace, settings = turn_settings(args)
    if sys.stdin is None:
        raise UsageError("sunwell chat reads its lines from stdin, and there is none")
    interactive = sys.stdin.isatty()
    if settings.approval is None:
        settings.approval = "ask" if interactive else "deny"
    lines = StdinLines(sys.stdin.fileno())
    # approvals and MCP servers' forms when approvals are asked; ask_user's questions unless approvals are set to deny
    # (no one is asked anything); a sign-in's page where someone is at the terminal
    answering: set[Request] = {"approve", "elicit"} if settings.approval == "ask" else set()
    answering |= {"ask"} if settings.approval != "deny" else set()
    answering |= {"openUrl"} if interactive else set()
    client = TerminalClient(stdin=lines, out=sys.stderr, color=sys.stderr.isatty(), answering=answering)
    try:
        engine = Engine(settings, workspace, client=client)
        if args.session and not Session(engine, args.session).exists():
            raise SetupError(f"unknown session '{args.session}': see `sunwell sessions list`")
        lens = activate_lens(engine, args.lens)[0] if args.lens else None
    except (SetupError, LensCommandError) as exc:
        raise UsageError(str(exc)) from None
    session = Session(engine, args.session, terminal=True)
    session.apply(Overrides(lens=lens, tool_names=tool_names(args)))
    chat = Chat(engine, session, lines, interactive=interactive, color=sys.stdout.isatty(), json=args.json)
    return chat.run()


class Chat:
    def __init__(self, engine: Engine, session: Session, lines: StdinLines, *, interactive: bool, color: bool,
                 json: bool = False, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.engine, self.session, self.lines = engine, session, lines
        self.interactive, self.color, self.out, self.err = interactive, color and not json, out, err
        self.transcript = JsonLines(out) if json else Transcript(out=out, color=color)
        self.json = json
        self.quit = False  # a second Ctrl-C during a turn
        self.leave_on_ctrl_c_until = 0.0  # a Ctrl-C at the prompt before then leaves the chat

    def run(self) -> int:
        loop = asyncio.new_event_loop()
        history = History(Path(self.engine.data_dir) / "chat_history",
                          lambda: [doc.name for doc in prompt_docs(self.engine)]) if self.interactive else None
        self._banner()
        threading.Thread(target=self._warm_up, daemon=True).start()
        try:
            while not self.quit:
                try:
                    if self._step(loop):
                        return EXIT_OK
                except KeyboardInterrupt:  # pressed again while the first press was being answered
                    return EXIT_CANCELLED
            return EXIT_CANCELLED
        finally:
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # leaving: more presses must not break this
            self.lines.abort()
            if history is not None:
                history.save()
            self._goodbye()
            loop.run_until_complete(self.engine.aclose())  # MCP servers
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            signal.signal(signal.SIGINT, previous)

    def _step(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Read and run one line; True when the chat is over."""
        try:
            line = self._read()
            self.leave_on_ctrl_c_until = 0.0
            return line is None or bool(line.strip() and self._handle(loop, line))
        except KeyboardInterrupt:  # at the prompt, or between two lines
            if time.monotonic() < self.leave_on_ctrl_c_until:
                raise
            self.leave_on_ctrl_c_until = math.inf  # until a line is entered
            self._status("\n(Ctrl-C again or Ctrl-D to leave)", DIM)
            return False

    def _read(self) -> str | None:
        """The next line, None at the end of input. Raises KeyboardInterrupt on Ctrl-C."""
        if not self.interactive:
            line = self.lines.readline()
            return line.rstrip("\r\n") if line else None
        try:
            line = input("" if self.json else prompt_text(self.color and self.out.isatty()))
        except EOFError:
            self.out.write("\n")
            return None
        if self.color and parse_command(line) is not None:
            repaint_command(self.out, line)
        return line

    def _handle(self, loop: asyncio.AbstractEventLoop, line: str) -> bool:
        """Run one line to its end; True when the chat is over (`::exit`)."""
        presses = 0

        def interrupt() -> None:
            nonlocal presses
            presses += 1
            self.leave_on_ctrl_c_until = time.monotonic() + DOUBLE_PRESS_SEC  # the turn may end before the 2nd
            task.cancel()
            self.lines.abort()  # an approval question waiting for its answer gives up
            if presses > 1:
                self.quit = True
                loop.remove_signal_handler(signal.SIGINT)  # a third Ctrl-C interrupts whatever hangs

        loop.add_signal_handler(signal.SIGINT, interrupt)  # before the task exists: no press goes unheard
        task = loop.create_task(self._submit(line))
        try:
            result = loop.run_until_complete(task)
        except (asyncio.CancelledError, KeyboardInterrupt):  # cancelled before the turn began, or a third press
            task.cancel()
            self._status("cancelled", DIM)
            return False
        except (SetupError, SessionStoreError) as exc:
            self._status(f"sunwell: {exc}", RED)
            return False
        except BrokenPipeError:  # the reader of our output left: the chat is over (cli/main.py)
            raise
        except Exception as exc:  # a bug in one line should not end the chat
            log.debug("line failed", exc_info=True)
            self._status(f"sunwell: {exc}", RED)
            return False
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        if result.done.status == "cancelled":
            self._status("cancelled", DIM)
        elif result.done.status == "error":
            self._status(f"error: {result.done.error}", RED)
        elif result.done.status == "limitReached":
            self._status("stopped at the tool-turn limit (--max-tool-turns)", DIM)
        if self.interactive and not self.json:
            self._usage(result.done)
        return result.exit

    async def _submit(self, line: str) -> LineResult:
        """The line, a `::command` or a turn with the workspace files it names as `@path` attached."""
        return await self.session.submit(UserInput(line, mentions_in_text=True), self._sink)

    def _usage(self, done: DoneEvent) -> None:
        """The turn's tokens and cost, dim, under its answer (nothing for a ::command, which asks no model)."""
        try:
            line = self.session.usage_line(done)
        except Exception:  # noqa: BLE001 - a figure to show, never a reason to end the chat
            return
        if line:
            self._status(line, DIM)

    def _sink(self, event: Event) -> None:
        if event.type == "commandOutput" and not self.json:
            if event.output:
                # command output quotes names the model chose (the paths ::undo put back): escaped before we color it
                self.out.write(render_markdown(visible(event.output), self.color) + "\n")
                self.out.flush()
            return
        self.transcript(event)

    def _status(self, text: str, style: str) -> None:
        text = visible(text)  # errors can quote the provider or the model
        self.err.write((f"{style}{text}{RESET}" if self.err.isatty() else text) + "\n")
        self.err.flush()

    def _warm_up(self) -> None:
        """Import the model's SDK (about a second) while the user is still typing the first line."""
        with contextlib.suppress(Exception):  # the first turn reports any problem properly
            self.session.warm_up()

    def _banner(self) -> None:
        if not self.interactive or self.json:
            return
        try:
            model = str(self.session.model_spec())
        except Exception:  # noqa: BLE001 - no model yet: `::model` picks one
            model = "none (::model PROVIDER:MODEL picks one)"
        text = (f"Sunwell chat in {self.engine.workspace} · model {model}\n"
                "::help lists the commands · Ctrl-C cancels a turn · Ctrl-D leaves")
        self.out.write((f"{DIM}{text}{RESET}" if self.color else text) + "\n")

    def _goodbye(self) -> None:
        if session := self.session.id:
            self._status(f"session {session} (sunwell run --session {session} continues it)", DIM)
