"""What reading a background process's output costs: a process that prints 100 MB, read through run_command
(`background`) and process_output until it has exited and its last output is read, against the same command piped
into `tail -c RING` (what a shell keeps of a flood in one line), alternating ABAB. And Sunwell's memory meanwhile:
the peak RSS of the process doing the reading, before and after the flood.

    python tests/bench/bench_process_output.py [--megabytes 100] [--reps 5] [--sandbox auto|off]

Each Sunwell run is a fresh child process (`--child`), so its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
sys.path.insert(0, str(SERVER))

RING = 1_000_000


def flood(megabytes: int) -> str:
    return f"yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {megabytes * 1_000_000}"


def peak_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def read_through_sunwell(megabytes: int, sandbox: str, ws: Path) -> dict:
    from sunwell.config.settings import Background
    from sunwell.tools.base import CommandSettings, ToolContext
    from sunwell.tools.handlers.processes import process_output
    from sunwell.tools.handlers.shell import run_command
    from sunwell.tools.processes import ProcessTable
    from sunwell.tools.workspace.jail import Jail

    class Stream:
        done = False

        def emit(self, event: object) -> None:
            pass

    table = ProcessTable(ws.parent / "processes", lambda: Background(output_ring_bytes=RING))
    ctx = ToolContext(jail=Jail(ws), commands=CommandSettings(sandbox=sandbox))  # type: ignore[arg-type]
    ctx.processes = table.attach("bench", Stream())
    before = peak_rss_kb()
    started = time.perf_counter()
    await run_command({"command": flood(megabytes), "background": True}, ctx)
    reads = 1
    while True:
        text = await process_output({"process_id": 1, "wait": 30}, ctx)
        reads += 1
        if "exited with code" in text:
            break
    process = ctx.processes.get(1)
    tail = await process_output({"process_id": 1, "since": process.ring.total - RING}, ctx)
    seconds = time.perf_counter() - started
    await table.close()
    assert process.ring.total == megabytes * 1_000_000, process.ring.total
    return {"seconds": seconds, "reads": reads + 1, "before_kb": before, "after_kb": peak_rss_kb(),
            "dropped": process.ring.dropped, "tail_ok": "0123456789" in tail}


def through_sunwell(megabytes: int, sandbox: str, ws: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", "--megabytes", str(megabytes), "--sandbox", sandbox,
                           "--workspace", str(ws)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def through_tail(megabytes: int, sandbox: str, ws: Path) -> dict:
    command = f"{flood(megabytes)} | tail -c {RING} > /dev/null"
    argv = ["bash", "-c", command]
    if sandbox != "off":
        from sunwell.tools.sandbox.bwrap import bwrap_argv, bwrap_available, probe_bwrap
        from sunwell.tools.workspace.jail import Jail

        bwrap = bwrap_available()
        probe = asyncio.run(probe_bwrap(bwrap))  # type: ignore[arg-type]
        argv = bwrap_argv(ws, ws, Jail(ws), network=False, bwrap=bwrap, userns_flags=probe.userns_flags) + argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run(argv, cwd=ws, check=True)
    return {"seconds": time.perf_counter() - started,
            "child_kb": max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sandbox", choices=["auto", "off"], default="auto")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--workspace")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(read_through_sunwell(args.megabytes, args.sandbox, Path(args.workspace)))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        ours, theirs = [], []
        for rep in range(args.reps):
            pair = [lambda: ours.append(through_sunwell(args.megabytes, args.sandbox, ws)),
                    lambda: theirs.append(through_tail(args.megabytes, args.sandbox, ws))]
            for run in pair if rep % 2 == 0 else reversed(pair):
                run()
    sunwell_s = statistics.median(r["seconds"] for r in ours)
    tail_s = statistics.median(r["seconds"] for r in theirs)
    grew = statistics.median(r["after_kb"] - r["before_kb"] for r in ours)
    print(f"{args.megabytes} MB of output, sandbox {args.sandbox}, ring {RING:,} bytes, {args.reps} reps (ABAB)")
    print(f"  through process_output: {sunwell_s * 1000:8.0f} ms  ({statistics.median(r['reads'] for r in ours):.0f} "
          f"calls; dropped {ours[0]['dropped']:,} bytes; tail read: {all(r['tail_ok'] for r in ours)})")
    print(f"  | tail -c {RING}:        {tail_s * 1000:8.0f} ms")
    print(f"  ratio: {sunwell_s / tail_s:.2f}x (target <= 2x)")
    print(f"  Sunwell's peak RSS grew by {grew / 1024:.1f} MB while reading {args.megabytes} MB "
          f"(peak {statistics.median(r['after_kb'] for r in ours) / 1024:.1f} MB)")


if __name__ == "__main__":
    main()
