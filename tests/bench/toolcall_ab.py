"""Two trees' engines on the same cases, side by side: `toolcall_eval.py` run for each in turn, a few cases at a time.

    python tests/bench/toolcall_ab.py --before /tmp/old/server --sets simple_python,multiple --limit 50 \
        [--chunk 5] [--data DIR] [--max-tokens N] [--out ab.json]

A change to how a request goes out (two requests where there was one, issue 32) costs time that a shared machine's
load swamps unless both trees run in the same minutes: the cases are cut into chunks, and each chunk runs under
both trees, in ABBA order (before then after, then after then before), as a subprocess of this tree's
`toolcall_eval.py` with `SUNWELL_SERVER` pointing at the tree's `server/`. The report: per set and tree, the score,
seconds and requests per case, and the time ratio after/before (the median of the per-case ratios, and of the
sums).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
AFTER = HERE.parents[1] / "server"


def run_chunk(tree: Path, name: str, ids: list[str], args: argparse.Namespace, out: Path) -> list[dict]:
    command = [sys.executable, str(HERE / "toolcall_eval.py"), "--sets", name, "--limit", str(args.limit),
               "--cases", ",".join(ids), "--modes", "sunwell", "--out", str(out), "--base-url", args.base_url]
    command += [f"--{key}={value}" for key, value in (("data", args.data), ("max-tokens", args.max_tokens),
                                                        ("timeout", args.timeout)) if value]  # fmt: skip
    env = {**os.environ, "SUNWELL_SERVER": str(tree)}
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text(encoding="utf-8"))["cases"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the other tree's server/ directory")
    parser.add_argument("--after", default=str(AFTER), help="this tree's server/ (default)")
    parser.add_argument("--sets", default="simple_python,multiple")
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=5, help="cases per subprocess")
    parser.add_argument("--base-url", default="http://127.0.0.1:18090/v1")
    parser.add_argument("--data", help="bfcl_eval/data directory")
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--timeout", type=float, default=400, help="seconds per case")
    parser.add_argument("--out", default="toolcall_ab.json")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from toolcall_eval import data_dir, load_cases  # this tree's case loader: the ids only

    trees = {"before": Path(args.before), "after": Path(args.after)}
    results: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            root = data_dir(args.data) if not name.startswith("own_") else Path()
            ids = [case.id for case in load_cases(root, name, args.limit or None)]
            results[name] = {"before": [], "after": []}
            for i in range(0, len(ids), args.chunk):
                order = ("before", "after") if (i // args.chunk) % 2 == 0 else ("after", "before")
                for tree in order:
                    cases = run_chunk(trees[tree], name, ids[i : i + args.chunk], args, Path(tmp) / "chunk.json")
                    results[name][tree] += cases
                print(f"{name}: {min(i + args.chunk, len(ids))}/{len(ids)}", file=sys.stderr)
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    print("| set | tree | cases | overall | s/case | requests/case |\n|---|---|---|---|---|---|")
    for name, by_tree in results.items():
        for tree, cases in by_tree.items():
            n = len(cases)
            print(f"| {name} | {tree} | {n} | {sum(c['correct'] for c in cases)}/{n} | "
                  f"{sum(c['seconds'] for c in cases) / n:.2f} | {sum(c['requests'] for c in cases) / n:.2f} |")
        before = {c["id"]: c for c in by_tree["before"]}
        ratios = [c["seconds"] / before[c["id"]]["seconds"] for c in by_tree["after"] if before[c["id"]]["seconds"]]
        total = sum(c["seconds"] for c in by_tree["after"]) / sum(c["seconds"] for c in by_tree["before"])
        print(f"\n{name}: time after/before, median per case {statistics.median(ratios):.2f}, of the sums "
              f"{total:.2f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
