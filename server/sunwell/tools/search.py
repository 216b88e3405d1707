"""search_files: a regex search over the workspace, with ripgrep when present and the same results without it.

Both engines follow one policy, so a test can hold them to the same output on the same tree: hidden files are
searched and .gitignore is not read; symlinks are not followed; blocked paths are pruned; a file with a NUL byte
anywhere is binary and contributes nothing (ripgrep reports that only at the file's end, so hits of a file are kept
only once the file is done); files are visited in sorted path order so the first 500 matches are the same ones.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.files import compile_glob, string_arg, walk
from sunwell.tools.jail import Jail
from sunwell.tools.output import truncate

MAX_MATCHES = 500
MAX_LINE_CHARS = 300
MAX_RECORD_BYTES = 64 << 20  # one line of a file (or of ripgrep's JSON about it)
WHOLE_FILE_CHECK_BYTES = 8 << 20
NARROW_HINT = "use a narrower pattern or a glob such as '*.py'"
_REGEX_HINT = "escape special characters such as ( [ { . * + ? with a backslash; look-around is not supported"


@dataclass(frozen=True)
class Hit:
    rel: str
    lineno: int
    text: str


class _Hits:
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
    path = string_arg(args, "path", ".") or "."
    glob = string_arg(args, "glob") or None
    top = ctx.jail.resolve(path)
    if not (top.is_dir() or top.is_file()):  # ripgrep would block forever on a named pipe
        raise ToolFailure("unsupported", f"{path} is not a folder or a regular file")
    try:
        hits = _Hits(ctx.jail, _glob_filter(glob, ctx.jail.relative(top)))
    except ValueError as exc:
        raise ToolFailure("validation", f"parameter 'glob': {exc}") from None
    rg = _ripgrep(ctx.ripgrep_path)
    if rg:  # ripgrep checks the regex itself: its syntax (Rust's) is not quite Python's
        await _search_rg(rg, pattern, top, glob, ctx.jail, hits)
    else:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolFailure("validation", f"invalid regex {pattern!r}: {exc}", _REGEX_HINT) from None
        stop = threading.Event()
        try:
            await asyncio.to_thread(_search_python, regex, top, ctx.jail, hits, stop)
        finally:
            stop.set()  # a cancelled search stops at the next file instead of running on in its thread
    return _format(hits.items, ctx.max_output_bytes)


def _ripgrep(configured: str | None) -> str | None:
    """`ripgrep_path` None means look on PATH; "" means don't use ripgrep; a path that is not there is ignored."""
    if configured == "":
        return None
    candidate = configured or shutil.which("rg")
    return candidate if candidate and os.access(candidate, os.X_OK) else None


def _glob_filter(glob: str | None, top_rel: str) -> Callable[[str], bool]:
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


async def _search_rg(rg: str, pattern: str, top: Path, glob: str | None, jail: Jail, hits: _Hits) -> None:
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
                raise _line_too_long(rel) from None
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


def _search_python(regex: re.Pattern[str], top: Path, jail: Jail, hits: _Hits, stop: threading.Event) -> None:
    quick = _whole_file_regex(regex)
    if top.is_file():
        files = iter([(top, jail.relative(top))])
    else:
        files = (
            (Path(e.path), rel)
            for e, rel in walk(jail, top)
            if e.is_file(follow_symlinks=False) and hits.glob_ok(rel)
        )
    for file, rel in files:
        if stop.is_set() or hits.full:
            return
        found, binary = _grep(regex, quick, file, rel)
        hits.add_file(rel, found, binary)


def _whole_file_regex(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern in MULTILINE mode, to rule a whole file out with one search instead of one per line.

    Every match within a line is also a match in the whole text (`^` and `$` then stop at newlines, and a word
    boundary sees a newline as the non-word edge a line end is), except with look-around or the absolute anchors
    (backslash-A, backslash-Z), which may look past the line: those patterns are searched line by line only.
    """
    if any(token in regex.pattern for token in ("(?=", "(?!", "(?<", "\\A", "\\Z")):
        return None
    return re.compile(regex.pattern, regex.flags | re.MULTILINE)


def _grep(
    regex: re.Pattern[str], quick: re.Pattern[str] | None, file: Path, rel: str
) -> tuple[list[tuple[int, str]], bool]:
    found: list[tuple[int, str]] = []
    try:
        with open(file, "rb") as f:
            if quick and os.fstat(f.fileno()).st_size <= WHOLE_FILE_CHECK_BYTES:
                data = f.read()
                if b"\x00" in data:
                    return [], True
                if not quick.search(data.decode("utf-8", "replace")):
                    return [], False
                f.seek(0)
            for lineno, line in enumerate(iter(lambda: f.readline(MAX_RECORD_BYTES + 1), b""), 1):
                if len(line) > MAX_RECORD_BYTES:
                    raise _line_too_long(rel)
                if b"\x00" in line:
                    return [], True
                text = line.removesuffix(b"\n").decode("utf-8", "replace")
                if len(found) <= MAX_MATCHES and regex.search(text):
                    found.append((lineno, text))
    except OSError:
        return [], False  # unreadable: skipped, as ripgrep does
    return found, False


def _line_too_long(rel: str) -> ToolFailure:
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
