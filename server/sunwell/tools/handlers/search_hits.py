"""The hits of one search_files call, whichever engine finds them (ripgrep in tools/handlers/search.py, or the Python
engine in the child process of tools/handlers/pygrep.py): the first MAX_MATCHES in path order, bounded in memory,
each file checked against the glob and the jail once."""

from __future__ import annotations

import bisect
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace.globs import compile_glob
from sunwell.tools.workspace.jail import Jail

MAX_MATCHES = 500
MAX_RECORD_BYTES = 64 << 20  # one line of a file (or of ripgrep's JSON about it)
WHOLE_FILE_CHECK_BYTES = 8 << 20
SHORT_PATH_CHARS = 1_000  # well under the jail's limits on a path's length, so only longer ones need them


@dataclass(frozen=True)
class Hit:
    rel: str
    lineno: int
    text: str


class Hits:
    """The first hits in path order, from files found in any order.

    A file's hits count once the file is done, if it passes the glob and, again, the jail (so a hit never shows a
    blocked or escaping file, whichever engine found it; checked once per file). Only the files that hold the first
    MAX_MATCHES + 1 hits in path order are kept, at most MAX_MATCHES + 1 hits of each, so memory stays bounded
    whatever the pattern.
    """

    def __init__(self, jail: Jail, glob_ok: Callable[[str], bool]) -> None:
        self.jail = jail
        self.glob_ok = glob_ok
        self._files: list[tuple[list[str], str, list[tuple[int, str]]]] = []  # (sort key, rel, hits), sorted
        self._count = 0
        self._real_folders: dict[str, str | None] = {}

    def wants(self, rel: str) -> bool:
        """Whether hits of `rel` could still be shown: it passes the glob and the jail, and it is not behind all of
        the files already kept once they hold enough hits."""
        if self.full and _path_key(rel) > self._files[-1][0]:
            return False
        return self.glob_ok(rel) and self._in_jail(rel)

    def add_file(self, rel: str, hits: list[tuple[int, str]], binary: bool, *, checked: bool = False) -> None:
        """Count a finished file's hits; `checked` when `wants(rel)` said yes at its start."""
        if not hits or binary or not (checked or self.wants(rel)):
            return
        key = _path_key(rel)
        if self.full and key > self._files[-1][0]:
            return
        kept = hits[: MAX_MATCHES + 1]
        bisect.insort(self._files, (key, rel, kept), key=_first)
        self._count += len(kept)
        while self._count - len(self._files[-1][2]) > MAX_MATCHES:  # the last file is not needed to fill it
            self._count -= len(self._files.pop()[2])

    def clear(self) -> None:
        self._files, self._count = [], 0

    def _in_jail(self, rel: str) -> bool:
        """`jail.resolve(rel)` succeeds, worked out with each folder resolved once: a file that is not a symlink is
        its folder's real path plus its name, so its own checks are one lstat and the blocked patterns."""
        folder, _, name = rel.rpartition("/")
        if folder not in self._real_folders:
            self._real_folders[folder] = self._resolved(folder or ".")
        real_folder = self._real_folders[folder]
        if real_folder is None or len(rel) > SHORT_PATH_CHARS:  # a long path: the jail's own length checks
            return real_folder is not None and self._resolved(rel) is not None
        try:
            mode = os.lstat(self.jail.root / rel).st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return self._resolved(rel) is not None
        real = name if real_folder == "." else f"{real_folder}/{name}"
        return not (self.jail.is_blocked(rel) or self.jail.is_blocked(real))

    def _resolved(self, rel: str) -> str | None:
        """The real path of `rel` relative to the root, or None where the jail refuses it."""
        try:
            return self.jail.relative(self.jail.resolve(rel))
        except ToolFailure:
            return None

    @property
    def full(self) -> bool:
        """More hits are kept than will be shown (so a later file in path order adds nothing)."""
        return self._count > MAX_MATCHES

    @property
    def items(self) -> list[Hit]:
        return [Hit(rel, n, text) for _, rel, hits in self._files for n, text in hits]


def _path_key(rel: str) -> list[str]:
    """Path order: by name, folder by folder (a folder's files come right after the folder, as in a sorted walk)."""
    return rel.split("/")


def _first(item: tuple[list[str], str, list[tuple[int, str]]]) -> list[str]:
    return item[0]


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


def line_too_long(rel: str) -> ToolFailure:
    return ToolFailure(
        "execution",
        f"search stopped at a line longer than {MAX_RECORD_BYTES >> 20} MB in {rel or 'a file'}",
        f"exclude that file with a glob such as '!{rel.rsplit('/', 1)[-1] or '*.min.js'}'",
    )
