"""Benchmark of the session event log: append latency, and restoring a long session.

    python tests/bench/bench_session_log.py [--dir DIR] [--check]

Appends go through the real store to a real SQLite file (WAL, synchronous=NORMAL), in DIR (default: a temp dir;
pass a directory on the disk you care about). The events are what a turn logs: user and assistant messages, tool
calls, approvals, tool results of realistic sizes (a few hundred bytes to 40 KB), notices, `done`.
Targets: append p99 <= 2 ms; restoring a 10,000-event session (`messages()` or `events()`) <= 100 ms.
With --check the exit code is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from sunwell.agent.sessions import SessionStore
from sunwell.wire.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

APPEND_TARGET_MS = 2.0
RESTORE_TARGET_MS = 100.0
OUTPUT_SIZES = [200, 800, 2_000, 4_000, 12_000, 40_000]
OUTPUT_WEIGHTS = [25, 30, 25, 12, 6, 2]
SOURCE = "".join(f"{i:>4}  line of source code number {i}\n" for i in range(2_000))

Event = tuple[str, Message | tuple[str, str, dict]]


def turn_events(rng: random.Random, turn: int) -> Iterator[Event]:
    """One realistic turn: a question, one to three tool calls with their results, an answer, `done`."""
    yield "message", UserMessage(text=f"Turn {turn}: find where the config is loaded and explain the order.")
    for n in range(rng.randint(1, 3)):
        call_id = f"call_{turn}_{n}"
        path = f"src/module_{rng.randint(0, 99)}.py"
        call = ToolCall(id=call_id, name="read_file", arguments={"path": path, "limit": 200})
        output = SOURCE[: rng.choices(OUTPUT_SIZES, OUTPUT_WEIGHTS)[0]]
        lines = output.count("\n")
        yield "message", AssistantMessage(text="Let me look.", tool_calls=[call])
        arguments = {"path": path, "limit": 200}
        yield "event", ("toolCall", f'read_file(path="{path}")', {"callId": call_id, "arguments": arguments})
        yield (
            "event",
            ("approval", "allow by policy", {"callId": call_id, "decision": "allow", "by": "policy"}),
        )
        result = {"callId": call_id, "name": "read_file", "ok": True, "output": output, "durationMs": 3}
        yield "event", ("toolResult", f"ok read_file {lines} lines", result)
        yield "message", ToolResultMessage(call_id=call_id, name="read_file", output=output)
    if rng.random() < 0.2:
        notice = {"level": "info", "code": "repair", "message": "repaired the JSON of a tool call"}
        yield "event", ("notice", "info: repaired the JSON of a tool call", notice)
    yield (
        "message",
        AssistantMessage(text="The config is loaded in this order: defaults, user, workspace. " * 8),
    )
    yield "event", ("done", "completed", {"status": "completed", "toolCalls": 2, "usage": None})


def events(seed: int) -> Iterator[Event]:
    rng, turn = random.Random(seed), 0
    while True:
        turn += 1
        yield from turn_events(rng, turn)


def append(store: SessionStore, session: str, turn: int, seq: int, event: Event) -> None:
    kind, payload = event
    if kind == "message":
        store.append_message(session, f"t{turn}", seq, payload)
    else:
        event_type, content, data = payload
        store.append(session, f"t{turn}", seq, event_type, content, {"type": event_type, **data})


def fill(store: SessionStore, session: str, count: int) -> list[float]:
    """Append `count` events; the latency of each in milliseconds."""
    latencies = []
    turn, seq = 1, 0
    for index, event in zip(range(count), events(seed=count)):
        started = time.perf_counter()
        append(store, session, turn, seq, event)
        latencies.append((time.perf_counter() - started) * 1000)
        seq += 1
        if event[0] == "event" and event[1][0] == "done":
            turn, seq = turn + 1, 0
    return latencies


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def timed(run, repeat: int = 5) -> tuple[float, float, int]:
    """(first run, best run) in ms, and the size of what came back."""
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = len(run())
        times.append((time.perf_counter() - started) * 1000)
    return times[0], min(times), size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where to put the database (default: a temp dir)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        db_path = Path(tmp) / "sessions.db"
        with SessionStore(db_path) as store:
            session = store.create("append latency")
            latencies = fill(store, session, 2_000)
            long_session = store.create("restore")
            started = time.perf_counter()
            fill(store, long_session, 10_000)
            fill_seconds = time.perf_counter() - started
        size_mb = db_path.stat().st_size / 1e6

        with SessionStore(db_path) as store:  # a new store, as a new process would open it
            first_messages, best_messages, n_messages = timed(lambda: store.messages(long_session))
            first_events, best_events, n_events = timed(lambda: store.events(long_session))

    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    rows: list[tuple[str, float, float | None]] = [  # what, milliseconds, target
        ("append p50 (2,000 events)", p50, APPEND_TARGET_MS),
        ("append p99 (2,000 events)", p99, APPEND_TARGET_MS),
        ("append max (2,000 events)", max(latencies), None),
        (f"messages() first ({n_messages:,} messages)", first_messages, RESTORE_TARGET_MS),
        ("messages() best of 5", best_messages, RESTORE_TARGET_MS),
        (f"events() first ({n_events:,} events)", first_events, RESTORE_TARGET_MS),
        ("events() best of 5", best_events, RESTORE_TARGET_MS),
    ]
    missed = False
    print(f"{'measure':<36} {'ms':>9} {'target':>8}  ")
    for what, value, target in rows:
        verdict = "" if target is None else "ok" if value <= target else "MISSED"
        missed |= verdict == "MISSED"
        target_text = "" if target is None else f"<= {target:g}"
        print(f"{what:<36} {value:>9.3f} {target_text:>8}  {verdict}")
    print(
        f"(mean append {statistics.fmean(latencies):.3f} ms; 10,000 appends took {fill_seconds:.2f} s; "
        f"database {size_mb:.1f} MB)"
    )
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
