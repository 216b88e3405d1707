"""Time to first token on a local server over a 10-round session (issue 42, item 3): does each request keep the one
before it as its prefix, so that llama.cpp reads only what is new?

    python tests/bench/bench_local_cache.py --tree BEFORE=DIR [--tree AFTER=DIR ...] [--repeats 2] [--rounds 10]
        [--out FILE]

One llama-cpp-python server (scripts/local_model.py starts it as scripts/start.sh does; `--n_ctx 4096 --n_threads
2`) serves Qwen2.5-Coder-0.5B Q4_K_M; a measuring proxy on 127.0.0.1 stands in front of it. Each tree (BEFORE, AFTER:
a checkout whose `server/` holds its Sunwell; this one is AFTER unless named) runs the same 10-round session
through the real CLI (`sunwell run`, then `sunwell run --session ID`), the trees taking turns, each with a data dir
of its own. The server keeps one
prompt's KV cache (llama-cpp-python: one sequence; a request reuses the longest token prefix it shares with the
last one), so a session is never interleaved with another: before each one the cache is filled with an unrelated
prompt, so that round 1 starts cold.

For every request the proxy records the time from the request to the first streamed chunk (llama-cpp-python sends
the first one once the first token is sampled: prompt evaluation included), and the server's log tells how many of
the prompt's tokens it took from the cache and how many it evaluated anew ("Llama.generate: N prefix-match hit,
remaining M prompt tokens to eval"; llama-cpp-python streams neither usage nor llama.cpp's `timings`). Consecutive
requests of a session are compared: where one does not repeat the one before it (its messages, or its tools), the
first differing byte of the body and the message and character where they part are reported. A free request of
answer-or-call (models/emulation/choice.py, sent with `logprobs`) and the schema request that follows it
(`response_format`) must carry the same messages.

Times on a shared machine vary with its load: compare the ratios (round 10 against round 1), not the seconds.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import local_model  # scripts/: how scripts/start.sh starts the server

MODEL = "openai-compatible:qwen2.5-coder-0.5b"
N_CTX = 4096
FILES = {
    "README.md": "# Tally\n\nTally counts words in text files and prints the ten most common ones.\n",
    "notes.txt": "Ship on Friday.\nAsk Dana about the release notes.\n",
    "config.toml": "[server]\nport = 8080\nhost = \"127.0.0.1\"\n",
    "src/app.py": "def main() -> int:\n    return 42\n",
    "src/count.py": "def count(words):\n    totals = {}\n    for word in words:\n        totals[word] = "
                    "totals.get(word, 0) + 1\n    return totals\n",
}
PROMPTS = (  # odd rounds read a file, even ones are answered from what the model knows
    "Read src/app.py and tell me what number main returns",
    "What is a Python dictionary? One sentence.",
    "Read notes.txt and tell me what it says",
    "What does the return statement do in Python? One sentence.",
    "Read config.toml and tell me the port",
    "Say hello in French.",
    "Read src/count.py and tell me what count returns",
    "What is 7 times 6?",
    "Read README.md and tell me what Tally does",
    "Thanks. What is a Python list? One sentence.",
)
_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
_CACHED = re.compile(r"Llama\.generate: full prompt already cached")
_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass
class Request:
    tree: str
    repeat: int
    round: int
    body: dict[str, Any]
    raw: bytes = field(repr=False)
    log_from: int
    status: int = 0
    seconds_to_first_chunk: float | None = None
    """To the first `data:` chunk: sse-starlette sends a `: ping` comment every 15 s while the prompt is read."""
    seconds: float = 0.0
    closed_early: bool = False
    """The client closed the stream before its end (a free reply that opened a call)."""
    prompt_tokens: int | None = None
    evaluated: int | None = None
    """Prompt tokens the server evaluated anew (the rest it took from the KV cache)."""


class Proxy(ThreadingHTTPServer):
    """Forwards every request to the server and records the chat completions (`Request`), tagged with `at`."""

    daemon_threads = True

    def __init__(self, upstream: int, log: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream, self.log = upstream, log
        self.at: tuple[str, int, int] = ("", 0, 0)
        self.requests: list[Request] = []


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward(b"")

    def do_POST(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _forward(self, raw: bytes) -> None:
        start = time.monotonic()
        record = None
        if self.path.endswith("/chat/completions"):
            record = Request(*self.server.at, body=json.loads(raw), raw=raw, log_from=self.server.log.stat().st_size)
            self.server.requests.append(record)
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream, timeout=900)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
        try:
            upstream.request(self.command, self.path, body=raw or None, headers=headers)
            reply = upstream.getresponse()
            if record:
                record.status = reply.status
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            seen = b""
            while chunk := reply.read1(65536):
                if record and record.seconds_to_first_chunk is None and b"data:" in (seen := seen[-8:] + chunk):
                    record.seconds_to_first_chunk = time.monotonic() - start
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client closed the stream: so does the proxy, upstream
            self.close_connection = True
            if record:
                record.closed_early = True
        finally:
            upstream.close()
            if record:
                record.seconds = time.monotonic() - start


def read_counts(requests: list[Request], log: Path) -> None:
    """Each request's prompt tokens and those evaluated anew, from the server's log lines written while it ran."""
    text = log.read_bytes()
    ends = [r.log_from for r in requests[1:]] + [len(text)]
    for request, end in zip(requests, ends, strict=True):
        lines = text[request.log_from:end].decode(errors="replace")
        evaluated = [int(n) for n in _EVAL.findall(lines)]
        if hit := _HIT.search(lines):
            request.prompt_tokens, request.evaluated = int(hit[1]) + int(hit[2]), int(hit[2])
        elif _CACHED.search(lines):
            request.evaluated = 0
        elif evaluated:  # no prefix shared: the whole prompt evaluated
            request.prompt_tokens = request.evaluated = evaluated[0]


def where_they_part(before: Request, after: Request) -> str | None:
    """Where `after` stops repeating `before` (its tools and messages), or None if it repeats them all."""
    if before.body.get("tools") != after.body.get("tools"):
        return "the tools differ"
    old, new = before.body["messages"], after.body["messages"]
    byte = next((i for i, (a, b) in enumerate(zip(before.raw, after.raw)) if a != b), None)
    for k, message in enumerate(old):
        if k < len(new) and new[k] == message:
            continue
        if k >= len(new):
            return f"message {k} of {len(old)} is gone (body byte {byte})"
        a, b = str(message.get("content") or ""), str(new[k].get("content") or "")
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        place = "the system prompt" if message.get("role") == "system" else f"message {k} ({message.get('role')})"
        return (f"body byte {byte}: {place}, character {at} of {len(a)}: {a[max(at - 30, 0):at + 50]!r} became "
                f"{b[max(at - 30, 0):at + 50]!r}")
    return None


def flush_cache(proxy: Proxy, base: str) -> None:
    """The server's KV cache filled with a prompt that shares nothing with Sunwell's but the template's first
    tokens: the session's first request starts cold. Through the proxy, so that its log lines are its own."""
    proxy.at = ("flush", 0, 0)
    body = {"messages": [{"role": "user", "content": f"Count to three. {time.time()}"}], "max_tokens": 1}
    request = urllib.request.Request(f"{base}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as reply:
        reply.read()


def run_session(tree: Path, name: str, repeat: int, rounds: int, proxy: Proxy, base: str, python: str,
                scratch: Path) -> None:
    work = scratch / f"{name}-{repeat}"
    workspace = work / "workspace"
    for rel, text in FILES.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    config = work / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"models": {MODEL: {"context_window": N_CTX}}}))  # as scripts/start.sh tells it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(PYTHONPATH=str(tree / "server"), XDG_CONFIG_HOME=str(work / "config"),
               SUNWELL_DATA_DIR=str(work / "data"))
    session: list[str] = []
    for n, prompt in enumerate(PROMPTS[:rounds], 1):
        proxy.at = (name, repeat, n)
        proc = subprocess.run([python, "-m", "sunwell", "run", prompt, "--model", MODEL, "--base-url", base, "--json",
                               "--max-tool-turns", "3", *session], env=env, cwd=workspace, capture_output=True,
                              text=True, timeout=1800, check=False)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode not in (0, 3) or not events:
            raise SystemExit(f"{name} round {n}: sunwell exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
        session = ["--session", events[0]["session"]]
        answer = "".join(e.get("delta", "") for e in events if e["type"] == "text").strip().replace("\n", " ")
        calls = ", ".join(f"{e['name']}({json.dumps(e['arguments'])})" for e in events if e["type"] == "toolCall")
        print(f"  {name} #{repeat} round {n}: {calls or 'no call'}; {answer[:70]!r}", flush=True)


def report(requests: list[Request], trees: list[str], rounds: int) -> None:
    """Per session, per round: its first request's time to first chunk and tokens; where consecutive requests part.
    A request the server refused (llama-cpp-python answers `json_schema` with a 500, and each `sunwell run` is a
    new process that learns it again) evaluated nothing and is left out."""
    sessions: dict[tuple[str, int], list[Request]] = {}
    for request in requests:
        if request.status == 200:
            sessions.setdefault((request.tree, request.repeat), []).append(request)
    ratios: dict[str, list[float]] = {tree: [] for tree in trees}
    told: dict[str, list[Request]] = {}
    for (tree, repeat), session in sessions.items():
        print(f"\n{tree}, session {repeat}. round: requests | its first request: seconds to the first chunk, prompt "
              f"tokens, evaluated anew | all its requests: evaluated anew of their prompt tokens")
        firsts = {}
        for n in range(1, rounds + 1):
            mine = [r for r in session if r.round == n]
            first = firsts[n] = mine[0]
            print(f"  {n:2}: {len(mine)} | {first.seconds_to_first_chunk or 0:6.2f} s {first.prompt_tokens or 0:5} "
                  f"{first.evaluated if first.evaluated is not None else '?':>5} | "
                  f"{sum(r.evaluated or 0 for r in mine):5} of {sum(r.prompt_tokens or 0 for r in mine):5}")
        ratio = (firsts[rounds].seconds_to_first_chunk or 0) / (firsts[1].seconds_to_first_chunk or 1)
        ratios[tree].append(ratio)
        print(f"  round {rounds} / round 1: {ratio:.2f}x the time to the first chunk; the session evaluated "
              f"{sum(r.evaluated or 0 for r in session)} of {sum(r.prompt_tokens or 0 for r in session)} prompt "
              "tokens anew")
        if tree in told and [r.body for r in told[tree]] == [r.body for r in session]:
            print("  the same requests as its first session")
            continue
        told.setdefault(tree, session)
        for k, (before, after) in enumerate(itertools.pairwise(session), 2):
            tail = f"evaluated {after.evaluated} of {after.prompt_tokens} tokens anew"
            if "response_format" in after.body and "logprobs" in before.body and before.round == after.round:
                same = before.body["messages"] == after.body["messages"]
                print(f"  round {after.round}, request {k}: the schema request after the free one, its messages "
                      f"{'the same' if same else 'DIFFERENT'}; {tail}")
            elif (part := where_they_part(before, after)) is not None:
                print(f"  round {after.round}, request {k}: parts from the one before at {part}; {tail}")
    print(f"\ntime to the first chunk, round {rounds} / round 1 (median of the sessions):")
    for tree in trees:
        print(f"  {tree:8} {statistics.median(ratios[tree]):.2f}x   ({', '.join(f'{r:.2f}' for r in ratios[tree])})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    models = Path(os.environ.get("SUNWELL_MODELS_DIR") or Path.home() / ".cache" / "sunwell-models")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=DIR",
                        help="a checkout of Sunwell to measure, by the name the report gives it (repeat it)")
    parser.add_argument("--model", type=Path, default=models / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    parser.add_argument("--repeats", type=int, default=2, help="sessions per tree, the trees taking turns")
    parser.add_argument("--rounds", type=int, default=len(PROMPTS))
    parser.add_argument("--python", default=sys.executable, help="the interpreter with llama_cpp and Sunwell's deps")
    parser.add_argument("--out", type=Path, help="write every request recorded (bodies, times, counts) as JSON")
    args = parser.parse_args()
    trees = {name: Path(folder).resolve() for name, _, folder in (tree.partition("=") for tree in args.tree)}
    trees.setdefault("AFTER", ROOT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the server is stopped on the way out
    with tempfile.TemporaryDirectory(prefix="bench-local-cache-") as tmp:
        scratch, port = Path(tmp), free_port()
        log = scratch / "server.log"
        url = f"http://127.0.0.1:{port}/v1"
        command = [args.python, str(ROOT / "scripts" / "llama_server.py"), "--model", str(args.model),
                   "--n_threads", "2", "--n_ctx", str(N_CTX), "--host", "127.0.0.1", "--port", str(port)]
        server = local_model.start(command, url, log, say=print)
        proxy = Proxy(port, log)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
        try:
            for repeat in range(1, args.repeats + 1):
                order = list(trees.items())[:: 1 if repeat % 2 else -1]
                for name, tree in order:
                    flush_cache(proxy, base)
                    run_session(tree, name, repeat, args.rounds, proxy, base, args.python, scratch)
            time.sleep(1)  # the last request's log lines
            read_counts(proxy.requests, log)
        finally:
            proxy.shutdown()
            server.stop()
    print(f"\n{args.model.name}, llama-cpp-python, --n_ctx {N_CTX} --n_threads 2; {args.repeats} sessions per tree")
    report([r for r in proxy.requests if r.tree in trees], list(trees), args.rounds)
    if args.out:
        args.out.write_text(json.dumps([{k: v for k, v in asdict(r).items() if k != "raw"} for r in proxy.requests],
                                       indent=1))


if __name__ == "__main__":
    main()
