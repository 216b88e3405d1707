"""Merge: a worktree session's branch into a branch of the user's choosing, the one moment Sunwell changes a branch
of theirs. A fast-forward when the branch has not moved since, else a merge commit; a conflict is found first,
without touching anything (`git merge-tree`), and left to the user's own tools with a message saying how.

A branch checked out somewhere (the user's checkout, usually) is merged there by `git merge`, which refuses before
it starts when the user's uncommitted changes are in the way; one checked out nowhere is moved with `update-ref`,
a merge commit made with `commit-tree` from the tree merge-tree wrote. Hooks never run (git.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sunwell.tools.workspace.git import Git, first_line
from sunwell.tools.workspace.worktrees import WorktreeError, Worktrees, identity


@dataclass(frozen=True)
class Merged:
    into: str
    how: Literal["fast-forward", "merge commit", "up to date"]
    commit: str


def merge(worktrees: Worktrees, name: str, into: str | None = None) -> Merged:
    row = worktrees.get(name)
    if row.state == "running":
        raise WorktreeError(f"a turn runs in worktree '{name}': merge it once the turn has ended")
    git = worktrees.repository.git
    into = into or worktrees.repository.current_branch()
    if into is None:
        raise WorktreeError("the main checkout has no branch checked out: name the branch to merge into (--into)")
    if into == row.branch or not git.ok("rev-parse", "--verify", "--quiet", f"refs/heads/{into}"):
        raise WorktreeError(f"'{into}' is not a branch to merge {row.branch} into")
    tip = git.out("rev-parse", "--verify", f"refs/heads/{row.branch}")
    target = git.out("rev-parse", "--verify", f"refs/heads/{into}")
    if git.ok("merge-base", "--is-ancestor", tip, target):
        return _done(worktrees, name, Merged(into, "up to date", target))
    fast_forward = git.ok("merge-base", "--is-ancestor", target, tip)
    tree = None if fast_forward else _clean_tree(worktrees, row.branch, into, target, tip)
    checkout = _checked_out(worktrees, into)
    if checkout is not None:  # the user's files change with it: git merge there, which stops before harm
        commit = _merge_in(checkout, row.branch)
        return _done(worktrees, name, Merged(into, "fast-forward" if fast_forward else "merge commit", commit))
    if fast_forward:
        git.run("update-ref", "-m", f"sunwell: merge {row.branch}", f"refs/heads/{into}", tip, target)
        return _done(worktrees, name, Merged(into, "fast-forward", tip))
    commit = git.run(*identity(git), "commit-tree", str(tree), "-p", target, "-p", tip, "-F", "-",
                     input=f"Merge branch '{row.branch}' into {into}\n").stdout.strip()
    git.run("update-ref", "-m", f"sunwell: merge {row.branch}", f"refs/heads/{into}", commit, target)
    return _done(worktrees, name, Merged(into, "merge commit", commit))


def _clean_tree(worktrees: Worktrees, branch: str, into: str, target: str, tip: str) -> str:
    """The merged tree, or a WorktreeError naming the conflicting files when the merge would conflict."""
    done = worktrees.repository.git.run("merge-tree", "--write-tree", "--name-only", "--no-messages", target, tip,
                                        check=False)
    lines = done.stdout.splitlines()
    if done.returncode == 1:
        files = sorted(set(lines[1:]))
        raise WorktreeError(f"merging {branch} into {into} conflicts in {', '.join(files[:5])}"
                            f"{', …' if len(files) > 5 else ''}: nothing was changed; merge it with your own tools "
                            f"(git merge {branch})")
    if done.returncode != 0 or not lines:
        raise WorktreeError(f"cannot merge {branch}: {first_line(done.stderr) or 'git merge-tree failed'}")
    return lines[0]


def _checked_out(worktrees: Worktrees, branch: str) -> Path | None:
    listing = worktrees.repository.git.out("worktree", "list", "--porcelain")
    path = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def _merge_in(checkout: Path, branch: str) -> str:
    git = Git(checkout)
    done = git.run(*identity(git), "merge", "--no-verify", "--no-edit", "--quiet", "--ff", branch, check=False)
    if done.returncode != 0:
        if git.ok("rev-parse", "--verify", "--quiet", "MERGE_HEAD"):
            git.run("merge", "--abort", check=False)  # found no conflict beforehand; whatever this is, undone
        raise WorktreeError(f"git merge in {checkout} refused: {first_line(done.stderr + done.stdout)}; "
                            f"nothing was changed")
    return git.out("rev-parse", "HEAD")


def _done(worktrees: Worktrees, name: str, merged: Merged) -> Merged:
    def mark(row) -> None:
        row.state = "merged"

    worktrees.table.update(name, mark)
    return merged
