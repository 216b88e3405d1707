"""`sunwell run` and `sunwell apply`: one turn, headless, its events on stdout and its status as the exit code."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from contextlib import nullcontext
from pathlib import Path

from sunwell.agent.attached_images import ImageInput
from sunwell.agent.chat import Overrides, UserInput
from sunwell.agent.engine import Engine
from sunwell.agent.session import Session, latest_session
from sunwell.agent.sessions import SessionStoreError
from sunwell.agent.worktree_sessions import NAME_PATTERN, TurnEnd, WorktreeSessions
from sunwell.cli.client import TerminalClient
from sunwell.cli.exit_codes import EXIT_CANCELLED, EXIT_ERROR, STATUS_EXIT, UsageError
from sunwell.cli.options import tool_names, turn_settings
from sunwell.cli.rendering import JsonLines, Transcript, visible
from sunwell.cli.terminal_input import StdinLines
from sunwell.errors import SetupError
from sunwell.wire.client import Headless, Request

STOP_GRACE = 2.0
"""Seconds a turn's event loop has to take the cancel of Ctrl-C or SIGTERM before the process stops without it."""


def cmd_run(args: argparse.Namespace) -> int:
    workspace, settings = turn_settings(args)
    resuming = getattr(args, "resume", False)
    if resuming and args.prompt is not None:
        raise UsageError("--resume takes no prompt: it takes up the turn where its log ends")
    if getattr(args, "replace_turn", None) and (resuming or not args.session):
        raise UsageError("--replace-turn needs --session (the session whose turn the prompt replaces), not --resume")
    _prompt_after_worktree(args)
    if getattr(args, "base", None) is not None and getattr(args, "worktree", None) is None:
        raise UsageError("--base names where a new worktree starts: use it with --worktree")
    prompt = args.prompt if args.prompt is not None or resuming else _read_stdin()
    if not resuming and (not prompt or not prompt.strip()):
        raise UsageError("no prompt: pass it as an argument or on stdin")
    worktree = None
    if getattr(args, "worktree", None) is not None:
        worktree, row = _open_worktree(args, settings, workspace, prompt or "")
        workspace, settings = turn_settings(args)  # the checkout's own config, which may only narrow
    names = tool_names(args)
    images = _images(getattr(args, "image", []))  # a file that cannot be read stops here, before any turn
    sink = JsonLines() if args.json else Transcript(color=sys.stdout.isatty())
    if settings.approval is None:
        settings.approval = "ask" if sys.stdin is not None and sys.stdin.isatty() else "deny"
    # answers are read from stdin, so there is no one to ask when the prompt itself came from there
    can_ask = settings.approval == "ask" and (args.prompt is not None or resuming) and sys.stdin is not None
    # stdin's lines through a read that can be abandoned: a question or an approval that timed out must not leave a
    # thread blocked on stdin, which the process would wait for at exit until someone pressed Enter
    lines = StdinLines(sys.stdin.fileno()) if sys.stdin is not None else None
    # ask_user's questions and a sign-in's page: a person at a terminal, unless approvals are set to deny (no one is
    # asked anything); an MCP server's forms only where approvals are asked
    someone = lines is not None and (
        can_ask or (settings.approval == "auto" and args.prompt is not None and _on_terminal()))
    answering: set[Request] = {"approve", "elicit"} if can_ask else set()
    answering |= {"ask", "openUrl"} if someone else set()
    client = TerminalClient(stdin=lines, color=sys.stderr.isatty(), answering=answering) if lines else Headless()
    try:
        with worktree.turn(row.name, prompt or "") if worktree else nullcontext(TurnEnd()) as end:
            engine = Engine(settings, workspace, client=client)
            if worktree:
                worktree.equip(engine, row)
            if worktree and not args.session:  # a first turn killed before its end recorded it: its session
                args.session = latest_session(engine)
            turn = _resume(engine, sink, args, names) if resuming else _turn(engine, prompt, sink, args, names, images)
            done = _run_cancellable(_then_close(engine, turn))
            end.status, end.session = (done.status, done.session) if done else ("cancelled", args.session)
        if worktree and end.commit:
            print(f"sunwell: committed on {row.branch}: {end.commit[:12]}", file=sys.stderr)
        if done is None:
            print("sunwell: cancelled", file=sys.stderr)
            return EXIT_CANCELLED
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    except SessionStoreError as exc:
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    if not args.json and sys.stderr.isatty():
        _print_usage(engine, done)
    if done.status == "error":  # the provider's message, which may quote the model
        print(f"sunwell: {visible(done.error or '')}", file=sys.stderr)
    elif done.status == "cancelled" and not args.json:
        print("sunwell: cancelled", file=sys.stderr)
    return STATUS_EXIT[done.status]


async def _turn(engine, prompt, sink, args, names, images):
    """The prompt as `sunwell chat` takes a line: a `::command` is run (`::SERVER:PROMPT` expands into the turn),
    anything else is one turn with the workspace files it names as `@path` attached."""
    line = UserInput(prompt, overrides=Overrides(lens=args.lens, tool_names=names), mentions_in_text=True,
                     replace_turn=getattr(args, "replace_turn", None), images=images)
    return (await Session(engine, args.session).submit(line, sink)).done


def _prompt_after_worktree(args: argparse.Namespace) -> None:
    """`--worktree "fix the parser"`: argparse took the prompt for the optional NAME; what is no name is the prompt."""
    name = getattr(args, "worktree", None)
    if name and args.prompt is None and not NAME_PATTERN.fullmatch(name):
        args.prompt, args.worktree = name, ""


def _open_worktree(args, settings, workspace, prompt):
    """The worktree the run goes to (made when new); `args` then name its checkout and its session."""
    try:
        worktrees = WorktreeSessions(settings, workspace)
        row, made = worktrees.open(args.worktree or None, prompt, getattr(args, "base", None))
    except SetupError as exc:  # not git, a hostile name, no commit yet: one line, nothing made
        raise UsageError(str(exc)) from None
    if made:
        print(f"sunwell: worktree {row.name} on {row.branch} at {row.path}", file=sys.stderr)
    args.session = args.session or row.session
    args.workspace = worktrees.workspace_of(row)
    return worktrees, row


def _images(files: list[str]) -> list[ImageInput]:
    """`--image FILE`s, read here: the user named them on their own command line (a screenshot is seldom in the
    workspace), and only what decodes as an image is ever sent (agent/attached_images.py)."""
    images = []
    for file in files:
        try:
            images.append(ImageInput(data=Path(file).expanduser().read_bytes(), label=file))
        except OSError as exc:
            raise UsageError(f"--image {file}: {exc.strerror or exc}") from None
    return images


async def _resume(engine, sink, args, names):
    """`--resume`: the last turn of `--session` (default: the newest session of this workspace) taken up where its
    log ends; a session of another workspace is refused (a usage error)."""
    session = args.session
    if session is None:
        session = latest_session(engine)
        if session is None:
            raise SetupError(f"no session to resume in {engine.workspace}")
    elif not Session(engine, session).exists():
        raise SetupError(f"unknown session '{session}': see `sunwell sessions list`")
    overrides = Overrides(model=args.model, trust=args.trust, lens=args.lens, tool_names=names)
    return await Session(engine, session).resume(sink, overrides)


def _on_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _print_usage(engine, done) -> None:
    """Tokens and cost of the turn, dim, for a person watching (never in a pipe, never with --json)."""
    try:
        line = Session(engine, done.session).usage_line(done)
    except Exception:  # noqa: BLE001 - a figure to show, never a reason to fail the run
        return
    if line:
        print(f"\x1b[2m{line}\x1b[0m", file=sys.stderr)


def _run_cancellable(coro):
    """Run a turn; Ctrl-C (or SIGTERM) cancels it cleanly and the turn ends with its `done` event (None: it was
    cancelled before it began). The event loop takes the cancel when it is free; a loop kept busy by CPU-bound work
    (a turn fitting thousands of tools) would not be for minutes, so the signal also starts a watchdog at once, and
    the process stops without the turn's end if the loop has not taken the cancel `STOP_GRACE` seconds later, or
    when a second signal comes."""

    async def runner():
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        taken = threading.Event()

        def cancel() -> None:  # on the loop, when it is free
            taken.set()
            task.cancel()

        def heard(signum: int, frame) -> None:  # in the main thread, between two bytecodes of whatever runs
            if heard_before:
                _stop(signum)
            heard_before.append(signum)
            threading.Thread(target=lambda: taken.wait(STOP_GRACE) or _stop(signum), daemon=True).start()

        heard_before: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, cancel)  # asyncio's wakeup fd: the loop hears the signal even in select
            signal.signal(sig, heard)  # in place of asyncio's no-op Python handler; the wakeup fd stays
        try:
            return await task
        except asyncio.CancelledError:  # before the turn began: nothing of it to end
            return None

    return asyncio.run(runner())


def _stop(signum: int) -> None:
    """End the process now: one line, the cancelled exit code. Safe from any thread: no lock, no buffered file."""
    os.write(2, f"sunwell: stopped by {signal.Signals(signum).name}; the turn was busy and did not end\n".encode())
    os._exit(EXIT_CANCELLED)


async def _then_close(engine, turn):
    """The turn, then what the engine started (MCP servers) stopped, on the same event loop."""
    try:
        return await turn
    finally:
        await engine.aclose()


def _read_stdin() -> str | None:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read()
