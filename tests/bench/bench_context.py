"""Benchmark of the context budget (issue 13): tokens sent per turn with and without it, compaction latency, and
the token estimate's error against the usage the server reports.

    python tests/bench/bench_context.py [--turns 40] [--window 32768] [--check]

One session of TURNS turns against the scripted fake provider on 127.0.0.1 (OpenAI wire format, the real `openai`
SDK), in process: each turn asks about one module, the model reads it (`read_file` of a real Python module of this
repository, copied into a temp workspace: 4-20 KB each) and answers in a few paragraphs (~550 tokens). The session runs twice:

* `budget`: the model's window is WINDOW tokens (config `context_window`) and the fake refuses anything longer,
  with OpenAI's own 400 `context_length_exceeded`;
* `no budget`: the window is taken as 10M tokens and the fake has no limit, which is what every request would carry
  without the budget (before issue 13): the whole history, every result in full.

The fake counts each request's prompt tokens with Qwen2.5-Coder's real tokenizer when llama-cpp-python and the
model file of scripts/test.sh are present (`vocab_only`: the tokenizer without the weights), else with its BPE
approximation (the report says which), and reports them as usage, as a real server does. Reported:

* tokens sent per turn (the last request of each turn, and all requests of the turn together), every 5th turn;
* compactions, elisions, refusals; the turn at which `no budget` outgrows the window;
* compaction latency: from the last event before a `compacted` notice to the notice (the summariser's request to
  the fake, which answers at once, so this is Sunwell's own cost plus a local round trip; a real model adds its
  time to write a summary of at most 2,048 tokens);
* the estimate's error: for every request of `budget`, Sunwell's raw estimate (agent/context.py, from the canonical
  request) and the calibrated one (scaled by what the previous response's usage taught, as a session does) against
  the tokens the server counted: median, 90th percentile and worst absolute error.

`--check` exits 1 when a turn of `budget` failed, a request was refused more than once, or the calibrated estimate's
90th-percentile error is above 15 %.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "tests"))

from fake_provider import Call, FakeProvider, Reply

MODEL = "gpt-4o"
QWEN = Path.home() / ".cache" / "sunwell-models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
ANSWER = ("It defines the module's main class and a few helpers; the entry point validates its input, delegates to "
          "the helpers and returns a typed result. Errors become data the caller reads. ") * 12
"""~2,400 characters (~550 tokens): what a hosted model writes about a module it read."""


def real_tokenizer():
    """Qwen2.5-Coder's tokenizer (llama-cpp-python, vocabulary only), or None when it is not installed."""
    try:
        import llama_cpp
    except ImportError:
        return None
    if not QWEN.is_file():
        return None
    llm = llama_cpp.Llama(str(QWEN), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=False))


def modules(count: int) -> list[Path]:
    """`count` Python modules of this repository, 4-20 KB, largest variety first (sorted by name)."""
    found = sorted(p for p in (ROOT / "server" / "sunwell").rglob("*.py") if 4_000 <= p.stat().st_size <= 20_000)
    return [found[i % len(found)] for i in range(count)]


class Model:
    """Turn n: read mod_n.py, then answer; a summariser's request gets a summary."""

    def __call__(self, body: dict) -> Reply:
        from sunwell.agent.prompts import COMPACT_SYSTEM

        if COMPACT_SYSTEM in json.dumps(body["messages"][0]):
            return Reply(text="The user asked about one module per turn; each was read and described: "
                              "classes, helpers, how errors are handled. " * 6)
        last = body["messages"][-1]
        if last["role"] == "user" and not last["content"].startswith("[Sunwell]"):
            n = last["content"].split()[-1]
            return Reply(text="Let me read it.", tool_calls=[Call("read_file", json.dumps({"path": f"mod_{n}.py"}))])
        return Reply(text=ANSWER)


def canonical(body: dict):
    """The canonical request a Chat Completions body was mapped from (enough to estimate it)."""
    from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec, UserMessage

    system, messages = "", []
    for m in body["messages"]:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            messages.append(UserMessage(text=m["content"]))
        elif m["role"] == "assistant":
            calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
                     for c in m.get("tool_calls") or []]
            messages.append(AssistantMessage(text=m["content"] or "", tool_calls=calls))
        else:
            messages.append(ToolResultMessage(call_id=m["tool_call_id"], name="read_file", output=m["content"]))
    tools = [ToolSpec(**t["function"]) for t in body.get("tools", [])]
    return system, tools, messages


async def session(workspace: Path, data: Path, fake: FakeProvider, turns: int, window: int | None) -> dict:
    from sunwell.agent.chat import UserInput
    from sunwell.agent.engine import Engine
    from sunwell.agent.session import Session
    from sunwell.config import ModelOverride, RateLimits, Settings

    fake.context_limit = window
    fake.requests.clear()
    big = 1_000_000
    settings = Settings(model=f"openai:{MODEL}", data_dir=data, approval="auto",
                        models={f"openai:{MODEL}": ModelOverride(context_window=window or 10_000_000)},
                        rate_limits=RateLimits(tool_calls_per_min=big, writes_per_min=big, shell_per_min=big,
                                               bytes_written=big))
    engine = Engine(settings, workspace)
    chat = Session(engine)
    per_turn, latencies, failed, events = [], [], 0, []
    last = [time.perf_counter()]

    def sink(event) -> None:
        now = time.perf_counter()
        if event.type == "notice" and event.code == "compacted":
            latencies.append(now - last[0])
        events.append(event)
        last[0] = now

    for n in range(turns):
        before = len(fake.requests)
        done = (await chat.submit(UserInput(f"What does module {n:02d}"), sink)).done
        failed += done.status != "completed"
        sent = [r.tokens for r in fake.requests[before:] if r.tokens is not None and "tools" in r.body]
        per_turn.append((sent[-1] if sent else 0, sum(sent)))
    notices = [e.code for e in events if e.type == "notice"]
    rows = engine.store.events(chat.id)
    engine.store.close()
    return {"per_turn": per_turn, "latencies": latencies, "failed": failed, "refusals": fake.refusals,
            "compactions": notices.count("compacted"), "elisions": sum(r.kind == "elision" for r in rows),
            "requests": [r for r in fake.requests if r.tokens is not None and "tools" in r.body]}


def estimate_errors(requests) -> tuple[list[float], list[float]]:
    """(raw, calibrated) relative errors of Sunwell's estimate against the counted tokens, per request."""
    from sunwell.agent.context import SessionContext, request_tokens

    context, raw_errors, calibrated_errors = SessionContext(), [], []
    for request in requests:
        estimate = request_tokens(*canonical(request.body))
        raw_errors.append(estimate / request.tokens - 1)
        calibrated_errors.append(estimate * context.ratio / request.tokens - 1)
        context.observe(estimate, request.tokens)
    return raw_errors, calibrated_errors


def spread(errors: list[float]) -> str:
    absolute = sorted(abs(e) for e in errors)
    p90 = absolute[int(0.9 * (len(absolute) - 1))]
    return (f"median {100 * statistics.median(absolute):.1f} %, p90 {100 * p90:.1f} %, worst {100 * absolute[-1]:.1f} %"
            f" (mean signed {100 * statistics.mean(errors):+.1f} %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--window", type=int, default=32_768)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    tokenizer = real_tokenizer()
    tmp = Path(tempfile.mkdtemp(prefix="sunwell-bench-context-"))
    try:
        workspace = tmp / "ws"
        workspace.mkdir()
        for n, path in enumerate(modules(args.turns)):
            shutil.copy(path, workspace / f"mod_{n:02d}.py")
        for var in [v for v in os.environ if v.startswith(("OPENAI_", "SUNWELL_"))]:
            del os.environ[var]
        os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
        with FakeProvider(tokenizer=tokenizer) as fake:
            os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = f"{fake.url}/v1", "bench"
            fake.script(*[Model()] * 100_000)
            budget = asyncio.run(session(workspace, tmp / "a", fake, args.turns, args.window))
            free = asyncio.run(session(workspace, tmp / "b", fake, args.turns, None))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{args.turns}-turn session, window {args.window:,} tokens, counted with "
          + ("Qwen2.5-Coder's tokenizer" if tokenizer else "the fake's BPE approximation (no llama-cpp-python)"))
    print(f"{'turn':>5} {'last request':>24} {'all requests of the turn':>30}")
    print(f"{'':>5} {'budget':>11} {'no budget':>12} {'budget':>14} {'no budget':>15}")
    for n in range(0, args.turns, 5):
        (a_last, a_all), (b_last, b_all) = budget["per_turn"][n], free["per_turn"][n]
        print(f"{n + 1:>5} {a_last:>11,} {b_last:>12,} {a_all:>14,} {b_all:>15,}")
    (a_last, a_all), (b_last, b_all) = budget["per_turn"][-1], free["per_turn"][-1]
    print(f"{args.turns:>5} {a_last:>11,} {b_last:>12,} {a_all:>14,} {b_all:>15,}")
    total_a = sum(t for _, t in budget["per_turn"])
    total_b = sum(t for _, t in free["per_turn"])
    outgrown = next((n + 1 for n, (last, _) in enumerate(free["per_turn"]) if last > args.window), None)
    print(f"session total: {total_a:,} tokens sent with the budget, {total_b:,} without ({total_b / total_a:.1f}x); "
          f"without it the requests outgrow the window at turn {outgrown}")
    print(f"budget: {budget['failed']} failed turns, {budget['refusals']} refusals, {budget['compactions']} "
          f"compactions, {budget['elisions']} elisions; largest request {max(r.tokens for r in budget['requests']):,}"
          f" tokens")
    if budget["latencies"]:
        ms = sorted(1000 * s for s in budget["latencies"])
        print(f"compaction latency (fake answers at once): median {statistics.median(ms):.0f} ms, "
              f"max {ms[-1]:.0f} ms over {len(ms)}")
    raw, calibrated = estimate_errors(budget["requests"])
    print(f"estimate vs counted, raw:        {spread(raw)}")
    print(f"estimate vs counted, calibrated: {spread(calibrated)} over {len(raw)} requests")
    if args.check:
        absolute = sorted(abs(e) for e in calibrated)
        ok = (budget["failed"] == 0 and budget["refusals"] <= 1
              and absolute[int(0.9 * (len(absolute) - 1))] <= 0.15)
        print("check:", "ok" if ok else "FAILED")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
