"""The read-only file tools: list_files and read_file (plus the tree walk search_files shares)."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.output import char_boundary, truncate
from sunwell.tools.subject import Subject
from sunwell.tools.workspace.globs import Glob, compile_glob
from sunwell.tools.workspace.jail import Jail

MAX_ENTRIES = 2_000
DEFAULT_LINES = 2_000
BINARY_SNIFF_BYTES = 8_192
INLINE_READ_BYTES = 64 * 1024
"""A file up to this size is read on the event loop's thread: a worker thread's round trip costs more."""
NOTICE_ROOM = 256  # bytes kept free under the cap for read_file's last line
CHUNK = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"


# ---- arguments -------------------------------------------------------------------------------------------------


class ListFilesArguments(ToolArguments):
    path: str = Field(".", description="Folder to list, relative to the workspace root.")
    pattern: str = Field("*", description='Glob such as "*.md" or "**/*.py"; "**" recurses into subfolders.')

    def subject(self) -> Subject:
        return Subject(reads=(self.path,))


class ReadFileArguments(ToolArguments):
    path: str = Field(description="File to read, relative to the workspace root.")
    offset: int | None = Field(None, ge=1, description="First line to read, 1-based. Default 1.")
    limit: int | None = Field(None, ge=1, description="How many lines to read. Default 2000.")

    def subject(self) -> Subject:
        return Subject(reads=(self.path,))


# ---- walking ---------------------------------------------------------------------------------------------------


def walk(jail: Jail, top: Path, max_depth: int | None = None) -> Iterator[tuple[os.DirEntry[str], str]]:
    """Entries under the directory `top` with their workspace-relative paths, in sorted order (each directory just
    before its contents, names compared as strings, which is ripgrep's `--sort path` order).

    Blocked entries are left out and never entered, so node_modules or .git cost nothing; `top` is never a blocked
    folder (it came through the jail), so each entry's own name is all there is to check. Symlinked directories
    are never entered. Unreadable directories are skipped.
    """
    top_rel = jail.relative(top)
    stack = [(_sorted_entries(top), "" if top_rel == "." else top_rel + "/")]
    while stack:
        entries, prefix = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        rel = prefix + entry.name
        if jail.is_blocked_entry(rel, entry.name):
            continue
        yield entry, rel
        if (max_depth is None or len(stack) < max_depth) and _is_real_dir(entry):
            stack.append((_sorted_entries(Path(entry.path)), rel + "/"))


def _sorted_entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return iter(sorted(it, key=lambda e: e.name))
    except OSError:
        return iter(())


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# ---- list_files ------------------------------------------------------------------------------------------------


async def list_files(args: ListFilesArguments, ctx: ToolContext) -> str:
    path = args.path or "."
    pattern = (args.pattern or "*").removeprefix("./")
    top = ctx.jail.resolve(path)
    if not top.is_dir():
        raise ToolFailure(
            "unsupported", f"not a directory: {path}", f'call read_file with path "{path}" to read this file'
        )
    dirs_only = pattern.endswith("/")
    try:
        matcher = compile_glob(pattern.rstrip("/") or "*")
    except ValueError as exc:
        raise ToolFailure("validation", f"parameter 'pattern': {exc}") from None
    max_depth = None if "**" in pattern else pattern.rstrip("/").count("/") + 1
    stop = threading.Event()
    try:
        found = await asyncio.to_thread(_list, ctx.jail, top, matcher, max_depth, dirs_only, stop)
    finally:
        stop.set()  # a cancelled listing stops at the next entry instead of walking on in its thread
    if not found:
        return "(no files match)"
    lines = found[:MAX_ENTRIES]
    if len(found) > MAX_ENTRIES:
        lines.append(
            f"[showing the first {MAX_ENTRIES:,} entries; use a narrower path or pattern to see the rest]"
        )
    return truncate("\n".join(lines), ctx.max_output_bytes, "use a narrower path or pattern")


def _list(
    jail: Jail, top: Path, matcher: Glob, max_depth: int | None, dirs_only: bool, stop: threading.Event
) -> list[str]:
    skip = len(jail.relative(top)) + 1 if top != jail.root else 0
    found: list[str] = []
    for entry, rel in walk(jail, top, max_depth):
        if stop.is_set():
            break
        is_dir = _is_real_dir(entry)
        if entry.is_symlink():
            try:  # shown only if it resolves to something inside the workspace and not blocked
                is_dir = jail.resolve(rel).is_dir()
            except ToolFailure:
                continue
        if (dirs_only and not is_dir) or not matcher.match(rel[skip:]):
            continue
        found.append(rel + "/" if is_dir else rel)
        if len(found) > MAX_ENTRIES:
            break
    return found


# ---- read_file -------------------------------------------------------------------------------------------------


async def read_file(args: ReadFileArguments, ctx: ToolContext) -> str:
    path = args.path
    first = args.offset or 1
    limit = args.limit or DEFAULT_LINES
    real = ctx.jail.resolve(path)
    budget = max(ctx.max_output_bytes - NOTICE_ROOM, 0)
    if _small_file(real):  # the jail's checks above did as much I/O on this thread already
        return _read(real, path, first, limit, budget)
    return await asyncio.to_thread(_read, real, path, first, limit, budget)


def _small_file(real: Path) -> bool:
    try:
        info = os.stat(real)
    except OSError:
        return False  # _read says what is wrong with it
    return stat.S_ISREG(info.st_mode) and info.st_size <= INLINE_READ_BYTES


def _read(real: Path, path: str, first: int, limit: int, budget: int) -> str:
    # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: the checked path may not turn into a symlink meanwhile.
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise ToolFailure(
            "not_found", f"no such file: {path}", "call list_files to see what exists"
        ) from None
    except OSError as exc:
        raise ToolFailure("permission", f"cannot open {path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ToolFailure("unsupported", f"{path} is a directory", f'call list_files with path "{path}"')
        raise ToolFailure("unsupported", f"{path} is not a regular file (device, pipe or socket)")
    with os.fdopen(fd, "rb") as f:
        _refuse_binary(f.read(BINARY_SNIFF_BYTES), path)
        f.seek(0)
        return _read_lines(f, path, first, limit, budget)


def _refuse_binary(head: bytes, path: str) -> None:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ToolFailure("unsupported", f"{path} is UTF-16 text; only UTF-8 files can be read")
    if b"\x00" in head:
        raise ToolFailure("unsupported", f"{path} is a binary file", "only text files can be read")


def _read_lines(f: BinaryIO, path: str, first: int, limit: int, budget: int) -> str:
    if _skip_lines(f, first - 1) < first - 1:
        f.seek(0)
        raise _past_end(first, _count_lines(f))
    shown: list[bytes] = []
    used, cut_size = 0, None
    while len(shown) < limit:
        start = f.tell()
        line = f.readline(budget - used + 1)
        if not line:
            break
        if len(line) <= budget - used:  # readline stopped at a newline or EOF: a whole line that fits
            shown.append(line)
            used += len(line)
            continue
        if shown:  # the next page starts with this line
            f.seek(start)
            break
        # One line larger than the whole cap: show its head and skip the rest of it.
        cut_size = len(line) + (0 if line.endswith(b"\n") else _skip_rest_of_line(f))
        shown.append(line[: char_boundary(line, budget)])
        break
    total = first - 1 + len(shown) + _count_lines(f)
    if total == 0:
        return "(empty file)"
    if first > total:
        raise _past_end(first, total)
    text = _decode(b"".join(shown), path, first)
    last = first + len(shown) - 1
    more = f"call read_file with offset={last + 1} to continue" if last < total else "end of file"
    if cut_size is not None:
        notice = f"[line {last:,} has {cut_size:,} bytes, too long to show whole: showed its start; {more}]"
    elif first > 1 or last < total:
        notice = f"[lines {first}-{last} of {total}; {more}]"
    else:
        return text
    separator = "" if text.endswith("\n") else "\n"
    return f"{text}{separator}{notice}"


def _decode(data: bytes, path: str, first: int) -> str:
    if first == 1:
        data = data.removeprefix(UTF8_BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first + data.count(b"\n", 0, exc.start)
        raise ToolFailure(
            "unsupported",
            f"{path} is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}); only UTF-8 text can be read",
            "it may use another encoding such as Latin-1; search_files can still find text in it",
        ) from None


def _past_end(first: int, total: int) -> ToolFailure:
    return ToolFailure(
        "validation",
        f"offset {first} is past the end of the file, which has {total} line{'s' if total != 1 else ''}",
        f"use an offset between 1 and {max(total, 1)}",
    )


def _skip_lines(f: BinaryIO, n: int) -> int:
    """Move past the next n newlines (fewer at EOF); returns how many were passed. Reads in chunks, not lines, so a
    huge file pages quickly and a huge line costs no memory."""
    passed = 0
    while passed < n:
        start = f.tell()
        chunk = f.read(CHUNK)
        if not chunk:
            break
        count = chunk.count(b"\n")
        if passed + count < n:
            passed += count
            continue
        at = -1
        for _ in range(n - passed):
            at = chunk.index(b"\n", at + 1)
        f.seek(start + at + 1)
        passed = n
    return passed


def _skip_rest_of_line(f: BinaryIO) -> int:
    skipped = 0
    while piece := f.readline(CHUNK):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def _count_lines(f: BinaryIO) -> int:
    """Lines from the current position to EOF (a last line without a newline counts)."""
    count, last = 0, b"\n"
    while chunk := f.read(CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


# ---- definitions -----------------------------------------------------------------------------------------------


LIST_FILES = Tool.of(
    ListFilesArguments, list_files,
    name="list_files",
    description=(
        "List files and folders in the workspace. Use it to find out what exists before reading or searching. "
        '`path` is the folder to list (default ".", the workspace root). `pattern` is a glob matched against '
        'paths inside that folder: "*" (default) lists only its direct entries, "**" goes into subfolders. '
        'Folders end with "/". At most 2,000 entries. Secrets (.env, keys), .git and node_modules are never '
        'shown. Example: {"path": "src", "pattern": "**/*.py"} lists every Python file under src.'
    ),
    min_trust=Trust.discovery,
    harmless=True,
)

READ_FILE = Tool.of(
    ReadFileArguments, read_file,
    name="read_file",
    description=(
        "Read a text file from the workspace. Returns up to 2,000 lines (and about 100 KB) at a time; when the file "
        "is longer, the last line of the result says which lines you got and the `offset` to pass to read the next "
        "page. `offset` is the first line to read (1-based), `limit` the number of lines. Binary files, folders and "
        'blocked files (.env, keys, secrets, .git) cannot be read. Example: {"path": "src/app.py"}, then '
        '{"path": "src/app.py", "offset": 2001} for the next page.'
    ),
    min_trust=Trust.read_only,
    harmless=True,
)
