"""search_files: a regex search over the workspace, with ripgrep when present and the same results without it.

Both engines follow one policy, so a test can hold them to the same output on the same tree: hidden files are
searched and .gitignore is not read; symlinks are not followed; blocked paths are pruned; a file with a NUL byte
anywhere is binary and contributes nothing (ripgrep reports that only at the file's end, so hits of a file are kept
only once the file is done); the answer is the first 500 matches in path order, then line order.

ripgrep is not asked to sort (`--sort path` makes it search on one thread, twice as slow on two cores): it searches
in parallel and the order comes from Hits, which keeps only the files that hold the first 501 hits in path order,
whatever order they arrive in, so memory stays bounded and the records of files that come too late are not even
parsed. A dense pattern, though, is found long before such a search ends: past DENSE_MATCHES hits ripgrep is
started again with `--sort path` and stopped as soon as the first 501 are in, as a pattern found on every line
then needs only the first files in path order.

A search ends within `ctx.search.timeout` seconds (by default a little before the call's limit, the user's
`tool_timeout_sec`, so that the search says why it stopped) with a `timeout` failure: the Python engine runs
model-supplied regexes, which can backtrack for ever, so it runs in a child process that is killed then.
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
from pathlib import Path

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.handlers.search_hits import (
    MAX_MATCHES,
    MAX_RECORD_BYTES,
    Hit,
    Hits,
    glob_filter,
    line_too_long,
)
from sunwell.tools.output import truncate
from sunwell.tools.subject import Subject
from sunwell.tools.workspace.jail import Jail

MAX_LINE_CHARS = 300
READ_BYTES = 1 << 20  # what is read from ripgrep at a time
DENSE_MATCHES = 4 * MAX_MATCHES
"""Hits of an unordered ripgrep search after which the pattern is searched again, in path order."""
MAX_PATTERN_CHARS = 10_000  # also keeps ripgrep's argv far below the system's limit
DRAIN_SECONDS = 1.0
_PACKAGE_DIR = Path(__file__).resolve().parents[3]  # the folder holding `sunwell`
NARROW_HINT = "use a narrower pattern or a glob such as '*.py'"
_REGEX_HINT = "escape special characters such as ( [ { . * + ? with a backslash; look-around is not supported"


async def search_files(args: SearchFilesArguments, ctx: ToolContext) -> str:
    pattern = args.pattern
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolFailure(
            "validation",
            f"parameter 'pattern' is {len(pattern):,} characters long; the limit is {MAX_PATTERN_CHARS:,}",
            "search for a shorter, distinctive part of the text",
        )
    path = args.path or "."
    glob = args.glob or None
    timeout = _seconds(ctx.search.timeout) or ctx.own_deadline()
    top = ctx.jail.resolve(path)
    if not (top.is_dir() or top.is_file()):  # ripgrep would block forever on a named pipe
        raise ToolFailure("unsupported", f"{path} is not a folder or a regular file")
    try:
        hits = Hits(ctx.jail, glob_filter(glob, ctx.jail.relative(top)))
    except ValueError as exc:
        raise ToolFailure("validation", f"parameter 'glob': {exc}") from None
    rg = _ripgrep(ctx.search.ripgrep_path)
    if not rg:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ToolFailure("validation", f"invalid regex {pattern!r}: {exc}", _REGEX_HINT) from None
    try:
        if rg:  # ripgrep checks the regex itself: its syntax (Rust's) is not quite Python's
            await asyncio.wait_for(_search_rg(rg, pattern, top, glob, ctx.jail, hits), timeout)
            items = hits.items
        else:
            items = await asyncio.wait_for(_search_python(pattern, top, glob, ctx.jail, timeout), timeout)
    except TimeoutError:
        limit = _seconds(ctx.search.timeout) or ctx.tool_timeout  # the user knows the limit they set
        raise _timed_out(limit, python=not rg) from None
    return _format(items, ctx.max_output_bytes)


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


# ---- ripgrep ---------------------------------------------------------------------------------------------------


def _rg_argv(pattern: str, top: Path, glob: str | None, jail: Jail, in_order: bool) -> list[str]:
    argv = ["--json", "--no-config", "--hidden", "--no-ignore", "--encoding=none"]
    if in_order:
        argv.append("--sort=path")
    if glob and "/" not in glob:  # a glob with a slash is only applied afterwards, where its meaning is ours
        argv.append(f"--glob={glob}")
    # Later globs win in ripgrep, so the exclusions come last. Anchored patterns (`config/prod.yaml`) are left to
    # the jail filter: ripgrep would anchor them to the searched folder instead of the workspace root.
    argv += [f"--iglob=!{p}" for p in jail.blocked if "/" not in p.rstrip("/")]
    # No --max-count: ripgrep would stop reading a file at its 501st hit and miss a NUL byte further on.
    return [*argv, f"--regexp={pattern}", "--", str(top)]


async def _search_rg(rg: str, pattern: str, top: Path, glob: str | None, jail: Jail, hits: Hits) -> None:
    """ripgrep on all threads, in any order. A dense pattern (more than DENSE_MATCHES hits before that search is
    done) is searched again in path order, on one thread, stopping once the first hits are known: that reads a
    small part of the tree where the unordered search would read all of it. Both give the same answer."""
    if await _run_rg(rg, _rg_argv(pattern, top, glob, jail, in_order=False), pattern, jail, hits):
        return
    hits.clear()
    await _run_rg(rg, _rg_argv(pattern, top, glob, jail, in_order=True), pattern, jail, hits)


async def _run_rg(rg: str, argv: list[str], pattern: str, jail: Jail, hits: Hits) -> bool:
    """Feed ripgrep's records to `hits`. False when it stopped early: a dense pattern in an unordered search
    (the answer is not known), or enough hits in an ordered one (it is)."""
    in_order = "--sort=path" in argv
    proc = await asyncio.create_subprocess_exec(
        rg, *argv,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    stderr = asyncio.ensure_future(proc.stderr.read())
    records = _RgRecords(jail, hits)
    finished = False
    buffer = bytearray()
    try:
        # Read in large pieces and split the lines here: a pattern found on every line makes a million records,
        # and awaiting each line on its own would cost more than ripgrep's whole search.
        while chunk := await proc.stdout.read(READ_BYTES):
            end = chunk.rfind(b"\n")
            if len(buffer) + (len(chunk) if end < 0 else chunk.find(b"\n")) > MAX_RECORD_BYTES:
                raise line_too_long(records.current)
            if end < 0:
                buffer += chunk
                continue
            lines = (buffer + chunk[:end] if buffer else chunk[:end]).split(b"\n")
            buffer[:] = chunk[end + 1 :]
            for record in lines:
                records.feed(record)
            if hits.full if in_order else records.matches > DENSE_MATCHES:
                return in_order
        finished = True
    finally:
        if not finished:  # done early, an error, or the turn was cancelled
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            with contextlib.suppress(TimeoutError):  # read to the end the kill brings, so the pipe closes now
                await asyncio.wait_for(proc.stdout.read(), DRAIN_SECONDS)
        await proc.wait()
        errors = (await stderr).decode("utf-8", "replace").strip()
    if proc.returncode == 2 and not records.saw_file and errors:
        if "regex" in errors:
            first_paragraph = errors.split("\n\n")[0]  # the rest advises ripgrep flags the model cannot pass
            reason = next(
                (ln[6:].strip() for ln in errors.splitlines() if ln.startswith("error:")), first_paragraph
            )
            raise ToolFailure("validation", f"invalid regex {pattern!r}: {reason}", _REGEX_HINT)
        raise ToolFailure("execution", f"ripgrep failed: {errors[:500]}")
    return True


class _RgRecords:
    """ripgrep's JSON lines, a file at a time: `begin`, its `match`es, `end` (the files in any order, but the
    records of one file together)."""

    def __init__(self, jail: Jail, hits: Hits) -> None:
        self.jail, self.hits = jail, hits
        self.current = ""  # the file being read, for an error message
        self.wanted = False  # whether its hits could be shown: if not, its records are not even parsed
        self.pending: list[tuple[int, str]] = []
        self.saw_file = False
        self.matches = 0

    def feed(self, record: bytes) -> None:
        if record.startswith(b'{"type":"match"'):
            self.matches += 1
            if self.wanted and len(self.pending) <= MAX_MATCHES:
                data = json.loads(record)["data"]
                self.pending.append((data["line_number"], _rg_text(data["lines"])))
            return
        if not record:
            return
        message = json.loads(record)
        if message["type"] == "begin":
            self.saw_file, self.pending = True, []
            self.current = _relative(self.jail, _rg_path(message["data"]["path"]))
            self.wanted = bool(self.current) and self.hits.wants(self.current)
        elif message["type"] == "end" and self.wanted:
            binary = message["data"].get("binary_offset") is not None
            self.hits.add_file(self.current, self.pending, binary, checked=True)
            self.wanted, self.pending = False, []


def _rg_text(obj: dict[str, str]) -> str:
    """ripgrep's JSON holds text as `text`, or as base64 `bytes` when it is not valid UTF-8."""
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj["bytes"]).decode("utf-8", "replace")


def _rg_path(obj: dict[str, str]) -> str:
    """A path as Python's os functions spell it (undecodable bytes as surrogate escapes, like os.scandir)."""
    return obj["text"] if "text" in obj else os.fsdecode(base64.b64decode(obj["bytes"]))


def _relative(jail: Jail, absolute: str) -> str:
    root = str(jail.root)
    if absolute.startswith(root) and absolute[len(root) : len(root) + 1] == "/" and root != "/":
        return absolute[len(root) + 1 :]  # what jail.relative gives, without pathlib's cost for every file
    try:
        return jail.relative(Path(absolute))
    except ValueError:
        return ""  # not under the root: dropped


# ---- pure Python -----------------------------------------------------------------------------------------------


async def _search_python(pattern: str, top: Path, glob: str | None, jail: Jail, timeout: float) -> list[Hit]:
    """The Python engine (tools/handlers/pygrep.py) in a child process. A regex that backtracks for ever holds the GIL: in a
    thread it would stall the event loop and could not be stopped, but a process can be killed."""
    request = {
        "pattern": pattern, "top": str(top), "glob": glob, "root": str(jail.root), "blocked": list(jail.blocked),
        "cpu_seconds": math.ceil(timeout) + 5,  # the child's own limit, should Sunwell die without killing it
    }  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sunwell.tools.handlers.pygrep",
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
    return [Hit(rel, lineno, text) for rel, lineno, text in reply["hits"]]


# ---- output ----------------------------------------------------------------------------------------------------


def _format(items: list[Hit], max_bytes: int) -> str:
    """`items` in path order, then line order (as Hits gives them)."""
    if not items:
        return "(no matches)"
    lines = [f"{h.rel}:{h.lineno}:{_clip(h)}" for h in items[:MAX_MATCHES]]
    if len(items) > MAX_MATCHES:
        lines.append(f"[showing the first {MAX_MATCHES} matches; {NARROW_HINT} to see the rest]")
    return truncate("\n".join(lines), max_bytes, NARROW_HINT)


def _clip(hit: Hit) -> str:
    text = hit.text.rstrip("\r\n")
    if hit.lineno == 1:
        text = text.removeprefix("\ufeff")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " [...]"


class SearchFilesArguments(ToolArguments):
    pattern: str = Field(min_length=1, description='Regular expression, e.g. "class \\w+Error".')
    path: str = Field(".", description="Folder or file to search in.")
    glob: str | None = Field(None, description='Only files whose name matches, e.g. "*.ts"; "!*.md" excludes.')

    def subject(self) -> Subject:
        return Subject(reads=(self.path,))


SEARCH_FILES = Tool.of(
    SearchFilesArguments, search_files,
    name="search_files",
    description=(
        "Search the contents of workspace files with a regular expression and get back matching lines as "
        "`path:line:text`. Use it to find where something is defined or used before reading a file. `path` limits "
        'the search to a folder or file (default "."), `glob` to file names such as "*.py". At most 500 '
        "matches; long lines are cut. Binary files and blocked files (.env, keys, secrets, .git, node_modules) "
        'are skipped. Example: {"pattern": "def load_config", "glob": "*.py"}.'
    ),
    min_trust=Trust.discovery,
    harmless=True,
)
