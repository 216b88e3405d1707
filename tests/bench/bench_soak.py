"""Soak of the sidecar: one `sunwell serve` holding many sessions, to show that per-session state is released.

    python tests/bench/bench_soak.py [--sessions 200] [--turns 5] [--check]

Each session has --turns turns against the scripted provider (tests/fake_provider.py on 127.0.0.1); every turn
makes tool calls — a read, a write the client approves with "allow for this session" (so approval rules, rate
limiters and checkpoints are all exercised), and an answer. The sidecar's resident memory (VmRSS) is read after
the first 20 sessions (the warm baseline: imports, caches and the SQLite page cache filled) and after all of them.
Target: <= 10 % growth. With --check the exit code is 1 when it is missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sidecar import ROOT, frame, initialize, read_message, sidecar_env, spawn, stop

sys.path.insert(0, str(ROOT / "tests"))
from fake_provider import Call, FakeProvider, Reply

GROWTH_TARGET = 0.10
BASELINE_AFTER = 20


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Client:
    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.ids = itertools.count(100)

    def chat(self, text: str, session: str | None) -> dict[str, Any]:
        msg_id = next(self.ids)
        params = {"text": text, **({"session": session} if session else {})}
        self.proc.stdin.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": "sunwell/chat", "params": params}))
        while (message := read_message(self.proc.stdout)) is not None:
            if message.get("method") == "sunwell/approve":  # a request to us: allow for the session
                self.proc.stdin.write(frame({"jsonrpc": "2.0", "id": message["id"],
                                             "result": {"decision": "allowSession"}}))
            elif message.get("id") == msg_id and "method" not in message:
                if "result" not in message or message["result"]["status"] != "completed":
                    raise RuntimeError(f"turn failed: {message}")
                return message["result"]
        raise RuntimeError("the sidecar closed its stdout")


def soak(sessions: int, turns: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n" * 50)
    with FakeProvider() as fake:
        proc = spawn([sys.executable, "-m", "sunwell.lsp"], sidecar_env(tmp, f"{fake.url}/v1"))
        proc.stdin.write(initialize(ws, {"dataDir": str(tmp / "data"), "model": "openai:gpt-4o",
                                         "trust": "workspace", "approval": "ask"}))
        while (message := read_message(proc.stdout)) is not None and message.get("id") != 1:
            pass
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        client = Client(proc)
        figures: dict[str, Any] = {}
        started = time.perf_counter()
        for n in range(sessions):
            session = None
            for t in range(turns):
                write = json.dumps({"path": f"notes/s{n}.txt", "content": f"turn {t}\n" * 20})
                fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}'), Call("write_file", write)]),
                            Reply(text=f"Done with turn {t} of session {n}."))
                session = client.chat(f"turn {t}: read a.txt and note it", session)["session"]
            if n + 1 == BASELINE_AFTER:
                figures["rss_after_20_kib"] = rss_kib(proc.pid)
        figures["rss_after_all_kib"] = rss_kib(proc.pid)
        figures["seconds"] = round(time.perf_counter() - started, 1)
        stop(proc)
    figures["growth"] = figures["rss_after_all_kib"] / figures["rss_after_20_kib"] - 1
    figures.update(sessions=sessions, turns=turns)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    figures = soak(args.sessions, args.turns)
    print(f"{figures['sessions']} sessions x {figures['turns']} turns in {figures['seconds']} s")
    print(f"RSS after {BASELINE_AFTER} sessions: {figures['rss_after_20_kib'] / 1024:.1f} MiB")
    print(f"RSS after {figures['sessions']} sessions: {figures['rss_after_all_kib'] / 1024:.1f} MiB "
          f"(growth {figures['growth']:+.1%}, target <= {GROWTH_TARGET:.0%})")
    return 1 if args.check and figures["growth"] > GROWTH_TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
