"""The words Sunwell says to the model on its own behalf."""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

from sunwell.tools.base import ToolFailure
from sunwell.tools.files import walk
from sunwell.tools.jail import Jail

SYSTEM = """You are Sunwell, a coding assistant working inside the user's workspace{root}.
Use the tools to look at real files before you answer questions about them; never invent file contents.
Paths are relative to the workspace root. Some files (secrets, .env, .git) are off limits.
When you have what you need, answer the user directly and concisely."""

SMALL_MODEL = (
    "After a tool result arrives, answer the user's question from it in plain words. "
    "Call another tool only if the result does not contain what you need."
)

ANSWER_FROM_RESULTS = (
    "You are a helpful coding assistant. Tools were already run for the user's request; "
    "reply to the user in plain sentences using their results."
)
"""The system prompt of a small model's last request, which carries the turn's results instead of the history: a
0.5B model shown the history keeps writing tool calls, shown this it answers (measured: BENCHMARKS.md)."""

LIMIT_REACHED = (
    "[Sunwell] The tool-call limit of this turn ({n} rounds) is reached. Do not call any tool. "
    "Answer now: summarize what you found and did, and what is left to do."
)


def system_prompt(root: Path, extra: list[str], small_model: bool = False, files: list[str] | None = None,
                  named: list[str] | None = None) -> str:
    """The system instructions; `files` (a small model's map of the workspace) and `named` (the files the user's
    words name) are listed after them."""
    # A small model copies an absolute root into every path it writes; it gets the file list instead.
    where = "" if small_model else f" ({root})"
    overview = [f"Files in the workspace: {', '.join(files)}"] if files else []
    if named:  # else it reads the likeliest-looking file of the list (src/calc.py for "Read a.txt")
        overview.append(f"The user's request names the file{'s' if len(named) > 1 else ''} {', '.join(named)}.")
    return "\n\n".join([SYSTEM.format(root=where), *([SMALL_MODEL] if small_model else []), *overview, *extra])


def workspace_files(jail: Jail, limit: int = 40, scan: int = 2000) -> list[str]:
    """Up to `limit` workspace-relative file paths, shallowest first, hidden and blocked ones left out ("…" when
    cut). A small model asked to "Read a.txt" writes `read.txt` unless it can see which files exist.
    """
    files: list[str] = []
    folders, scanned = deque([jail.root]), 0
    while folders and len(files) <= limit and scanned < scan:
        for entry, rel in walk(jail, folders.popleft(), max_depth=1):  # one level: breadth first
            scanned += 1
            if entry.name.startswith("."):
                continue  # .venv, .cache and the like would crowd out the project's own files
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                files.append(rel)
    return files[:limit] + (["…"] if len(files) > limit or folders else [])


_PATHLIKE = re.compile(r"[\w.~/-]*[\w-]\.\w+|[\w.-]+/[\w./-]*\w")


def named_files(jail: Jail, text: str, limit: int = 5) -> list[str]:
    """Workspace files the user's words name by path (`a.txt`, `src/app.py`), in order, blocked ones left out."""
    named: list[str] = []
    for token in dict.fromkeys(_PATHLIKE.findall(text)):
        try:
            real = jail.resolve(token)
        except ToolFailure:
            continue
        if real.is_file():
            named.append(jail.relative(real))
    return named[:limit]


def answer_from_results(request: str, results: list[tuple[str, str]], budget: int = 8000) -> str:
    """The user message of that last request: the user's words, then each `(call, outcome)` of the turn
    (`read_file({"path": "a.txt"})`, `returned:\n…` or `failed: …`)."""
    share = max(budget // max(len(results), 1), 200)
    shown = "\n\n".join(f"{call} {outcome if len(outcome) <= share else outcome[:share] + ' …(cut)'}"
                         for call, outcome in results)
    return f"Request: {request}\n\nTool results:\n{shown}\n\nYour reply:"
