"""Worktree sessions' checkouts: a git worktree on a branch of its own (`sunwell/NAME`), outside the workspace, made,
committed, compared, merged (worktree_merge.py) and dropped with the real `git` (git.py: no hook ever runs).

The checkout goes under the data dir (`worktrees/REPO-ID/NAME`) or `worktrees.folder`; git keeps its bookkeeping in
the repository's `.git/worktrees`. Nothing here touches the user's branches or their checkout: a worktree's commands
name its own git directory and work tree. Only the files `worktrees.copy_untracked` lists are copied in, and never
committed. The rows live in a small table in the data dir (worktree_table.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sunwell.config.settings import WorktreeSettings
from sunwell.tools.workspace.git import Git, GitError
from sunwell.tools.workspace.worktree_ports import free_block
from sunwell.tools.workspace.worktree_table import WorktreeRecord, WorktreeTable

BRANCH_PREFIX = "sunwell/"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
NAME_RULE = "a worktree name is 1-63 letters, digits, '-' or '_', starting with a letter or digit"
FALLBACK_IDENTITY = ("user.name=Sunwell", "user.email=sunwell@localhost")
"""The author of a commit when git knows no identity of the user (no `user.name` / `user.email` anywhere)."""


class WorktreeError(GitError):
    """A worktree cannot be made, found, merged or dropped: one line saying why."""


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise WorktreeError(f"invalid worktree name {name[:80]!r}: {NAME_RULE}")
    return name


def name_for(prompt: str, taken: set[str]) -> str:
    """A name from the first words of the prompt (`fix-the-parser`), numbered when taken."""
    words = re.findall(r"[a-z0-9]+", prompt.lower())[:4]
    stem = "-".join(words)[:40].strip("-") or "session"
    name, number = stem, 1
    while name in taken:
        number += 1
        name = f"{stem}-{number}"
    return name


def identity(git: Git) -> list[str]:
    """`-c` options for a commit's author: none when git knows the user's identity (they are the author)."""
    return [] if git.ok("config", "user.email") else [arg for s in FALLBACK_IDENTITY for arg in ("-c", s)]


@dataclass(frozen=True)
class Repository:
    root: Path
    """The main checkout (the user's)."""
    common_dir: Path
    """Its `.git`, shared by every worktree."""
    subdir: PurePosixPath
    """The workspace within the checkout (`.` when it is the root): a worktree session opens the same folder."""

    @classmethod
    def of(cls, workspace: Path) -> Repository:
        git = Git(workspace)
        found = git.run("rev-parse", "--show-toplevel", "--git-common-dir", check=False)
        lines = found.stdout.splitlines()
        if found.returncode != 0 or len(lines) != 2:
            raise WorktreeError(f"{workspace} is not in a git repository: worktree sessions need one")
        common = (workspace / lines[1]).resolve()
        # the main checkout is the first worktree git lists, wherever the workspace itself is
        main = Path(git.out("worktree", "list", "--porcelain").splitlines()[0].removeprefix("worktree "))
        top = Path(lines[0]).resolve()
        subdir = PurePosixPath(workspace.resolve().relative_to(top).as_posix())
        if not git.ok("rev-parse", "--verify", "--quiet", "HEAD^{commit}"):
            raise WorktreeError(f"the repository {main} has no commit yet: a worktree starts from one")
        return cls(main.resolve(), common, subdir)

    @property
    def id(self) -> str:
        """Its name and a hash of where its git directory is: two clones of one project never share worktrees."""
        stem = re.sub(r"[^A-Za-z0-9_-]+", "-", self.root.name).strip("-")[:40] or "repo"
        return f"{stem}-{hashlib.sha256(str(self.common_dir).encode()).hexdigest()[:12]}"

    @property
    def git(self) -> Git:
        return Git(self.root)

    def current_branch(self) -> str | None:
        done = self.git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return done.stdout.strip() or None


class Worktrees:
    """The worktree sessions of one repository."""

    def __init__(self, repository: Repository, settings: WorktreeSettings, data_dir: Path) -> None:
        self.repository, self.settings = repository, settings
        self.table = WorktreeTable(data_dir / "worktrees" / f"{repository.id}.json")
        self.folder = (settings.folder.expanduser() if settings.folder else data_dir / "worktrees") / repository.id

    def get(self, name: str) -> WorktreeRecord:
        row = self.table.get(check_name(name))
        if row is None:
            raise WorktreeError(f"no worktree session '{name}': see `sunwell worktrees list`")
        return row

    def taken(self) -> set[str]:
        return {row.name for row in self.table.rows()}

    def workspace_of(self, row: WorktreeRecord) -> Path:
        """Where its session works: the checkout, or the same folder in it as the workspace it was made from."""
        return Path(row.path) / self.repository.subdir

    def git_of(self, row: WorktreeRecord) -> Git:
        return self.repository.git.at(self._git_dir(row), Path(row.path))

    def create(self, name: str, base: str | None = None) -> WorktreeRecord:
        check_name(name)
        branch = BRANCH_PREFIX + name
        git = self.repository.git
        with self.table.changing() as rows:
            if name in rows:
                raise WorktreeError(f"a worktree session '{name}' exists already: `--worktree {name}` continues it")
            if git.ok("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"):
                raise WorktreeError(f"the branch {branch} exists already: choose another name, or delete the branch")
            base = base or self.repository.current_branch() or "HEAD"
            found = git.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}", check=False)
            if found.returncode != 0:
                raise WorktreeError(f"unknown base '{base}': name a branch or commit of {self.repository.root}")
            path = self.folder / name
            if path.exists():
                raise WorktreeError(f"{path} exists already: remove it, or choose another name")
            path.parent.mkdir(parents=True, exist_ok=True)
            git.run("worktree", "add", "--quiet", "-b", branch, str(path), found.stdout.strip())
            row = WorktreeRecord(name=name, branch=branch, base=base, base_commit=found.stdout.strip(),
                                 path=str(path), ports=free_block(other.ports for other in rows.values()))
            row.copied = self._copy_untracked(path)
            rows[name] = row
        return row

    def commit(self, row: WorktreeRecord, message: str) -> str | None:
        """Everything changed in the checkout, committed on its branch (not the copied files); the new commit, or
        None when nothing changed."""
        git = self.git_of(row)
        git.run("add", "--all", "--", ".", *[f":(exclude,literal){path}" for path in row.copied])
        if git.ok("diff", "--cached", "--quiet", "--no-ext-diff"):
            return None
        git.run(*identity(git), "commit", "--quiet", "--no-verify", "--file=-", input=message)
        return git.out("rev-parse", "HEAD")

    def changed_files(self, row: WorktreeRecord) -> list[str]:
        """Files of the checkout not in a commit (the copied ones aside)."""
        if not Path(row.path).is_dir():
            return []
        status = self.git_of(row).run("status", "--porcelain", "-z", "--untracked-files=all").stdout
        paths = [entry[3:] for entry in status.split("\0") if len(entry) > 3]
        return [path for path in paths if path not in row.copied]

    def diff(self, row: WorktreeRecord) -> str:
        """Its branch against the commit it started from."""
        return self.repository.git.run("diff", "--no-ext-diff", "--no-textconv", row.base_commit, row.branch,
                                       "--").stdout

    def drop(self, name: str, force: bool = False) -> WorktreeRecord:
        """Worktree and branch removed; refused while a turn runs there, or with uncommitted changes unless
        `force`."""
        row = self.get(name)
        if row.state == "running":
            raise WorktreeError(f"a turn runs in worktree '{name}': wait for it to end")
        changed = self.changed_files(row)
        if changed and not force:
            raise WorktreeError(f"worktree '{name}' has {len(changed)} uncommitted change(s) ({changed[0]}"
                                f"{', …' if len(changed) > 1 else ''}): commit them there, or drop it with --force")
        git = self.repository.git
        if Path(row.path).exists():
            git.run("worktree", "remove", "--force", row.path)
        git.run("worktree", "prune")
        if git.ok("rev-parse", "--verify", "--quiet", f"refs/heads/{row.branch}"):
            git.run("branch", "-D", "--", row.branch)
        with self.table.changing() as rows:
            rows.pop(name, None)
        return row

    def _git_dir(self, row: WorktreeRecord) -> Path:
        """The worktree's git directory, found from git's side (`worktrees/*/gitdir` names the checkout), never
        from the checkout's `.git` file, which the session may have rewritten."""
        for entry in sorted((self.repository.common_dir / "worktrees").glob("*/gitdir")):
            try:
                if Path(entry.read_text(encoding="utf-8").strip()).parent == Path(row.path):
                    return entry.parent
            except OSError:
                continue
        raise WorktreeError(f"the checkout of worktree '{row.name}' is gone from git: drop it")

    def _copy_untracked(self, checkout: Path) -> list[str]:
        """`worktrees.copy_untracked`: each listed path that exists in the main checkout, is not tracked and is
        no symlink, copied into the new checkout. Nothing else is ever copied."""
        copied = []
        root = self.repository.root
        for listed in self.settings.copy_untracked:
            relative = PurePosixPath(listed)
            if relative.is_absolute() or ".." in relative.parts or not relative.parts or listed.startswith(":"):
                raise WorktreeError(f"invalid setting 'worktrees.copy_untracked': {listed!r} is not a path inside "
                                    f"the repository")
            source = root / relative
            if source.is_symlink() or not source.exists() or not source.resolve().is_relative_to(root):
                continue
            if self.repository.git.ok("ls-files", "--error-unmatch", "--", str(relative)):
                continue  # tracked: the checkout has it
            target = checkout / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
                copied += [(PurePosixPath(listed) / Path(dirpath).relative_to(source) / file).as_posix()
                           for dirpath, _, files in os.walk(source) for file in files]
            else:
                shutil.copy2(source, target)
                copied.append(relative.as_posix())
        return copied
