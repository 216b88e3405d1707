"""Fitting many tools to a window (issue 40, item 5): the time of one `fit_tools` call at 50 to 50,000 tools.

    python tests/bench/bench_fitting.py [--sizes 50,500,5000,50000] [--runs 3] [--server DIR]

The tools are the core tools plus N operations of a learned API, shaped as `sunwell tools learn` makes them (a
name, a summary of two sentences, a required `id` and two optional parameters with descriptions), fitted as a turn
of a small local model fits them (`--window`, 8,192 tokens by default, a quarter for the tools, so that even 50
tools need fitting; the learned ones `topical`, the agent's conveniences `expendable`) for a request that names one
resource in a thousand: most operations are left out for not being about it, the ones about it are trimmed, then
the least relevant of them dropped until they fit.

Printed per size: the best of `--runs` calls, the growth from the size before (a linear fitting grows about as the
sizes do, 10x; the fitting before issue 40 grew 70x from 50 to 500, re-serializing every kept tool at each step),
and the ratio to serializing the whole list once (`tools_tokens`), the least any fitting must do. `--server DIR`
imports `sunwell` from DIR instead of this checkout, to measure an older version with the same tools.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUEST = "show me r17 number 25"


def learned_tools(n: int) -> list:
    from sunwell.wire.messages import ToolSpec

    optional = {"type": "integer", "description": "How many per page (default 20); the API caps it at 100."}
    return [ToolSpec(
        name=f"huge__get_r{i % 1000}_v{i // 1000}",
        description=f"Get one r{i % 1000} resource of version {i // 1000} by its id. Returns everything the API "
                    "knows about it, with links to the related resources.",
        parameters={"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string", "description": "The resource's name or number."},
            "limit": optional, "offset": {**optional, "description": "Where the page of related resources starts."}}},
    ) for i in range(n)]


def best_of(runs: int, call) -> tuple[float, object]:
    """The shortest time of `runs` calls, and what the last returned."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,500,5000,50000", help="numbers of learned operations")
    parser.add_argument("--runs", type=int, default=3, help="calls per size; the best is shown")
    parser.add_argument("--window", type=int, default=8192, help="the model's context window, in tokens")
    parser.add_argument("--server", type=Path, default=ROOT / "server", help="the folder holding `sunwell`")
    args = parser.parse_args()
    sys.path.insert(0, str(args.server.resolve()))
    from sunwell.models.fitting import fit_tools
    from sunwell.models.tokens import tools_tokens
    from sunwell.tools.registry import CORE_TOOLS

    core = [tool.spec for tool in CORE_TOOLS]
    expendable = {tool.name for tool in CORE_TOOLS if tool.expendable}
    print(f"sunwell from {args.server}; a {args.window:,}-token window; the request: {REQUEST!r}")
    print(f"{'tools':>7} {'kept':>5} {'fit_tools':>11} {'growth':>8} {'one tools_tokens':>17} {'fit / one':>10}")
    previous = None
    for size in (int(s) for s in args.sizes.split(",")):
        tools = [*core, *learned_tools(size)]
        topical = {tool.name for tool in tools[len(core):]}
        took, (kept, _) = best_of(args.runs, partial(fit_tools, tools, context_window=args.window, user_text=REQUEST,
                                                     expendable=expendable, topical=topical))
        once, _ = best_of(args.runs, partial(tools_tokens, tools))
        growth = f"{took / previous:7.1f}x" if previous else f"{'':>8}"
        print(f"{len(tools):>7,} {len(kept):>5} {took * 1000:>9.1f}ms {growth} {once * 1000:>15.1f}ms "
              f"{took / once:>9.1f}x", flush=True)
        previous = took
    return 0


if __name__ == "__main__":
    sys.exit(main())
