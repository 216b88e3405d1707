"""What staging a command in an overlay costs at its start: `true` in the plain bubblewrap sandbox vs the same
sandbox started inside `unshare -Urm` with the workspace overlaid (tools/sandbox/overlay.py), in ABBA order, and the whole
run_command call both ways (staged: the stage made, read and removed; plain: the snapshot fallback off).

    python tests/bench/bench_overlay.py [--reps 40] [--files 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from sunwell.tools.base import CommandSettings, Limits, ToolContext
from sunwell.tools.handlers.shell import run_command
from sunwell.tools.sandbox.bwrap import bwrap_argv, bwrap_available, probe_bwrap
from sunwell.tools.sandbox.overlay import Stage
from sunwell.tools.workspace.jail import Jail


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--files", type=int, default=2000, help="files in the workspace")
    args = parser.parse_args()
    bwrap = bwrap_available()
    assert bwrap, "bwrap is not installed"
    probe = asyncio.run(probe_bwrap(bwrap))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        for i in range(args.files):
            (ws / f"d{i % 50}").mkdir(parents=True, exist_ok=True)
            (ws / f"d{i % 50}" / f"f{i}.py").write_text(f"x = {i}\n")
        jail = Jail(ws)
        sandbox = bwrap_argv(ws, ws, jail, network=False, bwrap=bwrap, userns_flags=probe.userns_flags) + ["true"]
        staging = Path(tmp) / "staging"
        plain, staged = [], []
        for i in range(args.reps):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for which in order:
                if which == 0:
                    plain.append(timed(sandbox, ws))
                else:
                    stage = Stage.create(staging)
                    staged.append(timed(stage.wrap(sandbox, ws), ws))
                    stage.discard()
        ctx_staged = ToolContext(jail=jail, limits=Limits(commands=CommandSettings(staging_dir=staging)))
        ctx_plain = ToolContext(jail=jail, limits=Limits(commands=CommandSettings(staging_dir=Path(tmp) / "no,overlay")))  # a comma: no staging there

        def call(ctx: ToolContext) -> float:
            start = time.perf_counter()
            asyncio.run(run_command({"command": "true"}, ctx))
            return (time.perf_counter() - start) * 1000

        call(ctx_staged), call(ctx_plain)
        tool_staged, tool_plain = [], []
        for i in range(args.reps // 2):
            for ctx, into in ((ctx_staged, tool_staged), (ctx_plain, tool_plain))[:: 1 if i % 2 == 0 else -1]:
                into.append(call(ctx))
    med = statistics.median
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; workspace {args.files} files; "
          f"{args.reps} reps ABBA")
    print(f"sandbox start, `true`:  plain bwrap {med(plain):6.1f} ms   overlay {med(staged):6.1f} ms   "
          f"+{med(staged) - med(plain):5.1f} ms (median of pairs {med(s - p for s, p in zip(staged, plain)):+.1f})")
    print(f"run_command(`true`):    plain {med(tool_plain):6.1f} ms   staged {med(tool_staged):6.1f} ms   "
          f"+{med(tool_staged) - med(tool_plain):5.1f} ms")


if __name__ == "__main__":
    main()
