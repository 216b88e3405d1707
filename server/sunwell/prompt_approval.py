"""Approvals asked at the terminal: the diff or the exact command, then yes / no / allow for this session."""

from __future__ import annotations

import asyncio
import difflib
import sys
from typing import TextIO

from sunwell.tools.approval import ApprovalRequest

ANSWERS = {"y": "allow", "yes": "allow", "n": "deny", "no": "deny", "": "deny",
           "a": "allowSession", "always": "allowSession", "s": "allowSession"}


def render_preview(request: ApprovalRequest, color: bool = False) -> str:
    preview = request.preview
    if preview.get("kind") == "command":
        return f"$ {preview['command']}\n  (in {preview.get('cwd', '.')})"
    if preview.get("kind") == "diff":
        before = (preview.get("before") or "").splitlines(keepends=True)
        after = (preview.get("after") or "").splitlines(keepends=True)
        label = preview["path"] + ("" if preview.get("before") is not None else " (new file)")
        lines = difflib.unified_diff(before, after, f"a/{preview['path']}", f"b/{label}")
        return "".join(_paint(line, color) for line in _ensure_newlines(lines))
    return f"{request.name}({request.arguments})"


class TerminalAsker:
    """An `Asker` for `--approve ask`: prints to stderr (stdout may carry --json events) and reads a line."""

    def __init__(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stderr, color: bool = False) -> None:
        self.stdin, self.out, self.color = stdin, out, color
        self._lock = asyncio.Lock()  # one question at a time

    async def __call__(self, request: ApprovalRequest) -> str:
        async with self._lock:
            self.out.write(f"\n{request.name} wants to {_verb(request)}:\n{render_preview(request, self.color)}\n")
            while True:
                self.out.write("Allow? [y]es / [n]o / [a]llow for this session: ")
                self.out.flush()
                line = await asyncio.to_thread(self.stdin.readline)
                if not line:  # end of input: nobody is there to say yes
                    return "deny"
                answer = ANSWERS.get(line.strip().lower())
                if answer is not None:
                    return answer


def _verb(request: ApprovalRequest) -> str:
    return {"shell": "run a command", "write": "change a file", "network": "use the network"}[request.risk]


def _ensure_newlines(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _paint(line: str, color: bool) -> str:
    if not color:
        return line
    code = "32" if line.startswith("+") else "31" if line.startswith("-") else "36" if line.startswith("@") else ""
    return f"\x1b[{code}m{line.rstrip(chr(10))}\x1b[0m\n" if code else line
