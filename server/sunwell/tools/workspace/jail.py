"""The workspace jail: every path a tool touches is resolved and checked here.

A path is taken relative to the workspace root, resolved with symlinks followed, and must stay inside the root's
real path and outside the blocked patterns. The blocked check runs on the path as given AND on the resolved path, so
neither a `..` detour nor a harmless-looking symlink reaches a secret.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import posixpath
import re
from collections.abc import Sequence
from difflib import get_close_matches
from functools import lru_cache
from pathlib import Path

from sunwell.tools.failure import ToolFailure

DEFAULT_BLOCKED: tuple[str, ...] = (
    ".env*", ".git/", "node_modules/", "__pycache__/", "*.pem", "*.key", "secrets/", ".ssh/", ".sunwell/",
    "id_rsa*", "id_ed25519*", "id_ecdsa*", "*.p12", "*.pfx", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
    ".aws/", ".docker/config.json", ".kube/", ".gnupg/", "credentials.json", "*.tfstate",
)  # fmt: skip
PROTECTED: tuple[str, ...] = (
    # VS Code: settings (interpreter and tool paths), tasks, launch configs, dev containers (initializeCommand)
    ".vscode/", "*.code-workspace", ".devcontainer/", "devcontainer.json", ".devcontainer.json",
    # JetBrains IDEs: the project model and run configurations, wherever they are stored; Fleet
    ".idea/", "*.iml", "*.ipr", "*.iws", "*.run.xml", ".fleet/",
    # other editors: tasks and language servers (Zed, Visual Studio, Theia), build systems (Sublime, Eclipse),
    # startup scripts (Vim's exrc, Neovim, Emacs' dir-locals eval)
    ".zed/", ".vs/", ".theia/", "*.sublime-project", ".project", ".externalToolBuilders/",
    ".exrc", ".vimrc", ".gvimrc", ".nvimrc", ".nvim.lua", ".lazy.lua", ".dir-locals.el", ".dir-locals-2.el",
    # coding agents: the MCP servers they start and the hooks they run
    ".claude/", ".mcp.json", ".cursor/", ".gemini/", ".codex/", ".continue/",
    ".envrc",  # direnv, in the user's shell
)  # fmt: skip
"""Configuration an editor or a tool on the host runs programs from, by what it is (README "Security" says why each):
readable, but a write or edit is always asked and a sandboxed command can never change or create it. Patterns as
in Jail's blocked ones, matched against every path component, in any case the filesystem may fold."""

NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096
MAX_SUGGESTION_SCAN = 2000
"""Entries of a folder looked at for a "did you mean" on a missing path."""
RELATIVE_HINT = "use a path relative to the workspace root, e.g. src/app.py"


@lru_cache(maxsize=32)  # a jail is made per turn, mostly with the same patterns: compile them once
def _compile_patterns(blocked: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], ...], ...]]:
    """The patterns (blocked or PROTECTED) without `/` as one regex over a name, and those with one as a regex per
    path component."""
    names: list[str] = []
    anchored: list[tuple[re.Pattern[str], ...]] = []
    for pattern in blocked:
        pattern = pattern.strip().rstrip("/")
        while pattern.startswith("**/"):
            pattern = pattern[3:]
        if not pattern:
            continue
        if "/" in pattern:
            segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
            anchored.append(tuple(re.compile(fnmatch.translate(s), re.IGNORECASE) for s in segments))
        else:
            names.append(fnmatch.translate(pattern))
    return re.compile("|".join(f"(?:{n})" for n in names) or "(?!)", re.IGNORECASE), tuple(anchored)


class Jail:
    """The workspace root plus the blocked patterns (DEFAULT_BLOCKED + `blocked` from config or a lens).

    Pattern semantics, all case-insensitive: `name/` blocks a directory of that name at any depth and everything
    under it; a pattern without `/` is matched (fnmatch) against every path component's name; a pattern with a `/`
    inside (`config/prod.yaml`) is matched component by component from the root. Anything under a blocked path is
    blocked too.
    """

    def __init__(self, root: Path, blocked: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        if not self.root.is_dir():
            raise ValueError(f"workspace root is not a directory: {root}")
        self._given_root = Path(os.path.abspath(root))
        self.blocked: tuple[str, ...] = (*DEFAULT_BLOCKED, *blocked)
        self._names, self._anchored = _compile_patterns(self.blocked)
        self._anchored_depths = frozenset(len(segments) for segments in self._anchored)
        self._protected, _ = _compile_patterns(PROTECTED)

    def is_protected(self, rel: str) -> bool:
        """Whether a workspace-relative posix path is, or is under, configuration the host runs programs from
        (PROTECTED), at any depth: a nested project's `.vscode/` or `sub/x.code-workspace` is opened too."""
        return any(self.is_protected_name(part) for part in rel.split("/"))

    def is_protected_name(self, name: str) -> bool:
        """Whether an entry called `name` is protected wherever it is (`is_protected` of a walk's next entry, its
        folder not being protected). Also the names Windows opens for it: trailing dots and spaces dropped, an NTFS
        stream suffix (`x.code-workspace::$DATA` is the file itself). Case (`ſ` for `s`) is the patterns' IGNORECASE."""
        match = self._protected.match
        if match(name):
            return True
        stripped = name.rstrip(" .")
        stream = name.split(":", 1)[0].rstrip(" .") if ":" in name else stripped
        return bool((stripped != name and match(stripped)) or (stream != stripped and match(stream)))

    def is_blocked(self, rel: str) -> bool:
        """Whether a workspace-relative posix path (or anything above it) matches a blocked pattern."""
        parts = [p for p in rel.split("/") if p not in ("", ".", "..")]
        return any(self.is_blocked_entry("/".join(parts[: i + 1]), part) for i, part in enumerate(parts))

    def is_blocked_entry(self, rel: str, name: str) -> bool:
        """`is_blocked(rel)` for a folder's entry `name` at `rel` when the folder itself is not blocked (a walk's
        next entry): only the entry's own name, and anchored patterns exactly as deep as it, can block it."""
        # Windows ignores trailing dots and spaces, so `.env.` or `.env ` would open `.env` there.
        stripped = name.rstrip(" .")
        if self._names.match(name) or (stripped != name and self._names.match(stripped)):
            return True
        depth = rel.count("/") + 1
        if depth not in self._anchored_depths:
            return False
        parts = rel.split("/")
        return any(len(segments) == depth and all(s.match(p) for s, p in zip(segments, parts))
                   for segments in self._anchored)  # fmt: skip

    def relative(self, p: Path) -> str:
        """`p` (under the root) as a posix path relative to the root; "." for the root itself."""
        return Path(p).relative_to(self.root).as_posix()

    def resolve(self, path: str, *, must_exist: bool = True) -> Path:
        """The real absolute path of `path`, or a ToolFailure saying why the model may not touch it.

        With must_exist=False missing components are allowed (a file about to be written): the existing part is
        resolved and everything is checked the same way.
        """
        self._check_text(path)
        given = Path(path)
        real = Path(os.path.realpath(given if given.is_absolute() else self.root / given))
        # A symlink loop leaves the rest of the path unresolved in realpath's answer: `..` in it, or, once the `..`
        # is folded away (`loop/../link_out`), a symlink still in it that leads out. Resolved again, a real path
        # stays the same; one that does not went through a loop, and is refused.
        looped = Path(os.path.realpath(real)) != real
        if looped or ".." in real.parts or not (real == self.root or real.is_relative_to(self.root)):
            raise ToolFailure("permission", f"path escapes the workspace: {path}", RELATIVE_HINT)
        as_given = self._lexical_relative(given)
        if any(self.is_blocked(rel) for rel in (*as_given, self.relative(real))):
            raise ToolFailure(
                "permission",
                f"path is blocked by policy: {path}",
                "secrets, .env files, .git and dependency folders are off limits; work with other files",
            )
        if must_exist:
            self._check_exists(real, path)
        return real

    def _close_names(self, folder: Path, shown: str, name: str) -> list[str]:
        """Entries of `folder` (shown to the model as `shown`) whose names look like `name`, blocked ones left out."""
        if not (folder == self.root or folder.is_relative_to(self.root)):
            return []
        try:
            with os.scandir(folder) as entries:
                names = [entry.name for _, entry in zip(range(MAX_SUGGESTION_SCAN), entries)]
        except OSError:
            return []
        base = self.relative(folder)
        names = [n for n in names if not self.is_blocked(posixpath.join(base, n))]
        close = get_close_matches(name, names, n=2, cutoff=0.6)
        return [n if shown == "." else posixpath.join(shown, n) for n in close]

    def _check_text(self, path: object) -> None:
        if not isinstance(path, str) or not path.strip():
            raise ToolFailure("validation", "path must be a non-empty string", RELATIVE_HINT)
        if "\x00" in path:
            raise ToolFailure("validation", "path contains a NUL byte", RELATIVE_HINT)
        try:
            encoded = os.fsencode(path)
        except UnicodeError:
            raise ToolFailure(
                "validation", "path is not valid text (unpaired surrogate)", RELATIVE_HINT
            ) from None
        if len(encoded) > PATH_MAX_BYTES or any(len(part) > NAME_MAX_BYTES for part in encoded.split(b"/")):
            raise ToolFailure(
                "validation",
                f"path is too long (at most {NAME_MAX_BYTES} bytes per name, {PATH_MAX_BYTES} in all)",
                RELATIVE_HINT,
            )

    def _lexical_relative(self, given: Path) -> tuple[str, ...]:
        """The path as the model wrote it, relative to the root, raw and normalized (none if outside the root)."""
        for root in (self.root, self._given_root):
            if not given.is_absolute() or given.is_relative_to(root):
                rel = given.relative_to(root).as_posix() if given.is_absolute() else given.as_posix()
                return rel, posixpath.normpath(rel)
        return ()

    def _check_exists(self, real: Path, path: str) -> None:
        try:
            os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            parent = posixpath.dirname(path.rstrip("/")) or "."
            hint = f'call list_files with path "{parent}" to see what exists there'
            if close := self._close_names(real.parent, parent, posixpath.basename(path.rstrip("/"))):
                hint = f"did you mean {' or '.join(json.dumps(name) for name in close)}? Else {hint}"
            raise ToolFailure("not_found", f"no such file or directory: {path}", hint) from None
        except PermissionError:
            raise ToolFailure("permission", f"permission denied by the operating system: {path}") from None
        except OSError as exc:
            code = (
                "validation" if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL) else "not_found"
            )
            raise ToolFailure(code, f"cannot access {path}: {exc.strerror or exc}", RELATIVE_HINT) from None
