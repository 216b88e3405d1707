"""Copy a staged dependency folder (node_modules) into the workspace, never following or making a link.

Both sides are walked by file descriptor, each folder opened with O_NOFOLLOW relative to its parent's descriptor:
a staged folder that is a link is not entered (`ln -s / node_modules` would copy the host's filesystem), and a
workspace folder or file that is a link is not written through. Only folders and regular files are copied; links,
FIFOs, sockets and devices are left out, as are the entries the caller names in `skipped` (tools/sandbox/effects.py judges
them). Deletions (overlayfs whiteouts) are not copied: a dependency folder is copied over what is there.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Collection
from pathlib import Path

from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace import open_flags
from sunwell.tools.workspace.jail import Jail

_DIR = os.O_RDONLY | open_flags.DIRECTORY | open_flags.NOFOLLOW | open_flags.CLOEXEC
_READ = open_flags.READ_NOFOLLOW
_WRITE = os.O_WRONLY | os.O_CREAT | open_flags.NOFOLLOW | open_flags.NONBLOCK | open_flags.CLOEXEC


def copy_tree(jail: Jail, folder: str, staged: Path, skipped: Collection[str] = ()) -> list[str]:
    """Copy `staged` to the workspace's `folder`; returns what could not be copied, each with why."""
    parent_rel, _, name = folder.rpartition("/")
    failed: list[str] = []
    try:
        parent = jail.resolve(parent_rel or ".", must_exist=False)
        parent.mkdir(parents=True, exist_ok=True)
        source = os.open(staged, _DIR)
    except (OSError, ToolFailure) as exc:
        return [f"{folder}/ ({_why(exc)})"]
    try:
        top = os.open(parent, _DIR)
        try:
            target = _enter(top, name)
        finally:
            os.close(top)
        try:
            _copy_into(source, target, folder, set(skipped), failed)
        finally:
            os.close(target)
    except OSError as exc:
        failed.append(f"{folder}/ ({_why(exc)})")
    finally:
        os.close(source)
    return failed


def _copy_into(source: int, target: int, rel: str, skipped: set[str], failed: list[str]) -> None:
    with os.scandir(source) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        sub = f"{rel}/{entry.name}"
        if sub in skipped:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                inner = os.open(entry.name, _DIR, dir_fd=source)
                try:
                    made = _enter(target, entry.name)
                    try:
                        _copy_into(inner, made, sub, skipped, failed)
                    finally:
                        os.close(made)
                finally:
                    os.close(inner)
            elif stat.S_ISREG(st.st_mode):
                _copy_file(source, target, entry.name)
            elif not (stat.S_ISCHR(st.st_mode) and st.st_rdev == 0):  # a whiteout is a deletion: not copied
                failed.append(f"{sub} (not a file or a folder)")
        except OSError as exc:
            failed.append(f"{sub} ({_why(exc)})")


def _enter(parent: int, name: str) -> int:
    """The workspace folder `name` under `parent`, made if missing; OSError if it is a link or not a folder."""
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass
    return os.open(name, _DIR, dir_fd=parent)


def _copy_file(source: int, target: int, name: str) -> None:
    src = os.open(name, _READ, dir_fd=source)
    try:
        mode = os.fstat(src).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(0, "not a regular file")
        dst = os.open(name, _WRITE, 0o600, dir_fd=target)
        try:
            st = os.fstat(dst)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                raise OSError(0, "the workspace has something else there (a FIFO, or a file with other hard links)")
            os.ftruncate(dst, 0)
            with os.fdopen(os.dup(src), "rb") as fin, os.fdopen(os.dup(dst), "wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            os.fchmod(dst, stat.S_IMODE(mode) & 0o777)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _why(exc: Exception) -> str:
    if isinstance(exc, ToolFailure):
        return exc.error.message
    if isinstance(exc, OSError) and exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link or a file in the way
        return "a symbolic link or a file stands there in the workspace; not written through"
    return getattr(exc, "strerror", None) or str(exc)
