"""One oversized parameter (issue 40, item 4): the time and the bytes of the sidecar's answer to a 60 MB one.

    python tests/bench/bench_oversized.py [--megabytes 60] [--runs 3] [--server DIR]

A real sidecar (`python -m sunwell.lsp`, model `openai:gpt-4o`, nothing else configured) over stdio, as the frame tests
drive it. Cases, each sent `--runs` times, alternating, after one warm-up request:

* `ignored`: `sunwell/tools` with the MEGABYTES in a key the method does not know (ignored, as unknown keys are):
  the anchor, what reading, parsing and answering that much costs with no problem to report;
* `lens`: the MEGABYTES as the `lens` to list the tools of, the case the attack used;
* `trust`: the MEGABYTES as the `trust` level (not one of the five);
* `session`: `sunwell/undo` of a session of that name.

Printed per case: the median time from the request's last byte to its answer, the ratio to `ignored`, the answer's
size and what the sidecar wrote to stderr meanwhile; then how long a plain `sunwell/commands` took right after.
`--server DIR` runs `sunwell` from DIR (an older checkout) instead of this one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "lsp")]

from test_sidecar_frames import frame, spawn  # the tests' own driver of a sidecar over pipes


def cases(size: int) -> dict[str, tuple[str, dict]]:
    text = "x" * size
    return {"ignored": ("sunwell/tools", {"notAParam": text}), "lens": ("sunwell/tools", {"lens": text}),
            "trust": ("sunwell/tools", {"trust": text}), "session": ("sunwell/undo", {"session": text})}


async def timed(sidecar, msg_id: int, method: str, params: dict) -> tuple[float, int, int]:
    """(seconds from the request's last byte to its answer, the answer's bytes, stderr bytes written meanwhile)."""
    body = frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    logged = len(sidecar.stderr)
    await sidecar.send(body)
    start = time.perf_counter()
    answer = await sidecar.answer(msg_id)
    took = time.perf_counter() - start
    await asyncio.sleep(0.2)  # what it logs about the request
    return took, len(json.dumps(answer)), len(sidecar.stderr) - logged


async def main(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="sunwell-bench-"))
    workspace = folder / "ws"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(PYTHONPATH=str(args.server.resolve()), HOME=str(folder / "home"),
               XDG_CONFIG_HOME=str(folder / "config"), SUNWELL_DATA_DIR=str(folder / "data"),
               OPENAI_API_KEY="sk-bench")
    sidecar = await spawn(env, workspace, {"model": "openai:gpt-4o"})
    ids = iter(range(1, 10_000))
    await timed(sidecar, next(ids), "sunwell/commands", {})
    results: dict[str, list[tuple[float, int, int]]] = {name: [] for name in cases(0)}
    for _ in range(args.runs):
        for name, (method, params) in cases(args.megabytes * 1_000_000).items():
            results[name].append(await timed(sidecar, next(ids), method, params))
    after, _, _ = await timed(sidecar, next(ids), "sunwell/commands", {})
    await sidecar.finish()
    anchor = statistics.median(t for t, _, _ in results["ignored"])
    print(f"sunwell from {args.server}; {args.megabytes} MB in one parameter, {args.runs} runs, median")
    print(f"{'case':>8} {'answer after':>13} {'vs ignored':>11} {'answer':>14} {'stderr':>14}")
    for name, runs in results.items():
        took = statistics.median(t for t, _, _ in runs)
        print(f"{name:>8} {took:>11.2f} s {took / anchor:>10.1f}x {max(a for _, a, _ in runs):>8,} bytes "
              f"{max(e for _, _, e in runs):>8,} bytes")
    print(f"then sunwell/commands answered in {after * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--server", type=Path, default=ROOT / "server", help="the folder holding `sunwell`")
    asyncio.run(main(parser.parse_args()))
