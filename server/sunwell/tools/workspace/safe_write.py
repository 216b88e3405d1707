"""The one safe writer: write_file and edit_file, undo (checkpoints) and `::save` all write with it.

A write has two phases. `prepare_write` checks the path as the model gave it (the jail: escapes, blocked patterns;
and no symlink as the last component). `write_target` then walks from the workspace root to the real parent one
directory at a time with O_NOFOLLOW, so a directory swapped for a symlink after the check stops the write instead of
redirecting it, writes a temp file in that directory (O_EXCL), fsyncs it, checks once more where the directory really
is (/proc/self/fd) and renames the temp file over the target relative to the directory's fd. A file with other hard
links is refused, not replaced: the replace would detach it from its twin outside, which the user would not expect.
The temp file's name holds the writer's process id: one a killed writer left is removed later (`remove_orphans`).

By directory descriptor where the OS has them for os.open (dir_fd: Linux, macOS); /proc/self/fd is used where it
exists (Linux). Windows has no dir_fd: there each parent is checked by path (no link, no junction: a reparse
point) just before the write, and where the folder really is, once more before the rename; a swap between the
check and the rename is not caught there, which is narrower than but not the same as the walk above.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace.jail import Jail

_NOFOLLOW, _CLOEXEC = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | getattr(os, "O_BINARY", 0)
_BY_FD = os.open in os.supports_dir_fd
_REPARSE_POINT = 0x400  # FILE_ATTRIBUTE_REPARSE_POINT: a symbolic link or a junction on Windows
_TEMP = re.compile(r"\.sunwell-(\d+)-[0-9a-f]{12}\.tmp")
"""A temp file of the writer: the id of the process that wrote it, a random part."""


@dataclass(frozen=True)
class WriteTarget:
    """A path that passed the jail: `parts` is its real location under `root`, `rel` the same as a posix path."""

    root: Path
    parts: tuple[str, ...]
    rel: str
    given: str

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)


def prepare_write(jail: Jail, path: str) -> WriteTarget:
    """Phase one: the jail's checks, plus no symlink as the final component (parents may be links inside it)."""
    real = jail.resolve(path, must_exist=False)
    joined = os.path.join(jail.root, path)
    name = os.path.basename(joined)
    if real == jail.root or name in ("", ".", ".."):
        raise ToolFailure("unsupported", f"{path} names a folder, not a file", "give the path of a file")
    if Path(os.path.realpath(os.path.dirname(joined))) / name != real:
        raise ToolFailure("permission", f"{path} is a symbolic link; sunwell does not write through links",
                          f"write to the file it points to, {jail.relative(real)}, instead")
    parts = real.relative_to(jail.root).parts
    return WriteTarget(jail.root, parts, "/".join(parts), path)


def inspect(target: WriteTarget) -> os.stat_result | None:
    """The target's lstat (None if it does not exist), refusing what may not be written over."""
    if not _BY_FD:
        parent = _parent_by_path(target, create=False)
        st = _lstat(parent / target.parts[-1]) if parent is not None else None
        if st is not None:
            _check_existing(st, target)
        return st
    fd = _open_parent(target, create=False)
    if fd is None:
        return None
    try:
        st = _lstat_at(fd, target)
    finally:
        os.close(fd)
    if st is not None:
        _check_existing(st, target)
    return st


def read_existing(target: WriteTarget, limit: int | None = None) -> bytes | None:
    """The target's bytes, or None if it does not exist; `unsupported` if it is larger than `limit`."""
    if not _BY_FD:
        fd = _open_by_path(target)
        if fd is None:
            return None
    else:
        parent = _open_parent(target, create=False)
        if parent is None:
            return None
        try:
            fd = os.open(target.parts[-1], _READ_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _os_failure(exc, target) from None
        finally:
            os.close(parent)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        _check_existing(st, target)
        if limit is not None and st.st_size > limit:
            raise ToolFailure("unsupported", f"{target.given} is too large ({st.st_size:,} bytes; the limit is "
                              f"{limit:,})", "use write_file to replace it whole")
        return f.read()


def write_target(target: WriteTarget, data: bytes, *, mode: int | None = None) -> bool:
    """Phase two: write `data` atomically; True if the file was created. `mode` defaults to the existing file's
    (a new file gets 0o644 less the umask)."""
    if not _BY_FD:
        return _write_by_path(target, data, mode)
    fd = _open_parent(target, create=True)
    assert fd is not None
    name, tmp = target.parts[-1], _temp_name()
    try:
        st = _lstat_at(fd, target)
        if st is not None:
            _check_existing(st, target)
            mode = stat.S_IMODE(st.st_mode) if mode is None else mode
        out = os.open(tmp, _CREATE_FLAGS, 0o600 if mode is not None else 0o644, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as f:
                f.write(data)
                f.flush()
                if mode is not None:
                    os.fchmod(out, mode)
                os.fsync(out)
            _check_still_inside(fd, target)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        os.fsync(fd)
        return st is None
    except OSError as exc:
        raise _os_failure(exc, target) from None
    finally:
        os.close(fd)


def remove_target(target: WriteTarget) -> bool:
    """Delete the target file (never what a symlink points to); False if it was not there."""
    if not _BY_FD:
        st = inspect(target)
        if st is not None:
            _check_path_inside(_parent_by_path(target, create=False), target)
            os.unlink(target.path)
        return st is not None
    fd = _open_parent(target, create=False)
    if fd is None:
        return False
    try:
        st = _lstat_at(fd, target)
        if st is None:
            return False
        _check_existing(st, target)
        _check_still_inside(fd, target)
        os.unlink(target.parts[-1], dir_fd=fd)
        return True
    except OSError as exc:
        raise _os_failure(exc, target) from None
    finally:
        os.close(fd)


def remove_orphans(root: Path, folders: Iterable[str]) -> list[str]:
    """Remove the temp files a writer that died left in `folders` (workspace-relative): a process killed between
    its temp file and the rename leaves one (never the target half written). Only those of processes that no longer
    run; nothing on Windows, where a process cannot be probed without risk. The removed files' relative paths."""
    if os.name == "nt":
        return []
    removed = []
    for folder in sorted(set(folders)):
        parts = tuple(p for p in folder.split("/") if p and p != ".")
        if ".." in parts or "\\" in folder:  # the folders come from checkpoints, read as untrusted
            continue
        probe = WriteTarget(root, (*parts, "_"), "/".join((*parts, "_")), folder)
        try:
            fd = _open_parent(probe, create=False)
        except (OSError, ToolFailure):
            continue
        if fd is None:
            continue
        try:
            for name in os.listdir(fd):
                if (found := _TEMP.fullmatch(name)) and not _running(int(found[1])):
                    with contextlib.suppress(OSError):
                        if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                            os.unlink(name, dir_fd=fd)
                            removed.append("/".join((*parts, name)))
        finally:
            os.close(fd)
    return removed


def _temp_name() -> str:
    return f".sunwell-{os.getpid()}-{secrets.token_hex(6)}.tmp"


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def dir_is_inside(fd: int, root: Path) -> bool:
    """Whether the directory open as `fd` is (still) under `root`; True when the OS cannot say (the O_NOFOLLOW
    walk is then the only defence)."""
    try:
        where = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return True
    return where == root or where.is_relative_to(root)


def _open_parent(target: WriteTarget, *, create: bool) -> int | None:
    """The real parent directory, opened one component at a time from the root without following links."""
    fd = os.open(target.root, _DIR_FLAGS)
    try:
        for i, part in enumerate(target.parts[:-1]):
            try:
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        os.close(fd)
                        return None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                where = "/".join(target.parts[: i + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link_at(fd, part):  # Linux says ENOTDIR
                    raise ToolFailure("permission", f"{where} became a symbolic link while writing "
                                      f"{target.given}; nothing was written") from None
                if exc.errno == errno.ENOTDIR:
                    raise ToolFailure("unsupported", f"{where} is a file, not a folder") from None
                raise _os_failure(exc, target) from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _parent_by_path(target: WriteTarget, *, create: bool) -> Path | None:
    """The parent folder, each component checked to be a real folder (no link, no junction); None if missing."""
    path = target.root
    for i, part in enumerate(target.parts[:-1]):
        path, where = path / part, "/".join(target.parts[: i + 1])
        st = _lstat(path)
        if st is None:
            if not create:
                return None
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)
            st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or getattr(st, "st_file_attributes", 0) & _REPARSE_POINT:
            raise ToolFailure("permission", f"{where} became a symbolic link while writing {target.given}; "
                              "nothing was written")
        if not stat.S_ISDIR(st.st_mode):
            raise ToolFailure("unsupported", f"{where} is a file, not a folder")
    return path


def _check_path_inside(parent: Path | None, target: WriteTarget) -> None:
    real = Path(os.path.realpath(parent)) if parent is not None else None
    if real is None or not (real == target.root or real.is_relative_to(target.root)):
        raise ToolFailure("permission", f"the folder of {target.given} moved out of the workspace while writing; "
                          "nothing was written")


def _open_by_path(target: WriteTarget) -> int | None:
    parent = _parent_by_path(target, create=False)
    if parent is None or (st := _lstat(parent / target.parts[-1])) is None:
        return None
    _check_existing(st, target)
    try:
        return os.open(parent / target.parts[-1], _READ_FLAGS | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_failure(exc, target) from None


def _write_by_path(target: WriteTarget, data: bytes, mode: int | None) -> bool:
    try:
        parent = _parent_by_path(target, create=True)
        assert parent is not None
        st = _lstat(parent / target.parts[-1])
        if st is not None:
            _check_existing(st, target)
            mode = stat.S_IMODE(st.st_mode) if mode is None else mode
        tmp = parent / _temp_name()
        out = os.open(tmp, _CREATE_FLAGS, 0o600 if mode is not None else 0o644)
        try:
            with os.fdopen(out, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(out)
            if mode is not None:
                os.chmod(tmp, mode)
            _check_path_inside(parent, target)
            os.replace(tmp, parent / target.parts[-1])
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return st is None
    except OSError as exc:
        raise _os_failure(exc, target) from None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _is_link_at(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _lstat_at(fd: int, target: WriteTarget) -> os.stat_result | None:
    try:
        return os.stat(target.parts[-1], dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_existing(st: os.stat_result, target: WriteTarget) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise ToolFailure("permission", f"{target.given} is a symbolic link; sunwell does not write through links")
    if stat.S_ISDIR(st.st_mode):
        raise ToolFailure("unsupported", f"{target.given} is a directory, not a file", "give the path of a file")
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailure("unsupported", f"{target.given} is not a regular file (device, pipe or socket)")
    if st.st_nlink > 1:
        raise ToolFailure("permission", f"{target.given} has other hard links; writing it could change a file "
                          "outside the workspace, so sunwell refuses", "write a new file instead")


def _check_still_inside(fd: int, target: WriteTarget) -> None:
    if not dir_is_inside(fd, target.root):
        raise ToolFailure("permission", f"the folder of {target.given} moved out of the workspace while writing; "
                          "nothing was written")


def _os_failure(exc: OSError, target: WriteTarget) -> ToolFailure:
    if exc.errno == errno.ELOOP:
        return ToolFailure("permission", f"{target.given} is a symbolic link; sunwell does not write through links")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ToolFailure("permission", f"permission denied by the operating system: {target.given}")
    if exc.errno == errno.EISDIR:
        return ToolFailure("unsupported", f"{target.given} is a directory, not a file")
    return ToolFailure("execution", f"could not write {target.given}: {exc.strerror or exc}")
