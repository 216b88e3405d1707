"""Benchmark of the tool loop's overhead: Sunwell's engine versus a bare loop of the same SDK calls.

    python tests/bench/bench_loop.py [--reps N] [--rounds N] [--in-process] [--check]
    python tests/bench/bench_loop.py --breakdown [--reps N]  # where Sunwell's time goes, by component
    python tests/bench/bench_loop.py --profile [--top N]     # the same, with cProfile
    python tests/bench/bench_loop.py --startup               # `python -m sunwell run --help`, import sunwell.cli

One turn = ROUNDS (default 50) tool rounds against the scripted fake provider on 127.0.0.1: each answer is one
`read_file` call of a different small file of a temp workspace (different, so Sunwell's "same call again" shortcut
never answers from memory), then a final text answer. Both variants speak OpenAI Chat Completions through the real
`openai` SDK and send the same system prompt, tool list and `max_completion_tokens`, so the bytes on the wire match:

* `sunwell`: `Engine(settings, workspace).run_turn(...)` in process: session log in SQLite, events, jsonschema
  validation, the jail, rate limiter (limits raised out of the way), audit log; `openai:gpt-4o` with
  OPENAI_BASE_URL / OPENAI_API_KEY pointing at the fake.
* `bare`: a dozen lines over `AsyncOpenAI(max_retries=0)`: stream, accumulate tool call deltas by index,
  `open(path).read()`, append the tool message, repeat.

The fake server runs in a child process (the default), so its own work (SSE framing, conversation validation)
neither competes for this process's GIL nor counts as client CPU; `--in-process` runs it as a thread instead.
The variants alternate (ABBA order) over `--reps` repetitions after one warm-up each; the report gives the median
wall time per variant, the spread (min..max), the median of the per-pair ratios sunwell/bare and the client CPU time.
Target: ratio <= 1.2. With --check the exit code is 1 when it is missed.

`--breakdown` wraps Sunwell's parts (session log, SQLite, SDK client creation, message mapping, validation, jail,
tool run, audit log...) with timers and reports milliseconds per turn for each; `--startup` times the CLI as a
subprocess and lists the heaviest imports of `sunwell.cli`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import multiprocessing
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "tests"))

from fake_provider import Call, FakeProvider, Reply

RATIO_TARGET = 1.2
ROUNDS = 50
MODEL = "gpt-4o"
API_KEY = "bench-key"
QUESTION = "Read every module under src/ and tell me what they do."
ANSWER = "They each define a small function; nothing else."
SCRIPTED = 100_000  # answers queued in the fake: far more than any run asks for


# --------------------------------------------------------------------------- the fake's side


def answer(body: dict) -> Reply:
    """The model: round n (= tool results seen so far) reads src/mod_n.py; after ROUNDS rounds, the answer."""
    done = sum(1 for m in body["messages"] if m.get("role") == "tool")
    if done >= ROUNDS or "tools" not in body:
        return Reply(text=ANSWER)
    return Reply(tool_calls=[Call("read_file", json.dumps({"path": f"src/mod_{done:02d}.py"}))])


def _serve(url_queue: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with FakeProvider() as fake:
        fake.script(*[answer] * SCRIPTED)
        url_queue.put(fake.url)
        stop.wait()


class FakeServer:
    """The fake provider in a child process (default) or as a thread of this one."""

    def __init__(self, in_process: bool) -> None:
        self.in_process = in_process

    def __enter__(self) -> str:
        if self.in_process:
            self._fake = FakeProvider().start()
            self._fake.script(*[answer] * SCRIPTED)
            return self._fake.url
        context = multiprocessing.get_context("fork")
        queue, self._stop = context.Queue(), context.Event()
        self._child = context.Process(target=_serve, args=(queue, self._stop), daemon=True)
        self._child.start()
        return queue.get(timeout=30)

    def __exit__(self, *_: object) -> None:
        if self.in_process:
            self._fake.stop()
        else:
            self._stop.set()
            self._child.join(timeout=10)


# --------------------------------------------------------------------------- the workspace


def make_workspace(root: Path, rounds: int) -> None:
    src = root / "src"
    src.mkdir(parents=True)
    for n in range(rounds):
        body = "".join(f"    total += {i} * x  # step {i}\n" for i in range(30))
        (src / f"mod_{n:02d}.py").write_text(f'"""Module {n}."""\n\n\ndef f{n}(x):\n    total = 0\n{body}'
                                             "    return total\n")


# --------------------------------------------------------------------------- the two variants


class SunwellTurn:
    def __init__(self, url: str, workspace: Path, data_dir: Path, rounds: int) -> None:
        from sunwell.config import RateLimits, Settings

        os.environ["OPENAI_BASE_URL"] = f"{url}/v1"  # read by create_provider when the turn starts
        os.environ["OPENAI_API_KEY"] = API_KEY
        unlimited = 1_000_000
        self.settings = Settings(
            model=f"openai:{MODEL}", data_dir=data_dir, max_tool_turns=rounds + 10,
            rate_limits=RateLimits(tool_calls_per_min=unlimited, writes_per_min=unlimited,
                                   shell_per_min=unlimited, bytes_written=unlimited),
        )
        self.workspace, self.rounds = workspace, rounds

    async def __call__(self) -> None:
        from sunwell.agent.engine import Engine

        engine = Engine(self.settings, self.workspace)
        done = await engine.run_turn(QUESTION, lambda event: None)  # a front end would render each event here
        engine.store.close()  # as the CLI does when it exits (SQLite checkpoints the WAL)
        if done.status != "completed" or done.tool_calls != self.rounds:
            raise SystemExit(f"sunwell turn went wrong: {done.status} after {done.tool_calls} calls: {done.error}")


class BareTurn:
    def __init__(self, url: str, workspace: Path, rounds: int, system: str, tools: list[dict]) -> None:
        self.url, self.workspace, self.rounds, self.system, self.tools = f"{url}/v1", workspace, rounds, system, tools

    async def __call__(self) -> None:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=self.url, api_key=API_KEY, max_retries=0)
        messages: list[dict] = [{"role": "system", "content": self.system}, {"role": "user", "content": QUESTION}]
        reads = 0
        while True:
            stream = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=self.tools, tool_choice="auto", stream=True,
                stream_options={"include_usage": True}, max_completion_tokens=4096)
            text, calls = "", {}
            async for chunk in stream:
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for delta in choice.delta.tool_calls or []:
                        call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = delta.id or call["id"]
                        if delta.function:
                            call["name"] += delta.function.name or ""
                            call["arguments"] += delta.function.arguments or ""
            if not calls:
                break
            messages.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls.values()]})
            for c in calls.values():
                # blocking on purpose: the few lines a hand-written loop would have
                with open(self.workspace / json.loads(c["arguments"])["path"]) as f:  # noqa: ASYNC230
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": f.read()})
                reads += 1
        await client.close()
        if reads != self.rounds or text != ANSWER:
            raise SystemExit(f"bare turn went wrong: {reads} reads, answer {text!r}")


def request_shape(workspace: Path, data_dir: Path, rounds: int) -> tuple[str, list[dict]]:
    """The system prompt and tool list of Sunwell's first request, so the bare loop sends the same bytes."""
    with FakeProvider() as fake:
        fake.script(*[answer] * (rounds + 1))
        asyncio.run(SunwellTurn(fake.url, workspace, data_dir, rounds)())
        body = fake.requests[0].body
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    return system, body["tools"]


# --------------------------------------------------------------------------- measuring


async def timed(turn: Callable) -> tuple[float, float]:
    """(wall, CPU of this process) in ms for one turn."""
    wall, cpu = time.perf_counter(), time.process_time()
    await turn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


async def compare(sunwell: SunwellTurn, bare: BareTurn, reps: int) -> dict[str, list[tuple[float, float]]]:
    await sunwell()  # warm-up: imports, first SQLite file, first connection
    await bare()
    results: dict[str, list[tuple[float, float]]] = {"sunwell": [], "bare": []}
    for rep in range(reps):
        order = [("sunwell", sunwell), ("bare", bare)]
        for name, turn in order if rep % 2 == 0 else order[::-1]:  # ABBA: drift hits both alike
            results[name].append(await timed(turn))
    return results


def report(results: dict[str, list[tuple[float, float]]], rounds: int) -> float:
    print(f"{rounds} tool rounds + 1 answer per turn, {len(results['bare'])} repetitions (ABBA order)")
    print(f"{'variant':<10} {'wall median':>12} {'min..max':>17} {'per request':>12} {'CPU median':>11}")
    for name, rows in results.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        median = statistics.median(walls)
        print(f"{name:<10} {median:>9.1f} ms {min(walls):>7.1f}..{max(walls):<7.1f} ms "
              f"{median / (rounds + 1):>9.2f} ms {statistics.median(cpus):>8.1f} ms")
    ratios = [s / b for (s, _), (b, _) in zip(results["sunwell"], results["bare"], strict=True)]
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= RATIO_TARGET else "MISSED"
    print(f"ratio sunwell/bare: median {ratio:.2f}x (pairs {min(ratios):.2f}..{max(ratios):.2f}), "
          f"target <= {RATIO_TARGET}x  {verdict}")
    cpu = [s / b for (_, s), (_, b) in zip(results["sunwell"], results["bare"], strict=True)]
    print(f"CPU ratio sunwell/bare (this process; the fake's work is not in it when it runs in a child): "
          f"median {statistics.median(cpu):.2f}x (pairs {min(cpu):.2f}..{max(cpu):.2f})")
    extra = statistics.median(w for w, _ in results["sunwell"]) - statistics.median(w for w, _ in results["bare"])
    print(f"Sunwell's extra wall time: {extra:.1f} ms per turn, {extra / rounds:.2f} ms per tool round")
    return ratio


# Where Sunwell's time goes: (module, attribute, label). Indented labels are part of the row above them.
PROBES = [
    ("sunwell.agent.turn", "TurnLog.emit", "events: emit (wire dict, log row, sink)"),
    ("sunwell.agent.turn", "TurnLog.record", "messages: record (pydantic JSON, log row)"),
    ("sunwell.agent.sessions", "SessionStore._insert", "  of these two: SQLite insert + commit"),
    ("sunwell.agent.sessions", "SessionStore.__init__", "session store: open"),
    ("sunwell.agent.sessions", "SessionStore.create", "session store: create session"),
    ("sunwell.agent.sessions", "SessionStore.messages", "session store: load history"),
    ("sunwell.agent.sessions", "SessionStore.close", "session store: close"),
    ("sunwell.models.providers.openai_chat", "OpenAIChat.__init__", "SDK client created (SSL context)"),
    ("sunwell.models.providers.openai_chat", "map_messages", "history -> Chat Completions messages"),
    ("sunwell.models.providers.openai_chat", "ChatStreamReducer.feed", "stream reducer"),
    ("sunwell.agent.loop", "validate_arguments", "jsonschema validation"),
    ("sunwell.agent.loop", "coerce_arguments", "argument coercion"),
    ("sunwell.agent.gate", "Gate.admit", "gate (rate limiter)"),
    ("sunwell.agent.loop", "execute", "tool run (read_file, worker thread)"),
    ("sunwell.tools.workspace.jail", "Jail.resolve", "  of which the jail"),
    ("sunwell.tools.policy.audit", "AuditLog.record", "audit log line"),
]


def instrument(totals: dict[str, list[float]]) -> None:
    """Wrap every probe that exists (the code moves; missing ones are skipped) with a timer into `totals`."""
    import importlib
    import inspect

    for module_name, attribute, label in PROBES:
        owner: object = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        original = getattr(owner, name, None)
        if original is None:
            continue
        cell = totals.setdefault(label, [0.0, 0])

        if inspect.iscoroutinefunction(original):
            async def wrapper(*args, __original=original, __cell=cell, **kwargs):
                started = time.perf_counter()
                try:
                    return await __original(*args, **kwargs)
                finally:
                    __cell[0] += time.perf_counter() - started
                    __cell[1] += 1
        elif inspect.isgeneratorfunction(original):
            def wrapper(*args, __original=original, __cell=cell, **kwargs):  # only the time spent inside
                generator = __original(*args, **kwargs)
                __cell[1] += 1
                while True:
                    started = time.perf_counter()
                    try:
                        item = next(generator)
                    except StopIteration:
                        __cell[0] += time.perf_counter() - started
                        return
                    __cell[0] += time.perf_counter() - started
                    yield item
        else:
            def wrapper(*args, __original=original, __cell=cell, **kwargs):
                started = time.perf_counter()
                try:
                    return __original(*args, **kwargs)
                finally:
                    __cell[0] += time.perf_counter() - started
                    __cell[1] += 1
        setattr(owner, name, wrapper)


async def breakdown(sunwell: SunwellTurn, turns: int, rounds: int) -> None:
    await sunwell()  # warm-up, not counted
    totals: dict[str, list[float]] = {}
    instrument(totals)
    walls = [(await timed(sunwell))[0] for _ in range(turns)]
    turn_ms = statistics.fmean(walls)
    print(f"Sunwell turn: {turn_ms:.1f} ms on average over {turns} turns of {rounds} tool rounds (instrumented)")
    print(f"{'component':<44} {'ms/turn':>8} {'% turn':>7} {'calls/turn':>11} {'us/call':>8}")
    for label, (seconds, calls) in totals.items():
        if not calls:
            continue
        per_turn = seconds * 1000 / turns
        print(f"{label:<44} {per_turn:>8.2f} {per_turn / turn_ms:>7.1%} {calls / turns:>11.0f} "
              f"{seconds * 1e6 / calls:>8.0f}")
    print("(the rest is the openai SDK, HTTP and the event loop: the same work as the bare loop's)")


async def profile(sunwell: SunwellTurn, turns: int, top: int) -> None:
    await sunwell()  # warm-up outside the profile
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        await sunwell()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    print(f"cProfile of {turns} Sunwell turns (event-loop thread only; tool reads run in worker threads)")
    print(out.getvalue())


def startup(reps: int, top: int) -> None:
    """Wall time of the CLI as a subprocess, and what importing sunwell.cli costs (for information)."""
    # A newcomer's install has its bytecode cached: let the warm-up runs write it (any value of the variable,
    # even "0", would stop them).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run(argv: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        return (time.perf_counter() - started) * 1000

    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import sunwell.cli'": [python, "-c", "import sunwell.cli"],
        "python -m sunwell run --help": [python, "-m", "sunwell", "run", "--help"],
    }
    for argv in commands.values():
        run(argv)  # warm the page cache and the bytecode cache
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(reps):
        for name, argv in commands.items():
            times[name].append(run(argv))
    print(f"{'command':<32} {'median':>9} {'min..max':>17}   ({reps} runs, interleaved)")
    for name, values in times.items():
        print(f"{name:<32} {statistics.median(values):>6.1f} ms {min(values):>7.1f}..{max(values):<7.1f} ms")
    importtime = subprocess.run([python, "-X", "importtime", "-c", "import sunwell.cli"], check=True,
                                capture_output=True, text=True, env=env).stderr
    children: list[tuple[int, str]] = []  # -X importtime lists a module after what it imported
    for line in importtime.splitlines()[1:]:
        _self_us, cumulative, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2  # one space after the bar, then two per level
        if depth == 1:
            children.append((int(cumulative), name.strip()))
        elif depth == 0 and name.strip() != "sunwell.cli":
            children = []  # those belonged to another top-level import (site, encodings...)
        elif depth == 0:
            print(f"`import sunwell.cli` takes {int(cumulative) / 1000:.1f} ms (python -X importtime, one run); "
                  "its heaviest direct imports:")
            for ms, child in sorted(children, reverse=True)[:top]:
                print(f"  {ms / 1000:>7.1f} ms  {child}")


def main(argv: list[str] | None = None) -> int:
    global ROUNDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each variant (default 7)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"tool rounds per turn (default {ROUNDS})")
    parser.add_argument("--in-process", action="store_true", help="run the fake server as a thread of this process")
    parser.add_argument("--profile", action="store_true", help="cProfile Sunwell turns instead of comparing")
    parser.add_argument("--breakdown", action="store_true", help="time Sunwell's parts instead of comparing")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile (default 30)")
    parser.add_argument("--startup", action="store_true", help="time the CLI's startup instead")
    parser.add_argument("--check", action="store_true", help="exit 1 when the ratio target is missed")
    args = parser.parse_args(argv)
    if args.startup:
        startup(max(args.reps, 5), args.top)
        return 0
    ROUNDS = args.rounds  # the forked fake reads it too

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, FakeServer(args.in_process) as url:
        workspace, data_dir = Path(tmp) / "workspace", Path(tmp) / "data"
        make_workspace(workspace, args.rounds)
        if args.profile:
            asyncio.run(profile(SunwellTurn(url, workspace, data_dir, args.rounds), max(args.reps, 1), args.top))
            return 0
        if args.breakdown:
            asyncio.run(breakdown(SunwellTurn(url, workspace, data_dir, args.rounds), max(args.reps, 1), args.rounds))
            return 0
        system, tools = request_shape(workspace, data_dir, args.rounds)
        sunwell = SunwellTurn(url, workspace, data_dir, args.rounds)  # after: it points OPENAI_BASE_URL at `url`
        bare = BareTurn(url, workspace, args.rounds, system, tools)
        results = asyncio.run(compare(sunwell, bare, args.reps))
    where = "a thread of this process" if args.in_process else "a child process"
    print(f"(fake server in {where}; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)")
    ratio = report(results, args.rounds)
    return 1 if args.check and ratio > RATIO_TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
