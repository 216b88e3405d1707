"""Worktree sessions' checkouts with the real git in temp dirs: made, committed, compared, merged, dropped; no hook
of the repository ever runs, no hostile name makes a path, and nothing of the user's checkout changes but on merge."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sunwell.config.settings import WorktreeSettings
from sunwell.tools.workspace.worktree_merge import merge
from sunwell.tools.workspace.worktrees import Repository, WorktreeError, Worktrees

HOOKS = ("post-checkout", "pre-commit", "commit-msg", "post-commit", "post-merge", "pre-merge-commit",
         "reference-transaction", "post-index-change")


def git(cwd: Path, *args: str) -> str:
    """The test's own git: hooks and fsmonitor off, so that a marker can only come from Sunwell's commands."""
    quiet = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    return subprocess.run(["git", *quiet, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def hostile_repo(tmp_path: Path) -> Path:
    """A repository whose every hook (in .git/hooks and in a tracked `.githooks` its config points at) and whose
    fsmonitor leave a marker file when git runs them."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Ada User")
    git(repo, "config", "user.email", "ada@example.com")
    (repo / "a.txt").write_text("one\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print(1)\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    marker = tmp_path / "hook-ran"
    for folder in (repo / ".git" / "hooks", repo / ".githooks"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            script = folder / hook
            script.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
            script.chmod(0o755)
    git(repo, "add", ".githooks")
    git(repo, "commit", "-q", "-m", "hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    git(repo, "config", "core.fsmonitor", f"echo fsmonitor >> {marker}; false")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return hostile_repo(tmp_path)


def worktrees_of(repo: Path, tmp_path: Path, **settings) -> Worktrees:
    return Worktrees(Repository.of(repo), WorktreeSettings(**settings), tmp_path / "data")


def no_hook_ran(tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    assert not marker.exists(), f"a hook ran: {marker.read_text()}"


def test_a_worktree_is_made_outside_the_workspace_on_its_own_branch_and_no_hook_runs(repo, tmp_path):
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("parser")
    checkout = Path(row.path)
    assert checkout.is_relative_to(tmp_path / "data" / "worktrees") and not checkout.is_relative_to(repo)
    assert (checkout / "a.txt").read_text() == "one\n"
    assert (row.branch, row.base, row.state) == ("sunwell/parser", "main", "new")
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD") == "sunwell/parser"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert [r.name for r in worktrees_of(repo, tmp_path).table.rows()] == ["parser"]
    no_hook_ran(tmp_path)
    with pytest.raises(WorktreeError, match="exists already"):
        worktrees.create("parser")


def test_a_commit_is_the_users_on_the_worktrees_branch_with_no_hook_and_the_users_checkout_unchanged(repo, tmp_path):
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("feature")
    checkout = Path(row.path)
    (checkout / "a.txt").write_text("one\ntwo\n")
    (checkout / "new.py").write_text("x = 1\n")
    commit = worktrees.commit(row, "add two\n\nSunwell session s1")
    assert commit == git(repo, "rev-parse", "sunwell/feature")
    assert git(repo, "log", "-1", "--format=%an <%ae>|%s", "sunwell/feature") == "Ada User <ada@example.com>|add two"
    assert git(repo, "rev-parse", "main") == git(repo, "rev-parse", "sunwell/feature~1")
    assert git(repo, "status", "--porcelain") == "" and (repo / "a.txt").read_text() == "one\n"
    assert worktrees.commit(row, "nothing") is None
    assert "+two" in worktrees.diff(row) and "new.py" in worktrees.diff(row)
    no_hook_ran(tmp_path)


def test_a_rewritten_dot_git_file_in_the_checkout_does_not_send_the_commit_elsewhere(repo, tmp_path):
    """The session may write the checkout's `.git` file: Sunwell names the worktree's git directory itself."""
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("redirect")
    evil = tmp_path / "evil"
    evil.mkdir()
    git(evil, "init", "-q")
    (evil / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\necho evil >> {tmp_path / 'hook-ran'}\n")
    (evil / ".git" / "hooks" / "pre-commit").chmod(0o755)
    (Path(row.path) / ".git").write_text(f"gitdir: {evil / '.git'}\n")
    (Path(row.path) / "b.txt").write_text("b\n")
    worktrees.commit(row, "b")
    assert git(repo, "show", "sunwell/redirect:b.txt") == "b"
    no_hook_ran(tmp_path)


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".", "-rf", ".hidden", "x.lock", "a b", "", "a..b",
                                  "refs/heads/main", "x" * 64, "nul\0byte", "@{-1}"])
def test_a_hostile_name_is_refused_in_one_line_and_makes_nothing(repo, tmp_path, name):
    worktrees = worktrees_of(repo, tmp_path)
    with pytest.raises(WorktreeError, match="invalid worktree name"):
        worktrees.create(name)
    assert not (tmp_path / "data" / "worktrees").exists() or not any((tmp_path / "data" / "worktrees").rglob("*/*"))
    assert git(repo, "branch", "--format=%(refname:short)") == "main"


def test_a_directory_that_is_not_git_says_so_in_one_line(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError, match=r"is not in a git repository: worktree sessions need one$"):
        Repository.of(plain)


def test_only_the_listed_untracked_files_are_copied_and_never_committed(repo, tmp_path):
    (repo / ".env").write_text("SECRET=1\n")
    (repo / "notes.txt").write_text("local notes\n")
    (repo / "fixtures").mkdir()
    (repo / "fixtures" / "big.json").write_text("{}\n")
    worktrees = worktrees_of(repo, tmp_path, copy_untracked=["notes.txt", "fixtures", "missing.txt", "a.txt"])
    row = worktrees.create("copies")
    checkout = Path(row.path)
    assert (checkout / "notes.txt").read_text() == "local notes\n" and (checkout / "fixtures" / "big.json").exists()
    assert not (checkout / ".env").exists()
    assert sorted(row.copied) == ["fixtures/big.json", "notes.txt"]
    (checkout / "a.txt").write_text("changed\n")
    worktrees.commit(row, "change a")
    assert git(repo, "show", "--name-only", "--format=", "sunwell/copies") == "a.txt"
    assert worktrees.changed_files(row) == []


@pytest.mark.parametrize("listed", ["../outside.txt", "/etc/passwd", ":(glob)*"])
def test_a_copy_untracked_entry_outside_the_repository_is_refused(repo, tmp_path, listed):
    with pytest.raises(WorktreeError, match="worktrees.copy_untracked"):
        worktrees_of(repo, tmp_path, copy_untracked=[listed]).create("outside")


def test_a_listed_symlink_is_not_followed(repo, tmp_path):
    (tmp_path / "secret").write_text("key\n")
    os.symlink(tmp_path / "secret", repo / "link.txt")
    row = worktrees_of(repo, tmp_path, copy_untracked=["link.txt"]).create("links")
    assert not (Path(row.path) / "link.txt").exists() and row.copied == []


def test_a_branch_that_did_not_move_is_fast_forwarded_in_the_users_checkout(repo, tmp_path):
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("ff")
    (Path(row.path) / "a.txt").write_text("one\nfrom the worktree\n")
    commit = worktrees.commit(row, "wt change")
    merged = merge(worktrees, "ff")
    assert (merged.into, merged.how, merged.commit) == ("main", "fast-forward", commit)
    assert (repo / "a.txt").read_text() == "one\nfrom the worktree\n"
    assert worktrees.get("ff").state == "merged"
    no_hook_ran(tmp_path)


def test_a_moved_branch_gets_a_merge_commit_and_one_checked_out_nowhere_is_merged_without_a_checkout(repo, tmp_path):
    git(repo, "branch", "release")
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("mc", base="release")
    (Path(row.path) / "new.txt").write_text("new\n")
    worktrees.commit(row, "add new")
    (repo / "other.txt").write_text("other\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "main moves")
    git(repo, "checkout", "-q", "release")
    git(repo, "merge", "-q", "--ff-only", "main")
    git(repo, "checkout", "-q", "main")
    merged = merge(worktrees, "mc", into="release")
    assert merged.how == "merge commit"
    assert git(repo, "log", "-1", "--format=%P", "release").split() == [
        git(repo, "rev-parse", "main"), git(repo, "rev-parse", "sunwell/mc")]
    assert git(repo, "show", "release:new.txt") == "new" and not (repo / "new.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    no_hook_ran(tmp_path)


def test_a_conflict_leaves_the_merge_to_the_user_and_changes_nothing(repo, tmp_path):
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("clash")
    (Path(row.path) / "a.txt").write_text("theirs\n")
    worktrees.commit(row, "theirs")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    before = git(repo, "rev-parse", "main")
    with pytest.raises(WorktreeError, match=r"conflicts in a.txt: nothing was changed; merge it with your own tools"):
        merge(worktrees, "clash")
    assert git(repo, "rev-parse", "main") == before and (repo / "a.txt").read_text() == "mine\n"
    assert git(repo, "status", "--porcelain") == "" and not (repo / ".git" / "MERGE_HEAD").exists()
    assert worktrees.get("clash").state == "new"


def test_drop_refuses_uncommitted_changes_unless_forced_then_removes_worktree_and_branch(repo, tmp_path):
    worktrees = worktrees_of(repo, tmp_path)
    row = worktrees.create("dropme")
    (Path(row.path) / "draft.txt").write_text("unsaved work\n")
    with pytest.raises(WorktreeError, match=r"has 1 uncommitted change\(s\) \(draft.txt\).*--force"):
        worktrees.drop("dropme")
    assert (Path(row.path) / "draft.txt").exists() and "sunwell/dropme" in git(repo, "branch")
    worktrees.drop("dropme", force=True)
    assert not Path(row.path).exists() and "sunwell/dropme" not in git(repo, "branch")
    assert worktrees.table.rows() == [] and "dropme" not in git(repo, "worktree", "list")
    with pytest.raises(WorktreeError, match="no worktree session 'dropme'"):
        worktrees.drop("dropme")
    no_hook_ran(tmp_path)


def test_each_worktree_gets_a_block_of_ports_of_its_own_passing_over_one_in_use(repo, tmp_path):
    import socket

    from sunwell.tools.workspace.worktree_ports import PORT_BLOCK, PORT_FIRST

    worktrees = worktrees_of(repo, tmp_path)
    with socket.socket() as squatter:  # another program holds the first block's port when the worktree is made
        try:
            squatter.bind(("127.0.0.1", PORT_FIRST))
        except OSError:
            pytest.skip(f"port {PORT_FIRST} is taken on this machine already")
        one = worktrees.create("one")
    two = worktrees.create("two")
    assert one.ports == PORT_FIRST + PORT_BLOCK
    assert two.ports == PORT_FIRST  # free again, and no other worktree has it
    assert worktrees.get("one").ports == one.ports  # recorded: the session keeps its ports from turn to turn
