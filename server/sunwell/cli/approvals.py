"""Approvals as the terminal shows them (cli/client.py asks): the diff or the exact command, what each answer means.

Everything in a request comes from the model, so all of it is shown through `visible`: a command that carries
escape sequences must read as what will run, not as what the sequences paint over it.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import threading
from typing import assert_never

from sunwell.cli.visible import visible
from sunwell.wire.approval import (
    ApprovalRequest,
    CommandPreview,
    DiffPreview,
    EffectsPreview,
    FetchPreview,
    LearnPreview,
    ToolPreview,
)

REMOTE_SCHEMA_NOTE = "This file names a remote schema: {url} — VS Code will fetch it when the file is opened"
ANSWERS = {"y": "allow", "yes": "allow", "n": "deny", "no": "deny", "": "deny",
           "a": "allowSession", "always": "allowSession", "s": "allowSession"}


def render_preview(request: ApprovalRequest, color: bool = False) -> str:
    preview = request.preview
    if isinstance(preview, CommandPreview):
        return f"$ {_shown_command(preview.command)}\n  (in {visible(preview.cwd or '.')})"
    if isinstance(preview, DiffPreview):
        shown = _diff(preview.path, preview.before, preview.after, color)
        if preview.remote_schema:  # last: the line read just before the question
            shown += REMOTE_SCHEMA_NOTE.format(url=visible(preview.remote_schema))
        return shown
    if isinstance(preview, EffectsPreview):
        return _effects(preview, color)
    if isinstance(preview, FetchPreview):  # the host first: it is what allow-for-session allows
        return f"host {visible(preview.host)}\n  {visible(preview.url)}"
    if isinstance(preview, LearnPreview):
        return _learn(preview)
    if isinstance(preview, ToolPreview) and preview.server:
        arguments = json.dumps(preview.arguments, ensure_ascii=False, indent=2)
        return visible(f"{preview.tool} on the MCP server {preview.server}, with:\n{arguments}")
    return visible(f"{request.name}({request.arguments})")


def _diff(path: str, before: str | None, after: str | None, color: bool) -> str:
    # escaped before splitting, so that only a newline starts a diff line (not a \r, \f or \x1c)
    old, new = (visible(text or "").splitlines(keepends=True) for text in (before, after))
    shown = visible(path)
    label = shown + ("" if before is not None else " (new file)")
    lines = difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{shown}",
                                 "/dev/null" if after is None else f"b/{label}")
    return "".join(_paint(line, color) for line in _ensure_newlines(lines))


def _learn(preview: LearnPreview) -> str:
    """The hosts the learned tools will call, then each tool; what changed when re-learning."""
    lines = [f"learn the API {preview.name}: {len(preview.operations)} tools calling {', '.join(preview.hosts)}"]
    lines += [f"  {op.tool}  {op.method} {op.path}" + (f"  {op.summary}" if op.summary else "")
              for op in preview.operations]
    if preview.changes is not None:
        shown = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in preview.changes.items() if names)
        lines.append(f"  changed since it was learned: {shown or 'nothing'}")
    return visible("\n".join(lines))


EFFECT_MARKS = {"added": "A", "modified": "M", "deleted": "D", "mode": "M (mode)"}


def _effects(preview: EffectsPreview, color: bool) -> str:
    """A command that already ran staged: the command, its output and exit code, a stat of the files it changed,
    then each file's diff. Nothing is in the workspace yet."""
    where = visible(preview.cwd or ".")
    out = [(f"$ {_shown_command(preview.command)}\n  (in {where}; it ran in a staging copy and exited with "
            f"{preview.exit_code}; nothing has reached the workspace yet)\n")]
    if preview.output.strip():
        out.append("".join(f"  | {line}\n" for line in visible(preview.output).splitlines()))
    if not preview.changes:
        out.append("It changed no files.\n")
    for change in preview.changes:
        size = "" if change.path.endswith("/") else _stat(change.before, change.after)
        note = " (binary)" if change.binary else ""
        out.append(f"  {EFFECT_MARKS[change.change]:9} {visible(change.path)}{size}{note}\n")
    if preview.truncated:
        out.append("  ... and more files (not listed)\n")
    for change in preview.changes:
        if change.change != "mode" and (change.before is not None or change.after is not None):
            out.append(_diff(change.path, change.before, change.after, color))
    return "".join(out).rstrip("\n")


def _stat(before: str | None, after: str | None) -> str:
    old, new = (text.splitlines() if text else [] for text in (before, after))
    diff = list(difflib.unified_diff(old, new, lineterm="", n=0))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"  +{added} -{removed}" if diff else ""


def verb(request: ApprovalRequest) -> str:
    match request.risk:
        case "shell":
            return "apply what a command did" if isinstance(request.preview, EffectsPreview) else "run a command"
        case "write":
            return "change a file"
        case "network":
            return ("fetch from the web" if isinstance(request.preview, FetchPreview) else "learn an API"
                    if isinstance(request.preview, LearnPreview) else "use the network")
        case "mcp":
            return "call a tool of an MCP server"
        case other:
            assert_never(other)


def _ensure_newlines(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _paint(line: str, color: bool) -> str:
    if not color:
        return line
    code = "32" if line.startswith("+") else "31" if line.startswith("-") else "36" if line.startswith("@") else ""
    return f"\x1b[{code}m{line.rstrip(chr(10))}\x1b[0m\n" if code else line


def _shown_command(command: str) -> str:
    """The command with runs of blank lines (or trailing spaces) counted, not printed: sixty newlines would push
    the line that matters off the screen, above what the user reads before answering."""
    text = visible(command)
    text = re.sub(r"[ \t]{40,}", lambda m: f" ⟨{len(m.group())} spaces⟩ ", text)
    return re.sub(r"\n(?:[ \t]*\n){2,}", lambda m: f"\n⟨{m.group().count(chr(10)) - 1} blank lines⟩\n", text)


async def read_answer(stdin) -> str:
    """One line from `stdin`, given up when the turn is cancelled: the thread may not even have started reading yet
    (under load), and must then not take the next line the user types at the prompt."""
    if not hasattr(stdin, "abort"):  # a plain text stream (tests, pipes)
        return await asyncio.to_thread(stdin.readline)
    gone = threading.Event()
    try:
        return await asyncio.to_thread(stdin.readline, gone)
    except asyncio.CancelledError:
        gone.set()
        stdin.abort()
        raise
