"""`sunwell run --worktree` and `sunwell worktrees list | diff | merge | drop` as real subprocesses, on a real git
repository whose hooks must never run, with the model's answers scripted at the fake provider."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from test_worktrees import git, hostile_repo, no_hook_ran


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[Call("write_file", json.dumps({"path": path, "content": content}))])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return hostile_repo(tmp_path)


def run_in(sunwell, repo: Path, *args: str):
    return sunwell("run", *args, "--model", "openai:gpt-4o", "--yes", "--json", cwd=repo)


def test_a_worktree_session_writes_and_commits_on_its_branch_and_continues_leaving_the_users_checkout_alone(
        sunwell, fake, repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD")
    fake.script(write("notes.md", "first\n"), Reply(text="wrote it"))
    first = run_in(sunwell, repo, "--worktree", "docs", "write the notes")
    assert first.code == 0, first.stderr
    assert "worktree docs on sunwell/docs" in first.stderr and "committed on sunwell/docs" in first.stderr
    assert not (repo / "notes.md").exists() and git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(repo, "show", "sunwell/docs:notes.md") == "first"
    assert git(repo, "log", "-1", "--format=%an|%s", "sunwell/docs") == "Ada User|write the notes"

    [row] = [json.loads(line) for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()]
    session = first.events[-1]["session"]
    assert (row["name"], row["branch"], row["base"], row["session"], row["state"]) == (
        "docs", "sunwell/docs", "main", session, "done")
    assert Path(row["path"]).is_relative_to(tmp_path / "data")

    fake.script(write("notes.md", "first\nsecond\n"), Reply(text="again"))
    second = run_in(sunwell, repo, "--worktree", "docs", "add a second line")
    assert second.code == 0, second.stderr
    assert second.events[-1]["session"] == session  # the same session, continued
    assert "write the notes" in json.dumps(fake.requests[-1].body)
    assert git(repo, "log", "--format=%s", "main..sunwell/docs").splitlines() == ["add a second line",
                                                                                  "write the notes"]
    diff = sunwell("worktrees", "diff", "docs", cwd=repo)
    assert diff.code == 0 and "+second" in diff.stdout and "notes.md" in diff.stdout
    merged = sunwell("worktrees", "merge", "docs", cwd=repo)
    assert merged.code == 0 and "fast-forward" in merged.stdout, merged.stderr
    assert (repo / "notes.md").read_text() == "first\nsecond\n"
    dropped = sunwell("worktrees", "drop", "docs", cwd=repo)
    assert dropped.code == 0 and not Path(row["path"]).exists() and "sunwell/docs" not in git(repo, "branch")
    assert sunwell("worktrees", "list", "--json", cwd=repo).stdout == ""
    no_hook_ran(tmp_path)


def test_the_checkouts_own_workspace_config_applies_and_only_narrows(sunwell, fake, repo, tmp_path):
    (repo / ".sunwell").mkdir()
    (repo / ".sunwell" / "config.yaml").write_text("trust: read_only\n")
    git(repo, "add", ".sunwell/config.yaml")
    git(repo, "commit", "-q", "-m", "read only here")
    fake.script(write("x.txt", "x\n"), Reply(text="could not"))
    done = run_in(sunwell, repo, "--worktree", "narrow", "write x")
    results = [e for e in done.events if e["type"] == "toolResult"]
    assert results and results[0]["ok"] is False
    assert git(repo, "log", "-1", "--format=%s", "sunwell/narrow") == "read only here"  # nothing to commit
    no_hook_ran(tmp_path)


def test_the_prompt_alone_after_worktree_is_the_prompt_and_names_the_worktree(sunwell, fake, repo):
    fake.script(Reply(text="hello"))
    done = run_in(sunwell, repo, "--worktree", "Fix the parser, please")
    assert done.code == 0, done.stderr
    assert [json.loads(line)["name"] for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()] \
        == ["fix-the-parser-please"]


def test_a_directory_that_is_not_git_and_a_hostile_name_are_refused_in_one_line(sunwell, workspace):
    plain = sunwell("run", "--worktree", "x", "hi", "--model", "openai:gpt-4o")
    assert plain.code == 2 and plain.stderr.strip().splitlines() == [
        f"sunwell: {workspace} is not in a git repository: worktree sessions need one"]
    listing = sunwell("worktrees", "list")
    assert listing.code == 1 and "is not in a git repository" in listing.stderr


def test_hostile_names_make_nothing(sunwell, repo, tmp_path):
    for name in ("../../escape", "a/b", "-x"):
        done = sunwell("run", f"--worktree={name}", "hi", "--model", "openai:gpt-4o", cwd=repo)
        assert done.code == 2 and "invalid worktree name" in done.stderr
    assert not (tmp_path / "data" / "worktrees").exists() and not (tmp_path / "escape").exists()
    assert git(repo, "branch", "--format=%(refname:short)") == "main"


def test_merge_conflict_and_drop_with_uncommitted_changes_are_refused_and_change_nothing(sunwell, fake, repo):
    fake.script(write("a.txt", "theirs\n"), Reply(text="done"))
    assert run_in(sunwell, repo, "--worktree", "clash", "change a").code == 0
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    head = git(repo, "rev-parse", "HEAD")
    merged = sunwell("worktrees", "merge", "clash", cwd=repo)
    assert merged.code == 1 and "conflicts in a.txt: nothing was changed" in merged.stderr
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""
    [row] = [json.loads(line) for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()]
    (Path(row["path"]) / "draft.txt").write_text("unsaved\n")
    refused = sunwell("worktrees", "drop", "clash", cwd=repo)
    assert refused.code == 1 and "uncommitted change" in refused.stderr and Path(row["path"]).exists()
    assert sunwell("worktrees", "drop", "clash", "--force", cwd=repo).code == 0 and not Path(row["path"]).exists()


def test_killed_mid_turn_the_worktree_says_interrupted_and_the_next_run_there_continues_its_session(
        sunwell, fake, env, repo, tmp_path):
    from test_durable_support import Crashing, requested

    fake.script(write("plan.md", "written before the crash\n"),
                Reply(text="never seen", wait_for=tmp_path / "never"))  # the slow answer the kill cuts off
    run = Crashing(env, repo, "--worktree", "crash", "write the plan", "--model", "openai:gpt-4o", "--yes", "--json")
    before = run.kill_when(requested(fake, 2))
    session = before[0]["session"]
    [row] = [json.loads(line) for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()]
    assert (row["name"], row["state"]) == ("crash", "interrupted")
    assert (Path(row["path"]) / "plan.md").read_text() == "written before the crash\n"
    assert git(repo, "status", "--porcelain") == ""  # the user's checkout: untouched

    fake.script(Reply(text="picked up where it stopped"))
    again = run_in(sunwell, repo, "--worktree", "crash", "go on")
    assert again.code == 0, again.stderr
    assert again.events[-1]["session"] == session  # the same session, continued in the same worktree
    assert "write the plan" in json.dumps(fake.requests[-1].body)
    assert git(repo, "show", "sunwell/crash:plan.md") == "written before the crash"
    [row] = [json.loads(line) for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()]
    assert (row["state"], row["session"]) == ("done", session)
    no_hook_ran(tmp_path)


def test_base_starts_a_new_worktree_from_the_branch_named_and_a_wrong_base_changes_nothing(sunwell, fake, repo, tmp_path):
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "feature.txt").write_text("on feature\n")
    git(repo, "add", "feature.txt")
    git(repo, "commit", "-q", "-m", "feature work")
    git(repo, "switch", "-q", "main")
    fake.script(Reply(text="saw it"))
    done = run_in(sunwell, repo, "--worktree", "onfeature", "--base", "feature", "look")
    assert done.code == 0, done.stderr
    [row] = [json.loads(line) for line in sunwell("worktrees", "list", "--json", cwd=repo).stdout.splitlines()]
    assert row["base"] == "feature" and (Path(row["path"]) / "feature.txt").read_text() == "on feature\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main" and not (repo / "feature.txt").exists()

    unknown = run_in(sunwell, repo, "--worktree", "nowhere", "--base", "no-such-branch", "look")
    assert unknown.code == 2 and "unknown base 'no-such-branch'" in unknown.stderr
    moved = run_in(sunwell, repo, "--worktree", "onfeature", "--base", "main", "look")
    assert moved.code == 2 and "exists, made from feature" in moved.stderr
    alone = sunwell("run", "--base", "feature", "hi", "--model", "openai:gpt-4o", cwd=repo)
    assert alone.code == 2 and "use it with --worktree" in alone.stderr
    assert "sunwell/nowhere" not in git(repo, "branch") and fake.remaining == 0
    no_hook_ran(tmp_path)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_worktree_sessions_commands_write_only_its_checkout_not_the_repository_or_its_git_dir(
        sunwell, fake, repo, tmp_path):
    config, hook = (repo / ".git" / "config").read_bytes(), (repo / ".git" / "hooks" / "pre-push")
    command = (f"echo inside > inside.txt; echo out > {repo}/mine.txt; echo '[core]' >> {repo}/.git/config; "
               f"echo run > {hook}; git -C {repo} branch stolen; true")
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command}))]), Reply(text="done"))
    done = run_in(sunwell, repo, "--worktree", "boxed", "--trust", "shell", "try to get out")
    assert done.code == 0, done.stderr
    assert git(repo, "show", "sunwell/boxed:inside.txt") == "inside"
    assert not (repo / "mine.txt").exists() and (repo / ".git" / "config").read_bytes() == config
    assert not hook.exists()
    assert "stolen" not in git(repo, "branch") and git(repo, "status", "--porcelain") == ""
    no_hook_ran(tmp_path)
