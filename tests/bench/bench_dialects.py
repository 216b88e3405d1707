"""Tool-call dialects (issue 16): per format, the calls Sunwell finds in the corpus of tests/dialects/ (model outputs
written from each open-model family's documented format), read whole and streamed.

    python tests/bench/bench_dialects.py [--check] [--seeds 5] [--corpus docs|ported|heldout]

For each case the reply is read by the `CallDetector` the providers use, whole (one delta; an engine from before
issue 26 read it with its `extract_tool_calls`) and streamed: fed one character at a time, 3 and 7 at a time, and
in SEEDS random chunkings. Per format:

* exact: calls found with exactly the expected name and arguments, of the calls expected (streamed: in every
  chunking);
* false: calls found beyond those expected (a cut-off reply run, an example in prose executed...); streamed, the
  most any chunking found (a call found with other arguments is no false call: it is missing from `exact`);
* leaks: cases whose visible answer holds call text (a marker, `"arguments"`...; LEAK_MARKERS of the corpus);
* text: cases whose visible answer (and thinking) is the expected one: prose kept, call text removed.

`--corpus ported` measures the public parsers' own cases (tests/dialects/ported/, issue 32) per source and
format; `--corpus heldout` the ones gathered after the tuning (`heldout_*.yaml`), reported apart.

`--check` exits 1 unless every format is at least 98 % exact with no false call and no leak, complete and
streamed. Run it against another checkout's engine with PYTHONPATH=that/server (the report says which API it
found: before issue 16, `cut_off` and thinking did not exist).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# PYTHONPATH first: the engine measured may be another checkout's.
sys.path[:0] = [
    str(Path(__file__).parents[1]),
    *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
    str(Path(__file__).parents[2] / "server"),
]

from dialects.corpus import Case, cases, collapsed, leaks, ported_cases
from sunwell.models.base import TextDelta, ThinkingDelta, ToolCallDone
from sunwell.models.emulation import call_detector


@dataclass
class Read:
    calls: list[tuple[str, dict]]
    shown: str
    thinking: str


def read_complete(case: Case) -> Read:
    if not hasattr(call_detector, "extract_tool_calls"):  # since issue 26: the detector alone, given it all at once
        return read_streamed(case, [])
    try:
        out = call_detector.extract_tool_calls(case.text, case.tools, cut_off=case.cut_off)
    except TypeError:  # an engine from before issue 16
        out = call_detector.extract_tool_calls(case.text, list(case.tools))
    return Read([(c.name, c.arguments) for c in out.calls], out.remaining_text, getattr(out, "thinking", ""))


def read_streamed(case: Case, cuts: list[int]) -> Read:
    try:
        detector = call_detector.CallDetector(case.tools)
    except TypeError:
        detector = call_detector.CallDetector(list(case.tools))
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(case.text)], strict=True):
        events += detector.feed(case.text[a:b])
    try:
        events += detector.finish(cut_off=case.cut_off)
    except TypeError:
        events += detector.finish()
    calls = [
        (e.name, e.parsed if e.parsed is not None else {}) for e in events if isinstance(e, ToolCallDone)
    ]
    return Read(
        calls,
        "".join(e.text for e in events if isinstance(e, TextDelta)),
        "".join(e.text for e in events if isinstance(e, ThinkingDelta)),
    )


def score(case: Case, read: Read) -> tuple[int, int, bool, bool]:
    """(exact calls, false calls, leaked, text right)."""
    expected = Counter(_canonical(c) for c in case.calls)
    found = Counter(_canonical(c) for c in read.calls)
    exact = sum((expected & found).values())
    # The public parsers trim whitespace around calls each their own way (tests/models/emulation/test_dialects_ported.py)
    same = collapsed if case.source == "sunwell" else (lambda text: "".join(text.split()))
    text_right = same(read.shown) == same(case.shown) and same(read.thinking) == same(case.thinking)
    return exact, max(0, len(read.calls) - len(case.calls)), bool(leaks(case, read.shown)), text_right


def chunkings(case: Case, seeds: int) -> list[list[int]]:
    n = len(case.text)
    fixed = [list(range(size, n, size)) for size in (1, 3, 7)]
    rng = random.Random(case.name)
    return fixed + [sorted(rng.sample(range(1, n), min(n - 1, rng.randint(1, 40)))) for _ in range(seeds) if n > 1]


def _canonical(call: object) -> str:
    """A call as JSON with its keys in order and 42.0 written 42 (equal values, as the tests compare them)."""
    def plain(value: object) -> object:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(call), sort_keys=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--corpus", choices=("docs", "ported", "heldout"), default="docs")
    args = parser.parse_args()
    rows: dict[str, Counter] = {}
    chosen = {"docs": cases, "ported": lambda: ported_cases(held_out=False),
              "heldout": lambda: ported_cases(held_out=True)}[args.corpus]()
    for case in chosen:
        key = case.format if args.corpus == "docs" else f"{case.source}: {case.format}"
        row = rows.setdefault(key, Counter())
        row["cases"] += 1
        row["expected"] += len(case.calls)
        exact, false, leaked, text = score(case, read_complete(case))
        row.update(exact=exact, false=false, leaks=int(leaked), text=int(text))
        streamed = [score(case, read_streamed(case, cuts)) for cuts in chunkings(case, args.seeds)]
        row["s_exact"] += min(s[0] for s in streamed)
        row["s_false"] += max(s[1] for s in streamed)
        row["s_leaks"] += int(any(s[2] for s in streamed))
        row["s_text"] += int(all(s[3] for s in streamed))
    print(f"engine: {Path(call_detector.__file__).parents[2]}\n")
    print(
        "| format | cases | exact (complete) | false | leaks | text | exact (streamed) | false | leaks | text |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    total: Counter = Counter()
    failed = False
    for fmt, row in sorted(rows.items()):
        total.update(row)
        print(_line(fmt, row))
        failed |= _below_target(row)
    print(_line("**all**", total))
    return 1 if args.check and failed else 0


def _line(name: str, row: Counter) -> str:
    def pct(found: int) -> str:
        return (
            f"{found}/{row['expected']} ({100 * found / row['expected']:.0f} %)" if row["expected"] else "-"
        )

    return (
        f"| {name} | {row['cases']} | {pct(row['exact'])} | {row['false']} | {row['leaks']} | "
        f"{row['text']}/{row['cases']} | {pct(row['s_exact'])} | {row['s_false']} | {row['s_leaks']} | "
        f"{row['s_text']}/{row['cases']} |"
    )


def _below_target(row: Counter) -> bool:
    expected = row["expected"] or 1
    return (
        row["exact"] < 0.98 * expected
        or row["s_exact"] < 0.98 * expected
        or row["false"]
        or row["s_false"]
        or row["leaks"]
        or row["s_leaks"]
    )


if __name__ == "__main__":
    sys.exit(main())
