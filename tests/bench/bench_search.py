"""Benchmark of search_files and list_files against ripgrep itself, on a tree the script builds.

    python tests/bench/bench_search.py [--reps 9] [--files 50000] [--dir DIR] [--server DIR] [--profile]

The tree: --files text files in nested folders (20 x 25 folders of 100 files, about 1 KB each), plus what the
policy must skip: `.git/`, `node_modules/` and `secrets/` folders, `.env` and `*.pem` files, and binary files (a NUL
byte, early or late) that contain the searched words. Cases, each Sunwell against ripgrep run with the same policy
(`--hidden --no-ignore`, the blocked names as `--iglob=!...`, output read whole from a pipe by this process):

* rare: a word found in one file; the whole tree is scanned.
* many: a word on two lines of every 20th file (5,000 hits in 2,500 files with the default size); Sunwell shows the
  first 500 in path order, ripgrep prints them all.
* every line: a pattern on nearly every line (about 1.3 million hits): what Sunwell keeps must stay bounded.
* list `**`: list_files with `**` (it stops at 2,000 entries) against `rg --files` (all of them).
* list a name: list_files `**/f042.md`, which walks the whole tree, against `rg --files --iglob=f042.md`.

The variants alternate (ABBA) over --reps repetitions after a warm-up of each; the report gives each one's median
and the median of the per-pair ratios sunwell/ripgrep. `--server DIR` imports `sunwell` from DIR instead of this
checkout (to measure an older version side by side). `--profile` runs cProfile over Sunwell's side of each case.
Figures are for reading, never asserted: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RARE = "zephyr_rare_token"
MANY = "TODO(bench)"
EVERY_LINE = "e"
LISTED_NAME = "f042.md"
TARGET_RATIO = 1.3


# --------------------------------------------------------------------------- the tree


def build_tree(root: Path, files: int) -> None:
    """Deterministic: the same --files gives the same tree, byte for byte."""
    rng = random.Random(18)
    words = ["alpha", "beta", "gamma", "delta", "value", "result", "config", "item", "index", "total", "name"]
    per_dir, subdirs = 100, 25
    exts = ["py", "ts", "md", "txt"]
    for n in range(files):
        top, rest = divmod(n, per_dir * subdirs)
        sub, k = divmod(rest, per_dir)
        folder = root / f"d{top:02d}" / f"s{sub:02d}"
        if k == 0:
            folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# file {n}: {' '.join(rng.choice(words) for _ in range(6))}"]
        lines += [f"def {rng.choice(words)}_{i}(x): return x + {rng.randint(0, 999)}" for i in range(20)]
        if n % 20 == 7:
            lines[5:5] = [f"    # {MANY} tidy this", f"    # {MANY} and this"]
        if n == files // 2 + 13:
            lines.insert(11, f"found = '{RARE}'")
        (folder / f"f{k:03d}.{exts[k % 4]}").write_text("\n".join(lines) + "\n")
    hidden_words = f"{RARE}\n{MANY}\n" * 3
    for blocked in (".git/objects/ab", "node_modules/pkg/lib", "secrets", "d03/.git", "d05/node_modules/x"):
        (root / blocked).mkdir(parents=True, exist_ok=True)
        for i in range(200):
            (root / blocked / f"b{i}.js").write_text(hidden_words)
    for name in (".env", ".env.local", "d01/key.pem", "d02/s03/id_rsa", "d04/credentials.json"):
        (root / name).write_text(hidden_words)
    (root / "d00" / "s00" / "early.bin").write_bytes(b"\x00" + hidden_words.encode() * 100)
    # late.bin: a NUL byte past ripgrep's first buffer, after lines it prints before it knows
    filler = b"".join(b"filler line %d of a binary file\n" % i for i in range(4_000))
    (root / "d09" / "late.bin").write_bytes(hidden_words.encode() + filler + b"\x00")
    (root / "d11" / "s04" / "image.png").write_bytes(bytes(range(256)) * 64 + hidden_words.encode())


# --------------------------------------------------------------------------- the two sides


class Sides:
    def __init__(self, root: Path, rg: str) -> None:
        from sunwell.tools.base import Limits, SearchSettings, ToolContext
        from sunwell.tools.workspace.jail import Jail

        self.root, self.rg = root, rg
        jail = Jail(root)
        self.ctx = ToolContext(jail=jail, limits=Limits(search=SearchSettings(ripgrep_path=rg)))
        self.policy = ["--no-config", "--hidden", "--no-ignore"]
        self.policy += [f"--iglob=!{p}" for p in jail.blocked if "/" not in p.rstrip("/")]

    def search(self, pattern: str) -> Callable[[], Awaitable[str]]:
        from sunwell.tools.handlers.search import search_files

        return lambda: search_files({"pattern": pattern}, self.ctx)

    def list_files(self, pattern: str) -> Callable[[], Awaitable[str]]:
        from sunwell.tools.handlers.files import list_files

        return lambda: list_files({"pattern": pattern}, self.ctx)

    def ripgrep(self, *argv: str) -> Callable[[], Awaitable[str]]:
        command = [self.rg, *self.policy, *argv, "--", str(self.root)]

        async def run() -> str:
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE
            )
            out, _ = await proc.communicate()
            return out.decode("utf-8", "replace")

        return run


def cases(sides: Sides) -> list[tuple[str, Callable, Callable, Callable[[str], int]]]:
    """(name, sunwell, ripgrep, how many results an output holds)."""
    return [
        ("search, rare word (1 hit)", sides.search(RARE), sides.ripgrep("-n", f"--regexp={RARE}"), hits),
        ("search, many hits", sides.search(r"TODO\(bench\)"), sides.ripgrep("-n", r"--regexp=TODO\(bench\)"), hits),
        ("search, every line", sides.search(EVERY_LINE), sides.ripgrep("-n", f"--regexp={EVERY_LINE}"), hits),
        ("list_files `**` / rg --files", sides.list_files("**"), sides.ripgrep("--files"), lines),
        (f"list_files `**/{LISTED_NAME}`", sides.list_files(f"**/{LISTED_NAME}"),
         sides.ripgrep("--files", f"--iglob={LISTED_NAME}"), lines),
    ]  # fmt: skip


def hits(out: str) -> int:
    return 0 if out == "(no matches)" else sum(1 for line in out.splitlines() if not line.startswith("["))


def lines(out: str) -> int:
    return len(out.splitlines())


# --------------------------------------------------------------------------- measuring


async def timed(run: Callable[[], Awaitable[str]]) -> tuple[float, str]:
    started = time.perf_counter()
    out = await run()
    return (time.perf_counter() - started) * 1000, out


async def compare(sides: Sides, reps: int, only: str | None) -> None:
    print(f"{'case':<32} {'sunwell':>10} {'ripgrep':>10} {'ratio':>7} {'pairs':>12}  results (sunwell / rg)")
    for name, sunwell, rg, count in cases(sides):
        if only and only not in name:
            continue
        _, ours = await timed(sunwell)  # warm-up: page cache, imports
        _, theirs = await timed(rg)
        times: dict[str, list[float]] = {"sunwell": [], "rg": []}
        for rep in range(reps):
            order = [("sunwell", sunwell), ("rg", rg)]
            for side, run in order if rep % 2 == 0 else order[::-1]:
                times[side].append((await timed(run))[0])
        ratios = [s / r for s, r in zip(times["sunwell"], times["rg"], strict=True)]
        print(
            f"{name:<32} {statistics.median(times['sunwell']):>7.0f} ms {statistics.median(times['rg']):>7.0f} ms "
            f"{statistics.median(ratios):>6.2f}x {min(ratios):>5.2f}..{max(ratios):<5.2f}  "
            f"{count(ours):,} / {count(theirs):,}"
        )


async def profile(sides: Sides, reps: int, top: int, only: str | None) -> None:
    for name, sunwell, _, _ in cases(sides):
        if only and only not in name:
            continue
        await sunwell()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(reps):
            await sunwell()
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
        print(
            f"==== {name}: cProfile of {reps} runs (this process only; ripgrep is a child)\n{out.getvalue()}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9, help="repetitions of each side (default 9)")
    parser.add_argument("--files", type=int, default=50_000, help="text files in the tree (default 50,000)")
    parser.add_argument("--dir", type=Path, help="build (or reuse) the tree here instead of a temp dir")
    parser.add_argument("--server", type=Path, default=ROOT / "server", help="the folder holding `sunwell`")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--profile", action="store_true", help="cProfile Sunwell's side instead of comparing")
    parser.add_argument("--top", type=int, default=25, help="rows of the profile (default 25)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.server.resolve()))
    rg = shutil.which("rg")
    if rg is None:
        print("ripgrep (rg) is not installed: nothing to compare against")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = (args.dir or Path(tmp)) / f"tree-{args.files}"
        if not root.exists():
            started = time.perf_counter()
            build_tree(root, args.files)
            print(f"built {root} in {time.perf_counter() - started:.1f} s")
        sides = Sides(root, rg)
        version = subprocess.run(
            [rg, "--version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
        load = os.getloadavg()[0]
        print(
            f"sunwell from {args.server}; {version}; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}"
        )
        if args.profile:
            asyncio.run(profile(sides, max(args.reps, 1), args.top, args.only))
            return 0
        asyncio.run(compare(sides, args.reps, args.only))
        print(
            f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; median of {args.reps} ABBA pairs; "
            f"target for search: <= {TARGET_RATIO}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
