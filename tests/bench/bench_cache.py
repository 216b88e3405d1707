"""Benchmark of prompt caching (issue 42): what a tool session's input is billed, Sunwell's breakpoints against
Copilot Chat's and against none, and how much of each OpenAI request is read from the cache.

    python tests/bench/bench_cache.py [--rounds 10 30 100] [--wide 5] [--check]

One session per row, in process, through the real engine and the real `anthropic` / `openai` SDKs against the fake
provider on 127.0.0.1: the user asks for ROUNDS files to be read, the model reads one 6 KB file per round
(`read_file` of a distinct generated Python module), then answers, and the user thanks it in a second turn. Every
request is recorded as sent and billed afterwards by tests/fake_cache.py, the same accounting the fake reports as
usage (a quarter of each block's canonical JSON bytes a token; Anthropic: breakpoints, the 20-block look-back, the
model's 1,024-token minimum, 5-minute entries; OpenAI: shared prefixes of at least 1,024 tokens in steps of 128 per
`prompt_cache_key`). The requests are two seconds apart on the billing clock.

Anthropic (claude-sonnet-4-6), the input in input-token units (a token read from the cache 0.1, written 1.25,
the rest 1), on the very same requests with their breakpoints placed three ways:

* `sunwell`: as Sunwell sent them (the last tool, the system, the previous user turn, the last block);
* `4-bp`: Copilot Chat's placement (vscode PR 315505): the last tool, the last system block, the last block of each
  of the two latest messages;
* `none`: no breakpoint (Sunwell before issue 42).

`--wide N` adds a session of N rounds in which the model reads 24 small files at once in every round (24 calls in one
reply): more blocks between two requests than the 20-block look-back reaches.

OpenAI (gpt-4o): the share of each request after the first read from the cache (`cached_tokens / prompt_tokens`),
and of what it repeats of the request before it (the reusable part: its prefix shared with that request).

What a change mid-session costs (`--changes`, on the 30-round session's requests, the change made from round 15 on):
a tool added (an MCP server started, an API learned), the system prompt changed (`::focus`, an edited AGENTS.md), a
pause of six minutes (Anthropic's entries expire after five).

`--check` exits 1 when Sunwell costs more than the 4-breakpoint placement on any row, the usage Sunwell read back
differs from the fake's bill, or an OpenAI request reads less than 90 % of what it repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "tests"))

from fake_cache import AnthropicCache, Billed, OpenAICache, breakpoints, openai_prompt
from fake_provider import Call, FakeProvider, Reply

ANTHROPIC = "anthropic:claude-sonnet-4-6"
OPENAI = "openai:gpt-4o"
EPHEMERAL = {"type": "ephemeral"}
SECONDS_APART = 2.0


def module(n: int, size: int = 6_000) -> str:
    """A Python module of about `size` bytes, different for each `n`."""
    lines, i = [], 0
    while sum(map(len, lines)) < size:
        lines.append(f"def step_{n}_{i}(value: int) -> int:\n    \"\"\"Step {i} of module {n}.\"\"\"\n"
                     f"    return value * {i + n} + {i * 7 % 13}\n\n")
        i += 1
    return "".join(lines)


class Model:
    """Round k reads file k (or, wide, `per_round` files at once); then it answers; then it welcomes a thanks."""

    def __init__(self, rounds: int, per_round: int) -> None:
        self.rounds, self.per_round, self.round = rounds, per_round, 0

    def __call__(self, body: dict) -> Reply:
        self.round += 1
        if self.round > self.rounds + 1:
            return Reply(text="You are welcome.")
        if self.round > self.rounds:
            return Reply(text="I read every file: each defines small arithmetic steps.")
        first = (self.round - 1) * self.per_round
        return Reply(tool_calls=[Call("read_file", json.dumps({"path": f"m{n:03d}.py"}))
                                 for n in range(first, first + self.per_round)])


async def run_session(provider: str, rounds: int, per_round: int, size: int) -> tuple[list[dict], list]:
    """The requests of one session as sent, and the `done` events of its two turns."""
    from sunwell.agent.engine import Engine
    from sunwell.config import RateLimits, Settings

    with tempfile.TemporaryDirectory() as tmp, FakeProvider(cache=True) as fake:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for n in range(rounds * per_round):
            (workspace / f"m{n:03d}.py").write_text(module(n, size))
        os.environ.update(XDG_CONFIG_HOME=str(Path(tmp) / "config"), ANTHROPIC_BASE_URL=fake.url,
                          ANTHROPIC_API_KEY="sk-ant-bench", OPENAI_BASE_URL=f"{fake.url}/v1",
                          OPENAI_API_KEY="sk-bench")
        big = 1_000_000
        settings = Settings(model=provider, data_dir=Path(tmp) / "data", approval="auto", max_tool_turns=rounds + 5,
                            rate_limits=RateLimits(tool_calls_per_min=big, writes_per_min=big, shell_per_min=big,
                                                   bytes_written=big))
        engine = Engine(settings, workspace)
        model = Model(rounds, per_round)
        fake.script(*[model] * (rounds + 2))
        first = await engine.run_turn(f"Read the {rounds * per_round} modules m000.py and on, one after another",
                                      lambda event: None)
        second = await engine.run_turn("Thanks", lambda event: None, session=first.session)
        await engine.aclose()
        bodies = [r.body for r in fake.requests]
        billed = [r.billed for r in fake.requests]
    return bodies, [first, second, billed]


# ---- Anthropic: the same requests with their breakpoints placed three ways ------------------------------------------


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def _mark_last(blocks: list) -> None:
    for block in reversed(blocks):
        if isinstance(block, dict) and block.get("type") not in ("thinking", "redacted_thinking"):
            block["cache_control"] = EPHEMERAL
            return


def four_breakpoints(body: dict) -> dict:
    """Copilot Chat's placement: the last tool, the last system block, the last block of the two latest messages."""
    out = copy.deepcopy(strip(body))
    if out.get("tools"):
        out["tools"][-1]["cache_control"] = EPHEMERAL
    if out.get("system"):
        _mark_last(out["system"])
    for message in out["messages"][-2:]:
        _mark_last(message["content"])
    return out


def bill(bodies: list[dict], cache, pause_at: int | None = None) -> list[Billed]:
    """Each request billed `SECONDS_APART` after the last; six minutes more before request `pause_at`."""
    times = [n * SECONDS_APART + (360.0 if pause_at is not None and n >= pause_at else 0.0) for n in range(len(bodies))]
    clock = iter(times)
    cache.entries.clock = lambda: next(clock)
    return [cache.bill(body) for body in bodies]


def changed(bodies: list[dict], at: int, change) -> list[dict]:
    """The requests with `change` made to each from request `at` on."""
    out = [copy.deepcopy(body) for body in bodies]
    for body in out[at:]:
        change(body)
    return out


def add_tool(body: dict) -> None:
    body["tools"][-1].pop("cache_control", None)
    body["tools"].append({"name": "docs__search", "description": "Search the docs.", "cache_control": EPHEMERAL,
                          "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}})


def focus(body: dict) -> None:
    body["system"][0]["text"] += "\n\nFocus: the parser only."


def change_costs(rounds: int, size: int) -> None:
    bodies, _ = asyncio.run(run_session(ANTHROPIC, rounds, 1, size))
    base = priced(bill(bodies, AnthropicCache()))
    at = rounds // 2
    print(f"\nWhat a change at round {at} of {rounds} costs (Anthropic, Sunwell's breakpoints; the session: {base:,.0f})")
    for label, variant, pause in (("a tool added", changed(bodies, at, add_tool), None),
                                  ("the system prompt changed", changed(bodies, at, focus), None),
                                  ("six idle minutes", bodies, at)):
        billed = bill(variant, AnthropicCache(), pause)
        extra = priced(billed) - base
        print(f"  {label:<26} request {at}: reads {billed[at].cache_read:>7,} writes {billed[at].cache_write:>7,}"
              f"  +{extra:,.0f} (+{extra / base:.1%} of the session)")


def priced(billed: list[Billed]) -> float:
    return sum(b.price() for b in billed)


def anthropic_row(rounds: int, per_round: int, size: int) -> dict:
    bodies, (first, second, reported) = asyncio.run(run_session(ANTHROPIC, rounds, per_round, size))
    sunwell = bill(bodies, AnthropicCache())
    copilot = bill([four_breakpoints(b) for b in bodies], AnthropicCache())
    none = bill([strip(b) for b in bodies], AnthropicCache())
    read_back = first.usage + second.usage
    reported_read = sum(b.cache_read for b in reported)
    row = {"rounds": rounds, "per_round": per_round, "requests": len(bodies),
            "tokens": sum(b.total for b in none), "none": priced(none), "4-bp": priced(copilot),
            "sunwell": priced(sunwell),
            "breaks": [i + 1 for i, (before, after) in enumerate(itertools.pairwise(sunwell))
                       if after.cache_read < before.total],
            "max_marks": max(len(breakpoints(b)) for b in bodies),
            "usage_matches": (read_back.cache_read_tokens == reported_read == sum(b.cache_read for b in sunwell)
                              and read_back.cache_write_tokens == sum(b.cache_write for b in reported))}
    # what the requests that had to write the conversation again (room made in the window) cost
    row["break_share"] = sum(sunwell[i].price() for i in row["breaks"]) / row["sunwell"]
    return row


# ---- OpenAI: the share of each request read from the cache -------------------------------------------------------


def shared_tokens(before: dict, after: dict) -> int:
    """The tokens of `after`'s prompt that repeat `before`'s from the start."""
    a, b = openai_prompt(before).encode(), openai_prompt(after).encode()
    low, high = 0, min(len(a), len(b))
    while low < high:  # the longest common prefix, by bisection over slices compared in C
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low // 4


def openai_row(rounds: int, size: int) -> dict:
    bodies, (first, second, reported) = asyncio.run(run_session(OPENAI, rounds, 1, size))
    billed = bill(bodies, OpenAICache())
    whole = [b.cache_read / b.total for b in billed[1:]]
    reusable = [b.cache_read / max(shared_tokens(before, after), 1)
                for before, after, b in zip(bodies, bodies[1:], billed[1:])]
    keys = {body.get("prompt_cache_key") for body in bodies}
    return {"rounds": rounds, "requests": len(bodies), "whole_min": min(whole), "whole_mean": statistics.mean(whole),
            "whole_last": whole[-2], "reusable_min": min(reusable),
            "session": sum(b.cache_read for b in billed) / sum(b.total for b in billed), "keys": len(keys),
            "usage_matches": (first.usage + second.usage).cache_read_tokens == sum(b.cache_read for b in reported)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--wide", type=int, default=5, help="rounds of the session reading 24 files a round (0: none)")
    parser.add_argument("--size", type=int, default=6_000, help="bytes of each file read")
    parser.add_argument("--changes", type=int, default=30, help="rounds of the session changed midway (0: none)")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    ok = True
    print(f"Anthropic ({ANTHROPIC}): billed input in input-token units (read 0.1, written 1.25, the rest 1)")
    print(f"{'rounds':>10} {'requests':>8} {'tokens':>10} {'none':>11} {'4-bp':>10} {'sunwell':>10} "
          f"{'sw/4-bp':>8} {'sw/none':>8} {'breaks':>6} {'their share':>11} {'marks':>5} {'usage':>6}")
    rows = [anthropic_row(r, 1, args.size) for r in args.rounds]
    if args.wide:
        rows.append(anthropic_row(args.wide, 24, 600))
    for row in rows:
        label = f"{row['rounds']}" + (f"×{row['per_round']}" if row["per_round"] > 1 else "")
        ratio = row["sunwell"] / row["4-bp"]
        ok &= ratio <= 1.0 + 1e-9 and row["usage_matches"] and row["max_marks"] <= 4
        print(f"{label:>10} {row['requests']:>8} {row['tokens']:>10,} {row['none']:>11,.0f} {row['4-bp']:>10,.0f} "
              f"{row['sunwell']:>10,.0f} {ratio:>7.3f}x {row['sunwell'] / row['none']:>7.3f}x {len(row['breaks']):>6} "
              f"{row['break_share']:>11.1%} "
              f"{row['max_marks']:>5} {'same' if row['usage_matches'] else 'DIFF':>6}")
    print(f"\nOpenAI ({OPENAI}): share of each request after the first read from the cache")
    print(f"{'rounds':>10} {'requests':>8} {'min':>7} {'mean':>7} {'last':>7} {'of reusable, min':>17} "
          f"{'session':>8} {'keys':>5} {'usage':>6}")
    for rounds in args.rounds:
        row = openai_row(rounds, args.size)
        ok &= row["reusable_min"] >= 0.9 and row["usage_matches"] and row["keys"] == 1
        print(f"{rounds:>10} {row['requests']:>8} {row['whole_min']:>7.1%} {row['whole_mean']:>7.1%} "
              f"{row['whole_last']:>7.1%} {row['reusable_min']:>17.1%} {row['session']:>8.1%} {row['keys']:>5} "
              f"{'same' if row['usage_matches'] else 'DIFF':>6}")
    if args.changes:
        change_costs(args.changes, args.size)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
