"""The person at the terminal, as the client port (wire/client.py): approvals, `ask_user`'s questions and an MCP
server's forms asked on stderr (stdout may carry --json events) and answered on stdin, one at a time; a sign-in's
page opened in the browser. Secrets are not asked for here: they go to the OS keyring.

Which of these someone answers is the command's to say (`answering`): `sunwell run` with its prompt on stdin answers
nothing, approvals set to `deny` ask no one anything, a pipe opens no browser.

The browser: the standard library's `webbrowser` (the program `BROWSER` names, `xdg-open`, `open`, `os.startfile`: an
argv or the platform's own call, never a shell), run as `python -I -m webbrowser URL` in a process of its own: what a
browser prints goes nowhere (not into `--json`'s stdout, not onto the terminal), a browser command that waits until
the browser closes holds up nothing, and `-I` keeps a `webbrowser.py` in the workspace from being imported. Only
where a browser can show (a desktop session, or `BROWSER` set), so a text browser never takes over the terminal. The
URL itself is always printed: by the `mcp_auth` notice (stdout in a transcript, the event in `--json`, stderr for
`login`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Collection
from typing import TextIO

from sunwell.cli.approvals import ANSWERS, read_answer, render_preview, verb
from sunwell.cli.elicit import FormPrompt
from sunwell.cli.visible import visible
from sunwell.wire.approval import ApprovalRequest, FetchPreview, LearnPreview
from sunwell.wire.client import Headless, OpenUrl, Request
from sunwell.wire.user_requests import ApproveResult, AskParams, AskResult, ElicitParams, ElicitResult


class TerminalClient(Headless):
    def __init__(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stderr, color: bool = False, *,
                 answering: Collection[Request] = ()) -> None:
        self.stdin, self.out, self.color = stdin, out, color
        self.answering = frozenset(answering)
        self.lock = asyncio.Lock()  # one question at a time, whatever asks it

    def answers(self, request: Request) -> bool:
        return request in self.answering

    async def approve(self, request: ApprovalRequest) -> ApproveResult:
        async with self.lock:
            preview = render_preview(request, self.color)
            self.out.write(f"\n{visible(request.name)} wants to {verb(request)}:\n{preview}\n")
            session = (f"[a]llow {visible(request.preview.host)} for this session"
                       if isinstance(request.preview, FetchPreview) else "[a]llow for this session"
                       if not isinstance(request.preview, LearnPreview) else "(asked every time)")
            while True:
                self.out.write(f"Allow? [y]es / [n]o / {session}: ")
                self.out.flush()
                line = await read_answer(self.stdin)
                if not line:  # end of input: nobody is there to say yes
                    return ApproveResult(decision="deny")
                answer = ANSWERS.get(line.strip().lower())
                if answer is not None:
                    return ApproveResult(decision=answer)  # type: ignore[arg-type]

    async def ask(self, request: AskParams) -> AskResult:
        """An option by its number, or the user's own words; an empty line or the end of input is no answer."""
        async with self.lock:
            options = request.options
            self.out.write(f"\nThe model asks: {visible(request.question)}\n")
            self.out.write("".join(f"  {number}. {visible(option)}\n" for number, option in enumerate(options, 1)))
            self.out.write(f"Answer{' (a number, or your own words)' if options else ''}; empty to skip: ")
            self.out.flush()
            line = (await read_answer(self.stdin)).strip()
            if line.isdigit() and 1 <= int(line) <= len(options):
                return AskResult(answer=options[int(line) - 1])
            return AskResult(answer=line or None)

    async def elicit(self, request: ElicitParams) -> ElicitResult:
        async with self.lock:
            return await FormPrompt(self.stdin, self.out).fill(request)

    async def open_url(self, request: OpenUrl) -> bool:
        if not can_show_a_browser():
            return False
        await asyncio.to_thread(_open, request.url)
        return True


def _open(url: str) -> None:
    browser = subprocess.Popen([sys.executable, "-I", "-m", "webbrowser", "-t", url], cwd=tempfile.gettempdir(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    threading.Thread(target=browser.wait, daemon=True).start()  # reaped whenever it is done


def can_show_a_browser() -> bool:
    return (sys.platform in ("darwin", "win32") or bool(os.environ.get("BROWSER"))
            or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))
