"""A stand-in for the local model server on a CPU that reports AMX and traps it: it speaks enough of the OpenAI /v1
API to pass a health check and answer completions, and dies of SIGILL on the completion it is told to, as
llama-cpp-python's native build does at the first matrix product of a model repacked for AMX.

    python tests/sigill_server.py --port N [--sigill-on K] [--sigill-on-no-repack K] [--stall-on K] [--no-repack]

`--no-repack` is the fallback mode scripts/local_model.py adds (scripts/llama_server.py's flag); in it the server
dies only where `--sigill-on-no-repack` says, and never stalls (`--stall-on`: no answer at all). K counts chat completions from 1 (the start-up probe is the first).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def log(line: str) -> None:
    print(line, flush=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sigill-on", type=int, default=0)
    parser.add_argument("--sigill-on-no-repack", type=int, default=0)
    parser.add_argument("--stall-on", type=int, default=0)
    parser.add_argument("--no-repack", action="store_true")
    return parser.parse_args()


def main() -> None:
    args = parse()
    die_on = args.sigill_on_no_repack if args.no_repack else args.sigill_on
    count = 0
    lock = threading.Lock()
    log(f"fake llama: pid {os.getpid()}, no_repack={args.no_repack}")
    if not args.no_repack:
        log("ggml_backend_amx_buffer_set_tensor: amx repack tensor blk.0.attn_q.weight of type q4_K")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *rest: object) -> None:
            log(f"fake llama: {self.command} {self.path}")

        def _send(self, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())

        def do_POST(self) -> None:
            nonlocal count
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with lock:
                count += 1
                this = count
            log(f"fake llama: completion {this}: llama_perf_context_print: prompt eval")
            if this == die_on:
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
                log("fake llama: ggml_compute_forward_mul_mat (an AMX tile instruction next)")
                os.kill(os.getpid(), signal.SIGILL)
                time.sleep(60)  # the signal may reach the process a moment after this thread goes on
            if this == args.stall_on and not args.no_repack:
                time.sleep(3600)
            self._answer(request)

        def _answer(self, request: dict) -> None:
            text, created = "hi", int(time.time())
            if not request.get("stream"):
                self._send(json.dumps({
                    "id": "c", "object": "chat.completion", "created": created, "model": "fake",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}]}).encode())
                return
            chunks = [{"role": "assistant", "content": text}, {}]
            body = "".join(
                "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": created,
                                       "model": "fake", "choices": [{"index": 0, "delta": delta,
                                                                     "finish_reason": None if delta else "stop"}]})
                + "\n\n" for delta in chunks) + "data: [DONE]\n\n"
            self._send(body.encode(), "text/event-stream")

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
