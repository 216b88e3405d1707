"""Checkpoints of the files a turn changed, and undo.

Layout under the root (`<data dir>/checkpoints/`), one directory per session:

    <session>/meta.json        {"version": 1, "turns": [{"turn", "time", "undone", "files": [
                                    {"rel", "existed", "sha256", "mode", "after", "removed"}]}]}
    <session>/blobs/<sha256>   the prior content of a file, named by its hash (shared by identical contents)
    <session>/.lock            flock'ed by every writer of meta.json (threads, processes)

Turns appear in meta.json in the order of their first change; `time` is the time of their last save. A file's
entry is made once per turn, before its first change (`sha256` and `mode` of the prior content, or `existed`
false); `after` is the sha256 of what the tool last wrote in that turn (null if the write never happened), and
`removed` true when a command of the turn deleted the file (`save_changes`, for a command's staged changes).

Undo treats meta.json as untrusted: every path goes through the jail and the same safe writer as write_file, blob
names must be hashes and the blob must still match its hash, and a restored mode keeps only the permission bits.
All checks run before the first change, so a refused undo changes nothing. Folders a turn created are left in
place (empty). Nothing is pruned yet: a session's checkpoints live as long as its folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sunwell.errors import SunwellError
from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace import open_flags
from sunwell.tools.workspace.file_lock import lock_exclusive
from sunwell.tools.workspace.jail import Jail
from sunwell.tools.workspace.safe_write import (
    WriteTarget,
    prepare_write,
    read_existing,
    remove_target,
    write_target,
)

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


class UndoError(SunwellError):
    """Undo refused or failed; the message says why, for the user."""


class UndoConflict(UndoError):
    """Files changed since the turn wrote them; nothing was undone."""

    def __init__(self, turn: str, files: list[str]) -> None:
        super().__init__(
            f"nothing was undone: {len(files)} file(s) changed since turn {turn} wrote them: {', '.join(files)}. "
            "Undo with --force to overwrite them with their earlier content."
        )
        self.files = files


@dataclass
class UndoResult:
    turn: str | None = None
    """The turn undone; None when there was nothing to undo."""
    restored: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    """Files changed by someone else since the turn, overwritten because of force."""
    unchanged: list[str] = field(default_factory=list)
    """Files already back in their earlier state."""


class Checkpoints:
    def __init__(self, root_dir: Path) -> None:
        self.root = Path(root_dir)

    # ---- recording --------------------------------------------------------------------------------------------

    def save(self, session: str, turn: str, path: Path, rel: str) -> None:
        """Record the state of `path` before its first change in this turn (later calls for it do nothing)."""
        with self._locked(session):
            meta = self._load(session)
            entry = _saved_turn(meta, turn)
            if any(f["rel"] == rel for f in entry["files"]):
                self._store(session, meta)
                return
            blobs = self._dir(session) / "blobs"
            blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
            entry["files"].append({"rel": rel, "after": None, **_copy_prior(path, blobs)})
            self._store(session, meta)

    def save_changes(self, session: str, turn: str, files: list[tuple[Path, str, str | None]]) -> None:
        """Record many files at once before a command's staged changes are applied (tools/sandbox/effects.py): for each,
        (where its prior content is now, rel, sha256 of what will be written or None when it will be deleted).
        One write of meta.json for all of them; a file already recorded in this turn keeps its first state."""
        with self._locked(session):
            meta = self._load(session)
            entry = _saved_turn(meta, turn)
            known = {f["rel"]: f for f in entry["files"]}
            blobs = self._dir(session) / "blobs"
            blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
            for path, rel, after in files:
                f = known.get(rel)
                if f is None:
                    f = known[rel] = {"rel": rel, **_copy_prior(path, blobs)}
                    entry["files"].append(f)
                f["after"], f["removed"] = after, after is None
            self._store(session, meta)

    def record_after(self, session: str, turn: str, rel: str, data: bytes) -> None:
        """Remember the hash of what the tool wrote to `rel`, so undo can tell whether someone changed it since."""
        with self._locked(session):
            meta = self._load(session)
            entry = _find_turn(meta, turn)
            for f in entry["files"] if entry else []:
                if f["rel"] == rel:
                    f["after"], f["removed"] = hashlib.sha256(data).hexdigest(), False
                    self._store(session, meta)
                    break

    def files(self, session: str, turn: str) -> list[str]:
        """The workspace-relative paths the turn changed or was about to change (an entry is made before a write)."""
        entry = _find_turn(self._load(session), turn)
        return [f["rel"] for f in entry["files"] if isinstance(f, dict) and isinstance(f.get("rel"), str)] \
            if entry else []

    def turns(self, session: str) -> list[str]:
        """Every turn of the session that changed files, oldest first (undone ones included)."""
        return [t["turn"] for t in self._load(session)["turns"]]

    def pending(self, session: str) -> list[str]:
        """The turns that can still be undone, oldest first."""
        return [t["turn"] for t in self._load(session)["turns"] if not t["undone"]]

    # ---- undo -------------------------------------------------------------------------------------------------

    def undo(
        self, session: str, workspace: Path, jail: Jail | None = None, *, turn: str | None = None, force: bool = False
    ) -> UndoResult:
        """Put back the files `turn` (default: the last one not yet undone) changed; see the module docstring."""
        jail = jail or Jail(workspace)
        if jail.root != Path(os.path.realpath(workspace)):
            raise ValueError(f"the jail's root {jail.root} is not the workspace {workspace}")
        if not (self._dir(session) / "meta.json").exists():
            return UndoResult()
        with self._locked(session):
            meta = self._load(session)
            pending = [t for t in meta["turns"] if not t["undone"]]
            if turn is None:
                if not pending:
                    return UndoResult()
                entry = pending[-1]
            else:
                entry = _find_turn(meta, turn)
                if entry is None:
                    raise UndoError(f"session {session} has no checkpoint for turn {turn}")
                if entry["undone"]:
                    raise UndoError(f"turn {turn} was already undone")
            result = UndoResult(turn=entry["turn"])
            plan = [self._plan(session, jail, f, result) for f in entry["files"]]
            if result.conflicts and not force:
                raise UndoConflict(entry["turn"], result.conflicts)
            for target, prior, mode in (step for step in plan if step is not None):
                try:
                    if prior is None:
                        remove_target(target)
                        result.deleted.append(target.rel)
                    else:
                        write_target(target, prior, mode=mode)
                        result.restored.append(target.rel)
                except ToolFailure as failure:
                    done = ", ".join(result.restored + result.deleted) or "none"
                    raise UndoError(f"undo stopped at {target.rel}: {failure.error.message} (already put back: "
                                    f"{done}; run undo again to finish)") from None
            entry["undone"] = True
            self._store(session, meta)
            return result

    def _plan(
        self, session: str, jail: Jail, f: dict[str, Any], result: UndoResult
    ) -> tuple[WriteTarget, bytes | None, int | None] | None:
        """What to do for one file: (target, prior bytes or None to delete, mode), or None if it is already back."""
        rel, existed, prior_sha, after = _check_file_entry(f)
        try:
            target = prepare_write(jail, rel)
            current = read_existing(target)
        except ToolFailure as failure:
            raise UndoError(f"refusing to undo {rel!r}: {failure.error.message}; nothing was undone") from None
        current_sha = None if current is None else hashlib.sha256(current).hexdigest()
        if current_sha == prior_sha and (not existed or _mode(target.path) == f["mode"] & 0o777):
            result.unchanged.append(rel)
            return None
        expected = None if f.get("removed") is True else after if after is not None else prior_sha
        if current_sha != expected:
            result.conflicts.append(rel)
        if not existed:
            return target, None, None
        prior = self._blob(session, prior_sha, rel)
        return target, prior, f["mode"] & 0o777  # never setuid/setgid

    def _blob(self, session: str, sha: str, rel: str) -> bytes:
        try:
            fd = os.open(self._dir(session) / "blobs" / sha, os.O_RDONLY | open_flags.NOFOLLOW | open_flags.CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise UndoError(f"the saved copy of {rel} is missing ({exc.strerror}); nothing was undone") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise UndoError(f"the saved copy of {rel} is damaged (hash mismatch); nothing was undone")
        return data

    # ---- storage ----------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, session: str) -> Iterator[None]:
        """One writer per session across threads, Checkpoints objects and processes (the CLI's undo while the
        sidecar writes): an flock on `<session>/.lock`. Readers need none; meta.json is replaced atomically."""
        folder = self._dir(session)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(folder / ".lock", "a") as lock:
            lock_exclusive(lock)
            yield

    def _dir(self, session: str) -> Path:
        if not _ID.fullmatch(session) or session in (".", ".."):
            raise ValueError(f"not a valid session id: {session!r}")
        return self.root / session

    def _load(self, session: str) -> dict[str, Any]:
        meta_file = self._dir(session) / "meta.json"
        try:
            meta = json.loads(meta_file.read_text("utf-8"))
        except FileNotFoundError:
            return {"version": 1, "turns": []}
        except (OSError, ValueError) as exc:
            raise UndoError(f"the checkpoints of session {session} cannot be read: {exc}") from None
        turns = meta.get("turns") if isinstance(meta, dict) else None
        if not isinstance(turns, list) or not all(
            isinstance(t, dict) and isinstance(t.get("turn"), str) and isinstance(t.get("undone"), bool)
            and isinstance(t.get("files"), list) for t in turns
        ):
            raise UndoError(f"the checkpoints of session {session} are damaged ({meta_file})")
        return meta

    def _store(self, session: str, meta: dict[str, Any]) -> None:
        atomic_write(self._dir(session) / "meta.json", json.dumps(meta, indent=1).encode("utf-8"))


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode) & 0o777
    except OSError:
        return None


def _saved_turn(meta: dict[str, Any], turn: str) -> dict[str, Any]:
    """The entry of `turn` (made if it is the turn's first change), its time set to now."""
    entry = _find_turn(meta, turn)
    if entry is None:
        entry = {"turn": turn, "time": 0.0, "undone": False, "files": []}
        meta["turns"].append(entry)
    entry["time"] = time.time()
    return entry


def _find_turn(meta: dict[str, Any], turn: str) -> dict[str, Any] | None:
    return next((entry for entry in meta["turns"] if entry["turn"] == turn), None)


def _check_file_entry(f: Any) -> tuple[str, bool, str | None, str | None]:
    """A file entry of meta.json, checked: it may have been edited by hand or by something hostile."""
    f = f if isinstance(f, dict) else {}
    rel, existed, sha, after, mode = (f.get(k) for k in ("rel", "existed", "sha256", "after", "mode"))

    def is_hash(value: Any) -> bool:
        return isinstance(value, str) and _SHA.fullmatch(value) is not None

    valid = (
        isinstance(rel, str)
        and rel != ""
        and not rel.startswith("/")
        and ".." not in rel.split("/")
        and isinstance(existed, bool)
        and (after is None or is_hash(after))
        and ((is_hash(sha) and type(mode) is int) if existed else sha is None)
    )
    if not valid:
        raise UndoError(f"refusing to undo: the checkpoint entry for {rel!r} is invalid; nothing was undone")
    return rel, existed, sha, after


def _copy_prior(path: Path, blobs: Path) -> dict[str, Any]:
    """Copy the file at `path` into `blobs` (never through a symlink); its sha256 and mode, or existed: false."""
    try:
        fd = os.open(path, open_flags.READ_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return {"existed": False, "sha256": None, "mode": None}
    except OSError as exc:
        raise ToolFailure("permission", f"cannot checkpoint {path.name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolFailure("unsupported", f"cannot checkpoint {path.name}: not a regular file")
        tmp = blobs / f".{secrets.token_hex(6)}.tmp"
        digest = hashlib.sha256()
        try:
            with open(tmp, "xb") as out:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, blobs / digest.hexdigest())
        finally:
            tmp.unlink(missing_ok=True)
    return {"existed": True, "sha256": digest.hexdigest(), "mode": stat.S_IMODE(st.st_mode)}


def atomic_write(path: Path, data: bytes) -> None:
    """`data` in `path` whole or not at all, synced before the rename (a file of Sunwell's own, never a workspace's:
    those go through safe_write)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
