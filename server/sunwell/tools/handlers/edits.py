"""write_file and edit_file, written with the safe writer (`safe_write.py`).

Undo's hooks the engine may set (ToolContext.undo: plain callables, run in the tool's worker thread, never
concurrently with each other):
- `before_write(path: Path, rel: str) -> None`: called once the call is known to be valid and before anything changes
  (parent folders included); it records the prior state. A ToolFailure it raises (say `rate_limit`) is the call's
  result and nothing is written; any other exception becomes `execution`, and nothing is written either.
- `after_write(path: Path, rel: str, data: bytes) -> None`: called after a successful write with the bytes written
  (byte accounting, the checkpoint's after-hash). The file is already written, so what it raises is logged and
  dropped: a failed result would make the model retry a write that happened. Refuse writes in `before_write`.
`path` is the real absolute path (symlinked parents resolved), `rel` the same relative to the workspace root.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.subject import CONTENT, Subject, Write
from sunwell.tools.workspace.remote_schema import remote_schema
from sunwell.tools.workspace.safe_write import (
    WriteTarget,
    inspect,
    prepare_write,
    read_existing,
    write_target,
)

MAX_CONTENT_BYTES = 5 * 1024 * 1024
MAX_WINDOWS = 20_000  # closest-lines search: past this many lines, only windows sharing a line with old_text
MIN_SIMILARITY = 0.4  # below this the closest lines are noise that would mislead the model
DIFF_LINES = 40
log = logging.getLogger(__name__)


def commit(ctx: ToolContext, target: WriteTarget, data: bytes) -> bool:
    """Checkpoint hook, write, after-write hook (see the module docstring); True if the file was created."""
    inspect(target)  # refuse before a checkpoint is taken
    checkpoint = ctx.undo.before_write
    if checkpoint is not None:
        try:
            checkpoint(target.path, target.rel)
        except ToolFailure:
            raise
        except Exception as exc:
            raise ToolFailure("execution", f"could not save a checkpoint of {target.rel} ({exc}); nothing was "
                              "written") from exc
    created = write_target(target, data)
    after_write = ctx.undo.after_write
    if after_write is not None:
        try:
            after_write(target.path, target.rel, data)
        except Exception:
            log.exception("after_write hook failed for %s (the file was written)", target.rel)
    return created


# ---- arguments -------------------------------------------------------------------------------------------------


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "replace")  # a lone surrogate counts as one byte: the handler refuses it anyway


class WriteFileArguments(ToolArguments):
    path: str = Field(description="File to write, relative to the workspace root.")
    content: Annotated[str, CONTENT] = Field(description="The complete new content of the file.")

    def subject(self) -> Subject:
        return Subject(writes=(Write(self.path, _bytes(self.content)),))


class EditFileArguments(ToolArguments):
    path: str = Field(description="File to edit, relative to the workspace root.")
    old_text: Annotated[str, CONTENT] = Field(description="Exact text to find in the file (not empty).")
    new_text: Annotated[str, CONTENT] = Field(description="Text to put in its place (may be empty to delete).")
    replace_all: bool = Field(False, description="Replace every match instead of requiring exactly one. Default false.")

    def subject(self) -> Subject:
        return Subject(writes=(Write(self.path, _bytes(self.new_text)),))


# ---- write_file ------------------------------------------------------------------------------------------------


def _encode(text: str, name: str) -> bytes:
    try:
        data = text.encode("utf-8")
    except UnicodeError:
        raise ToolFailure("validation", f"parameter {name!r} is not valid text (unpaired surrogate)") from None
    if len(data) > MAX_CONTENT_BYTES:
        raise ToolFailure("validation", f"{name} is {len(data):,} bytes; the limit is {MAX_CONTENT_BYTES:,}",
                          "split it into several smaller files")
    return data


async def write_file(args: WriteFileArguments, ctx: ToolContext) -> str:
    data = _encode(args.content, "content")
    target = prepare_write(ctx.jail, args.path)
    if await asyncio.to_thread(_holds, target, data):  # nothing would change: nothing to write, ask or undo
        return f"unchanged: {target.rel} already has exactly this content ({len(data)} bytes); nothing was written"
    created = await asyncio.to_thread(commit, ctx, target, data)
    return f"wrote {len(data)} bytes to {target.rel} ({'created' if created else 'replaced'})"


def _holds(target: WriteTarget, data: bytes) -> bool:
    st = inspect(target)
    return st is not None and st.st_size == len(data) and read_existing(target) == data


def preview_write(args: WriteFileArguments, ctx: ToolContext) -> dict[str, Any]:
    content = args.content
    _encode(content, "content")
    target = prepare_write(ctx.jail, args.path)
    st = inspect(target)
    if st is None:
        before = None
    elif st.st_size > MAX_CONTENT_BYTES:
        before = f"[the current file, {st.st_size:,} bytes, is too large to show]"
    else:
        data = read_existing(target) or b""
        before = f"[binary file, {len(data):,} bytes]" if b"\0" in data else data.decode("utf-8", "replace")
    return _diff(target.rel, before, content)


# ---- edit_file -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Edit:
    target: WriteTarget
    before: str
    after: str
    count: int


def _plan_edit(args: EditFileArguments, ctx: ToolContext) -> _Edit:
    """Everything edit_file decides before writing; the preview and the handler share it (and its failures)."""
    path, old, new, replace_all = args.path, args.old_text, args.new_text, args.replace_all
    if not old:
        raise ToolFailure("validation", "parameter 'old_text' is empty; it must be text copied from the file",
                          "to create or overwrite a whole file, use write_file")
    if old == new:
        raise ToolFailure("validation", "old_text and new_text are the same; nothing would change")
    target = prepare_write(ctx.jail, path)
    data = read_existing(target, MAX_CONTENT_BYTES)
    if data is None:
        raise ToolFailure("not_found", f"no such file: {path}", "use write_file to create a new file")
    text = _decode(data, path)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r" not in old + new:  # the model dropped the file's CRLF endings
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise _no_match(text, old, path)
    if count > 1 and not replace_all:
        raise ToolFailure(
            "validation",
            f"old_text matches {count} places in {path} (lines {_match_lines(text, old)}); it must match exactly one",
            "add surrounding lines to old_text so it matches one place only, or set replace_all to true to change "
            "every match",
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    _encode(after, "the edited file")
    return _Edit(target, text, after, count)


def _decode(data: bytes, path: str) -> str:
    if b"\0" in data[:8192]:
        raise ToolFailure("unsupported", f"{path} is a binary file; only text files can be edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure("unsupported", f"{path} is not valid UTF-8 text", "use write_file to replace it whole")


def _match_lines(text: str, old: str, most: int = 20) -> str:
    lines, at = [], text.find(old)
    while at >= 0 and len(lines) < most:
        lines.append(text.count("\n", 0, at) + 1)
        at = text.find(old, at + len(old))
    return ", ".join(map(str, lines)) + (", ..." if at >= 0 else "")


def _no_match(text: str, old: str, path: str) -> ToolFailure:
    hint = "copy old_text exactly from the file (read_file shows it), with the same indentation and line breaks"
    lines = text.splitlines()
    found = _closest(lines, old.splitlines() or [old])
    if found is None:
        where = " The file is empty." if not lines else " No similar lines were found."
        return ToolFailure("validation", f"old_text was not found in {path}.{where}", hint)
    start, size, score = found
    shown = "\n".join(f"{n:>6} | {lines[n - 1]}" for n in range(start + 1, start + size + 1))
    how = "differs only in whitespace" if score == 1.0 else f"{score:.0%} similar"
    return ToolFailure("validation", f"old_text was not found in {path}. The closest text is at lines "
                       f"{start + 1}-{start + size} ({how}):\n{shown}", hint)


def _closest(lines: list[str], old_lines: list[str]) -> tuple[int, int, float] | None:
    """The window of len(old_lines) lines most like old_text, compared with each line stripped:
    (start index, size, similarity 0..1)."""
    if not lines:
        return None
    size = min(len(old_lines), len(lines))
    stripped = [line.strip() for line in lines]
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(line.strip() for line in old_lines))
    starts: Any = range(len(lines) - size + 1)
    if len(starts) > MAX_WINDOWS:  # a huge file: only windows that share a whole line with old_text
        wanted = {line.strip() for line in old_lines} - {""}
        hits = [i for i, line in enumerate(stripped) if line in wanted][:MAX_WINDOWS]
        starts = sorted({min(max(h - j, 0), len(lines) - size) for h in hits for j in range(size)})
    best, best_score = None, 0.0
    for i in starts:
        matcher.set_seq1("\n".join(stripped[i : i + size]))
        if matcher.real_quick_ratio() > best_score and matcher.quick_ratio() > best_score:
            score = matcher.ratio()
            if score > best_score:
                best, best_score = i, score
    return None if best is None or best_score < MIN_SIMILARITY else (best, size, best_score)


def _diff_excerpt(before: str, after: str, rel: str) -> str:
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), rel, rel, n=1, lineterm=""))[2:]
    if len(diff) > DIFF_LINES:
        more = len(diff) - DIFF_LINES
        diff = [*diff[:DIFF_LINES], f"[diff shortened: {more} more lines; read_file shows the result]"]
    return "\n".join(diff)


def _apply_edit(ctx: ToolContext, edit: _Edit) -> str:
    commit(ctx, edit.target, edit.after.encode("utf-8"))
    n = edit.count
    head = f"replaced {n} occurrence{'s' if n != 1 else ''} in {edit.target.rel}"
    return f"{head}\n{_diff_excerpt(edit.before, edit.after, edit.target.rel)}"


async def edit_file(args: EditFileArguments, ctx: ToolContext) -> str:
    edit = await asyncio.to_thread(_plan_edit, args, ctx)
    return await asyncio.to_thread(_apply_edit, ctx, edit)


def preview_edit(args: EditFileArguments, ctx: ToolContext) -> dict[str, Any]:
    edit = _plan_edit(args, ctx)
    return _diff(edit.target.rel, edit.before, edit.after)


def _diff(rel: str, before: str | None, after: str) -> dict[str, Any]:
    return {"kind": "diff", "path": rel, "before": before, "after": after, "remoteSchema": remote_schema(rel, after)}


# ---- definitions -----------------------------------------------------------------------------------------------


WRITE_FILE = Tool.of(
    WriteFileArguments, write_file,
    name="write_file",
    description=(
        "Create a file, or replace a file's whole content, in the workspace. Missing folders are created. To change "
        "part of an existing file, use edit_file instead: it is safer and shorter. `content` is the complete new "
        "text of the file. Blocked files (.env, keys, secrets, .git) and symbolic links cannot be written. "
        'Example: {"path": "src/hello.py", "content": "print(\'hello\')\\n"}.'
    ),
    min_trust=Trust.workspace,
    approval="ask",
    risk="write",
    read_only=False,
    preview=preview_write,
)

EDIT_FILE = Tool.of(
    EditFileArguments, edit_file,
    name="edit_file",
    description=(
        "Change part of an existing file: replaces `old_text` with `new_text`. `old_text` must be copied exactly "
        "from the file (same spaces, indentation and line breaks) and must match exactly one place; include a few "
        "surrounding lines to make it unique, or set `replace_all` to true to change every match. If it does not "
        "match, the error shows the closest lines so you can correct it. Read the file first. Example: "
        '{"path": "src/app.py", "old_text": "    return 42", "new_text": "    return 43"}.'
    ),
    min_trust=Trust.workspace,
    approval="ask",
    risk="write",
    read_only=False,
    preview=preview_edit,
)
