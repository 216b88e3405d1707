"""search_files: a regex search over the workspace, with ripgrep when present and the same results without it.

Both engines follow one policy, so a test can hold them to the same output on the same tree: hidden files are
searched and .gitignore is not read; symlinks are not followed; blocked paths are pruned; a file with a NUL byte
anywhere is binary and contributes nothing (ripgrep reports that only at the file's end, so hits of a file are kept
only once the file is done); files are visited in sorted path order so the first 500 matches are the same ones.

A search ends within `ctx.search_timeout` seconds (default 50, under the tool's own 60) with a `timeout`
failure: the Python engine runs model-supplied regexes, which can backtrack for ever, so it runs in a child process
that is killed then.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.files import string_arg
from sunwell.tools.globs import compile_glob
from sunwell.tools.jail import Jail
from sunwell.tools.output import truncate

MAX_MATCHES = 500
MAX_LINE_CHARS = 300
MAX_RECORD_BYTES = 64 << 20  # one line of a file (or of ripgrep's JSON about it)
WHOLE_FILE_CHECK_BYTES = 8 << 20
MAX_PATTERN_CHARS = 10_000  # also keeps ripgrep's argv far below the system's limit
DEFAULT_TIMEOUT = 50.0
_PACKAGE_DIR = Path(__file__).resolve().parents[2]  # the folder holding `sunwell`
NARROW_HINT = "use a narrower pattern or a glob such as '*.py'"
_REGEX_HINT = "escape special characters such as ( [ { . * + ? with a backslash; look-around is not supported"


@dataclass(frozen=True)
class Hit:
    rel: str
    lineno: int
    text: str


class Hits:
    """Hits of finished files that pass the glob and, again, the jail (so a hit never shows a blocked or escaping
    file, whichever engine found it); full once there is more than we will show."""

    def __init__(self, jail: Jail, glob_ok: Callable[[str], bool]) -> None:
        self.jail = jail
        self.glob_ok = glob_ok
        self.items: list[Hit] = []

    def add_file(self, rel: str, hits: list[tuple[int, str]], binary: bool) -> None:
        if hits and not binary and self.glob_ok(rel) and self._in_jail(rel):
            self.items.extend(Hit(rel, n, text) for n, text in hits)

    def _in_jail(self, rel: str) -> bool:
        try:
            self.jail.resolve(rel)
        except ToolFailure:
            return False
        return True

    @property
    def full(self) -> bool:
        return len(self.items) > MAX_MATCHES


async def search_files(args: dict[str, Any], ctx: ToolContext) -> str:
    pattern = string_arg(args, "pattern")
    if not pattern:
        raise ToolFailure("validation", "parameter 'pattern' is required (a regular expression)")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolFailure(
            "validation",
            f"parameter 'pattern' is {len(pattern):,} characters long; the limit is {MAX_PATTERN_CHARS:,}",
            "search for a shorter, distinctive part of the text",
        )
    path = string_arg(args, "path", ".") or "."
    glob = string_arg(args, "glob") or None
    timeout = _seconds(ctx.search_timeout) or DEFAULT_TIMEOUT
    top = ctx.jail.resolve(path)
    if not (top.is_dir() or top.is_file()):  # ripgrep would block forever on a named pipe
        raise ToolFailure("unsupported", f"{path} is not a folder or a regular file")
    try:
        hits = Hits(ctx.jail, glob_filter(glob, ctx.jail.relative(top)))
    except ValueError as exc:
        raise ToolFailure("validation", f"parameter 'glob': {exc}") from None
    rg = _ripgrep(ctx.ripgrep_path)
    if rg:  # ripgrep checks the regex itself: its syntax (Rust's) is not quite Python's
        search = _search_rg(rg, pattern, top, glob, ctx.jail, hits)
    else:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ToolFailure("validation", f"invalid regex {pattern!r}: {exc}", _REGEX_HINT) from None
        search = _search_python(pattern, top, glob, ctx.jail, hits, timeout)
    try:
        await asyncio.wait_for(search, timeout)
    except TimeoutError:
        raise _timed_out(timeout, python=not rg) from None
    return _format(hits.items, ctx.max_output_bytes)


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _timed_out(timeout: float, python: bool) -> ToolFailure:
    hint = "search a smaller path, or add a glob such as '*.py'"
    if python:  # ripgrep's regexes never backtrack; Python's can, for ever
        hint += "; a regex with nested repetition such as (a+)+ can run for ever without ripgrep: simplify it"
    return ToolFailure("timeout", f"the search did not finish within {timeout:g} s and was stopped", hint)


def _ripgrep(configured: str | None) -> str | None:
    """`ripgrep_path` None means look on PATH; "" means don't use ripgrep; a path that is not there is ignored."""
    if configured == "":
        return None
    candidate = configured or shutil.which("rg")
    return candidate if candidate and os.access(candidate, os.X_OK) else None


def glob_filter(glob: str | None, top_rel: str) -> Callable[[str], bool]:
    """A glob without `/` is matched against the file name, one with `/` against the path from the workspace root
    or from the searched folder; a leading `!` excludes. Raises ValueError for a malformed glob."""
    if not glob:
        return lambda rel: True
    negate = glob.startswith("!")
    matcher = compile_glob(glob.removeprefix("!"))
    if "/" not in glob:
        return lambda rel: bool(matcher.match(rel.rsplit("/", 1)[-1])) != negate
    below = len(top_rel) + 1 if top_rel != "." else 0
    return lambda rel: bool(matcher.match(rel) or matcher.match(rel[below:])) != negate


# ---- ripgrep ---------------------------------------------------------------------------------------------------


def _rg_argv(pattern: str, top: Path, glob: str | None, jail: Jail) -> list[str]:
    argv = ["--json", "--no-config", "--hidden", "--no-ignore", "--sort=path", "--encoding=none"]
    if glob and "/" not in glob:  # a glob with a slash is only applied afterwards, where its meaning is ours
        argv.append(f"--glob={glob}")
    # Later globs win in ripgrep, so the exclusions come last. Anchored patterns (`config/prod.yaml`) are left to
    # the jail filter: ripgrep would anchor them to the searched folder instead of the workspace root.
    argv += [f"--iglob=!{p}" for p in jail.blocked if "/" not in p.rstrip("/")]
    return [*argv, f"--regexp={pattern}", "--", str(top)]


async def _search_rg(rg: str, pattern: str, top: Path, glob: str | None, jail: Jail, hits: Hits) -> None:
    proc = await asyncio.create_subprocess_exec(
        rg, *_rg_argv(pattern, top, glob, jail),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        limit=MAX_RECORD_BYTES,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    stderr = asyncio.ensure_future(proc.stderr.read())
    finished, saw_file = False, False
    rel, pending = "", []
    try:
        while not hits.full:
            try:
                record = await proc.stdout.readline()
            except ValueError:  # asyncio's limit: one line beyond MAX_RECORD_BYTES
                raise line_too_long(rel) from None
            if not record:
                finished = True
                break
            if len(pending) > MAX_MATCHES and record.startswith(b'{"type":"match"'):
                continue  # this file already has more hits than we show; skip the JSON work
            message = json.loads(record)
            data = message.get("data", {})
            if message["type"] == "begin":
                saw_file, pending = True, []
                rel = _relative(jail, _rg_path(data["path"]))
            elif message["type"] == "match":
                pending.append((data["line_number"], _rg_text(data["lines"])))
            elif message["type"] == "end" and rel:
                hits.add_file(rel, pending, binary=data.get("binary_offset") is not None)
    finally:
        if not finished and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # enough hits, an error, or the turn was cancelled
        await proc.wait()
        errors = (await stderr).decode("utf-8", "replace").strip()
    if finished and proc.returncode == 2 and not saw_file and errors:
        if "regex" in errors:
            first_paragraph = errors.split("\n\n")[0]  # the rest advises ripgrep flags the model cannot pass
            reason = next(
                (ln[6:].strip() for ln in errors.splitlines() if ln.startswith("error:")), first_paragraph
            )
            raise ToolFailure("validation", f"invalid regex {pattern!r}: {reason}", _REGEX_HINT)
        raise ToolFailure("execution", f"ripgrep failed: {errors[:500]}")


def _rg_text(obj: dict[str, str]) -> str:
    """ripgrep's JSON holds text as `text`, or as base64 `bytes` when it is not valid UTF-8."""
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj["bytes"]).decode("utf-8", "replace")


def _rg_path(obj: dict[str, str]) -> str:
    """A path as Python's os functions spell it (undecodable bytes as surrogate escapes, like os.scandir)."""
    return obj["text"] if "text" in obj else os.fsdecode(base64.b64decode(obj["bytes"]))


def _relative(jail: Jail, absolute: str) -> str:
    try:
        return jail.relative(Path(absolute))
    except ValueError:
        return ""  # not under the root: dropped


# ---- pure Python -----------------------------------------------------------------------------------------------


async def _search_python(
    pattern: str, top: Path, glob: str | None, jail: Jail, hits: Hits, timeout: float
) -> None:
    """The Python engine (tools/pygrep.py) in a child process. A regex that backtracks for ever holds the GIL: in a
    thread it would stall the event loop and could not be stopped, but a process can be killed."""
    request = {
        "pattern": pattern, "top": str(top), "glob": glob, "root": str(jail.root), "blocked": list(jail.blocked),
        "cpu_seconds": math.ceil(timeout) + 5,  # the child's own limit, should Sunwell die without killing it
    }  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sunwell.tools.pygrep",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=_PACKAGE_DIR,  # `-m` puts the working folder first on sys.path: ours, never the workspace's
    )  # fmt: skip
    try:
        out, err = await proc.communicate(json.dumps(request).encode())
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # the time limit is up or the turn was cancelled
            await proc.wait()
    try:
        reply = json.loads(out)
    except ValueError:
        last = (err.decode("utf-8", "replace").strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise ToolFailure("execution", f"the Python search failed: {last}") from None
    if "error" in reply:
        raise ToolFailure(reply["error"]["code"], reply["error"]["message"], reply["error"].get("suggestion"))
    hits.items = [Hit(rel, lineno, text) for rel, lineno, text in reply["hits"]]


def line_too_long(rel: str) -> ToolFailure:
    return ToolFailure(
        "execution",
        f"search stopped at a line longer than {MAX_RECORD_BYTES >> 20} MB in {rel or 'a file'}",
        f"exclude that file with a glob such as '!{rel.rsplit('/', 1)[-1] or '*.min.js'}'",
    )


# ---- output ----------------------------------------------------------------------------------------------------


def _format(items: list[Hit], max_bytes: int) -> str:
    if not items:
        return "(no matches)"
    items = sorted(items, key=lambda h: (h.rel.split("/"), h.lineno))
    lines = [f"{h.rel}:{h.lineno}:{_clip(h)}" for h in items[:MAX_MATCHES]]
    if len(items) > MAX_MATCHES:
        lines.append(f"[showing the first {MAX_MATCHES} matches; {NARROW_HINT} to see the rest]")
    return truncate("\n".join(lines), max_bytes, NARROW_HINT)


def _clip(hit: Hit) -> str:
    text = hit.text.rstrip("\r\n")
    if hit.lineno == 1:
        text = text.removeprefix("\ufeff")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " [...]"


SEARCH_FILES = Tool(
    name="search_files",
    description=(
        "Search the contents of workspace files with a regular expression and get back matching lines as "
        "`path:line:text`. Use it to find where something is defined or used before reading a file. `path` limits "
        'the search to a folder or file (default "."), `glob` to file names such as "*.py". At most 500 '
        "matches; long lines are cut. Binary files and blocked files (.env, keys, secrets, .git, node_modules) "
        'are skipped. Example: {"pattern": "def load_config", "glob": "*.py"}.'
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "minLength": 1,
                "description": 'Regular expression, e.g. "class \\w+Error".',
            },
            "path": {"type": "string", "description": "Folder or file to search in.", "default": "."},
            "glob": {
                "type": "string",
                "description": 'Only files whose name matches, e.g. "*.ts"; "!*.md" excludes.',
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    handler=search_files,
    min_trust=Trust.discovery,
)
