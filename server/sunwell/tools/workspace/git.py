"""Git as Sunwell runs it for worktree sessions: the real `git`, never a hook, never a program a config names.

Every command goes through `Git.run`, which turns hooks off (`core.hooksPath=/dev/null`: a repository's
`post-checkout` or `pre-commit` is code its author wrote, and Sunwell's own commits are not the user's), turns off
the config keys that start a program on an ordinary command (fsmonitor, an external diff, a pager), and drops the
`GIT_*` variables that would point git at another repository. A worktree's commands name its git directory and
work tree themselves (`Git.at`) instead of trusting the `.git` file in the checkout, which the session could write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sunwell.errors import SetupError

GIT_TIMEOUT = 120.0
"""Seconds one git command may take (a checkout of a large repository is the slow one)."""
SAFE_CONFIG = ("core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat",
               "core.untrackedCache=false", "protocol.allow=never", "credential.helper=")
"""`-c` settings of every command: command-line config outranks every file, the repository's included."""
DROPPED_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES", "GIT_EXTERNAL_DIFF",
                     "GIT_PAGER", "GIT_EDITOR", "GIT_SSH_COMMAND", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")


class GitError(SetupError):
    """A git command failed, or git is missing: one line for the user."""


@dataclass(frozen=True)
class Git:
    """git run in `cwd`; with `git_dir` and `work_tree`, on exactly that repository and checkout."""

    cwd: Path
    git_dir: Path | None = None
    work_tree: Path | None = None

    def at(self, git_dir: Path, work_tree: Path) -> Git:
        return Git(work_tree, git_dir, work_tree)

    def run(self, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        program = shutil.which("git")
        if program is None:
            raise GitError("git is not installed (worktree sessions need it on PATH)")
        argv = [program, "--no-pager"]
        for setting in SAFE_CONFIG:
            argv += ["-c", setting]
        if self.git_dir is not None:
            argv += [f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}"]
        try:
            done = subprocess.run([*argv, *args], cwd=self.cwd, capture_output=True, text=True, input=input,
                                  env=_environment(), timeout=GIT_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} took longer than {GIT_TIMEOUT:.0f} s") from None
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror or exc}") from None
        if check and done.returncode != 0:
            raise GitError(f"git {args[0]} failed: {first_line(done.stderr) or f'exit {done.returncode}'}")
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in DROPPED_VARIABLES
           and not name.startswith("GIT_CONFIG_KEY_") and not name.startswith("GIT_CONFIG_VALUE_")}
    env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password on a terminal nobody watches
    env["LC_ALL"] = "C"  # messages Sunwell reads (conflicts) in one language
    return env
