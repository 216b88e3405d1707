"""Benchmark of worktree sessions (issue 48): the time to create one on a 50,000-file repository against `git
worktree add` alone.

    python tests/bench/bench_worktree.py [--files 50000] [--reps 5] [--check]

A git repository of FILES small files in nested folders is generated in a temp dir and committed once. Then, REPS
times, alternating which goes first: Sunwell's create path (`WorktreeSessions(settings, workspace).open(NAME, line)`,
what `sunwell run --worktree NAME` and `sunwell/chat`'s `worktree` do before a turn: the repository found, the
table locked, the base resolved, `git worktree add -b`, the untracked files listed in config copied, the row
written) against `git worktree add -b BRANCH PATH HEAD` alone, each into a fresh folder. Each pair's ratio is
printed, and the median. `--check` exits 1 when the median ratio is over 1.2.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from sunwell.agent.worktree_sessions import WorktreeSessions
from sunwell.config import Settings

TARGET = 1.2
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=Bench", "-c", "user.email=bench@localhost"]


def generate(repo: Path, files: int) -> None:
    """FILES files, 100 to a folder, 50 folders to a parent; one commit."""
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(repo)], check=True)
    for n in range(files):
        folder = repo / f"pkg{n // 5000}" / f"mod{n // 100}"
        if n % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{n}.py").write_text(f"VALUE = {n}\n")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "generated"], cwd=repo, check=True)


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-worktree-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        started = time.perf_counter()
        generate(repo, args.files)
        print(f"repository: {args.files} files, generated and committed in {time.perf_counter() - started:.1f} s")
        settings = Settings(data_dir=root / "data")
        plain = root / "plain"

        def sunwell(n: int) -> None:
            WorktreeSessions(settings, repo).open(f"bench-{n}", "benchmark")

        def git_alone(n: int) -> None:
            subprocess.run(["git", "worktree", "add", "--quiet", "-b", f"plain/{n}", str(plain / str(n)), "HEAD"],
                           cwd=repo, check=True)

        ratios = []
        print(f"{'rep':>3}  {'sunwell s':>9}  {'git s':>7}  ratio")
        for n in range(args.reps):
            if n % 2 == 0:
                ours, theirs = timed(lambda n=n: sunwell(n)), timed(lambda n=n: git_alone(n))
            else:
                theirs, ours = timed(lambda n=n: git_alone(n)), timed(lambda n=n: sunwell(n))
            ratios.append(ours / theirs)
            print(f"{n:>3}  {ours:>9.3f}  {theirs:>7.3f}  {ratios[-1]:.2f}x")
        median = statistics.median(ratios)
        print(f"median ratio {median:.2f}x (target <= {TARGET}x); cpus {os.cpu_count()}")
    return 1 if args.check and median > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
