"""The scripted fake provider (tests/fake_provider.py) as a process for the end-to-end run, plus a control endpoint.

    python tests/e2e/fake_server.py      # prints one JSON line {"url": ..., "control": ...} when ready

The model endpoint is `url` (OpenAI: `{url}/v1`, Anthropic: `url`). The test runner drives the script through the
control endpoint, one scenario at a time:

    POST {control}/scenario/<name>     drop what is left of the queue, script the scenario's replies;
                                       answers {"requests": N} (how many requests were recorded so far)
    POST {control}/release/<name>      lets a reply held for `name` go (`_held`)
    GET  {control}/requests?since=N    the requests recorded since N: [{"path", "body"}]
    GET  {control}/state               {"remaining": n, "requests": N}
    GET  {control}/page.html           a small HTML page with a title, for web_fetch of a local address
    GET  {control}/openapi.json        a PokeAPI-shaped OpenAPI document whose server is this one (learn_api), and
    GET  {control}/api/v2/pokemon/ID/  its answers (tests/api_server.py)

It stops when its stdin closes or on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fake_provider

from api_server import POKEMON, TYPES, pokeapi_document
from fake_provider import Call, FakeProvider, Reply

TODO = "# TODO\n\n- [x] chat in VS Code\n- [ ] ship it\n"
PAGE = ("<!doctype html><html><head><title>Sunwell test page</title></head><body><h1>Local docs</h1>"
        "<p>Served by the end-to-end test's fake server on 127.0.0.1.</p></body></html>")
NEVER = Path(tempfile.gettempdir()) / f"sunwell-e2e-never-{os.getpid()}"  # a held reply waits for it until the fake stops
RELEASED = Path(tempfile.mkdtemp(prefix="sunwell-e2e-release-"))  # a file per released name
SLOW_TEXT = "Counting slowly, stop me whenever you like: " + ", ".join(str(n) for n in range(1, 400)) + "."


def _after_denial(body: dict) -> Reply:
    """The model's answer once it has been told its write was denied."""
    return Reply(text="Understood: you denied the change, so I left `src/app.py` as it is.", chunk=12)


def _two_worktrees(body: dict) -> Reply:
    """Two worktree sessions at once, whatever order their requests come in: each writes the file its line names
    (beta's first reply held until the test releases it: its turn runs while alpha's approval is answered)."""
    said = json.dumps(body["messages"])
    name = "alpha" if "ALPHA" in said else "beta"
    if '"role": "tool"' in said:
        return Reply(text=f"Wrote `{name.upper()}.md` in worktree {name}.", chunk=8)
    call = Call("write_file", json.dumps({"path": f"{name.upper()}.md", "content": f"# {name}\n\nmade side by side\n"}))
    return Reply(tool_calls=[call], chunk=16, wait_for=str(RELEASED / name) if name == "beta" else None)


def _after_a_pause(body: dict) -> Reply:
    """A local model on a CPU: seconds pass before its first token."""
    time.sleep(4.5)
    return Reply(text="Thought about it: **here** is the answer.", chunk=6, delay=0.03)


SCENARIOS: dict[str, list[Any]] = {
    # (b) streamed markdown: a list, a code span and a fenced block with a copy button
    "chat": [
        Reply(
            text=(
                "Hello! I'm **Sunwell**, answering from the fake provider.\n\n"
                "- streamed in small pieces\n- with `inline code`\n\n"
                "```python\ndef add(a, b):\n    return a + b\n```\n"
            ),
            chunk=5,
            delay=0.03,
        )
    ],
    # (c) a tool card fills in: arguments stream, the call runs, the result comes back
    "read": [
        Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=4, delay=0.05),
        Reply(text="`a.txt` says **hello from the demo**.", chunk=8, delay=0.02),
    ],
    # (d) a write that asks first; the user allows it
    # a worktree session writes a file in its own checkout (allowed), then says so
    "worktree-write": [
        Reply(tool_calls=[Call("write_file", json.dumps({"path": "PLAN.md", "content": "# Plan\n\n- made in a worktree\n"}))],
            chunk=16),
        Reply(text="Wrote `PLAN.md` in the worktree.", chunk=8),
    ],
    "worktree-idea": [Reply(text="An idea not worth keeping.", chunk=8)],
    "worktree-two": [_two_worktrees] * 4,
    "write-allow": [
        Reply(tool_calls=[Call("write_file", json.dumps({"path": "notes/todo.md", "content": TODO}))], chunk=16),
        Reply(text="Created `notes/todo.md`.", chunk=8),
    ],
    # (d) an overwrite the user denies; the next request must carry the denial back to the model
    "write-deny": [
        Reply(
            tool_calls=[
                Call("write_file", json.dumps({"path": "src/app.py", "content": "def main():\n    return 0\n"}))
            ],
            chunk=16,
        ),
        _after_denial,
    ],
    # (e) a long answer, stopped half way
    "slow": [Reply(text=SLOW_TEXT, chunk=6, delay=0.25)],
    # nothing may reach the model
    "none": [],
    # a server that reports no usage (llama.cpp): the chat shows Sunwell's estimate
    "no-usage": [Reply(text="Counted by Sunwell, since this server reports no usage.", chunk=8, send_usage=False)],
    # a slow first token
    "slow-start": [_after_a_pause],
    # a denial with a note: the model reads the note with the denial
    "write-deny-note": [
        Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "def main():\n    return 1\n"}))],
              chunk=16),
        Reply(text="Understood: I will keep `main` returning 42.", chunk=12),
    ],
    # a command that runs staged: the approval shows what it did (issue 15's effects preview)
    "effects": [
        Reply(tool_calls=[Call("run_command", json.dumps({"command": "echo hi > new.txt"}))], chunk=16),
        Reply(text="Wrote `new.txt`.", chunk=8),
    ],
    # web_fetch of a host the user did not allow: the card asks, host first; the name never resolves
    "fetch-ask": [
        Reply(tool_calls=[Call("web_fetch", json.dumps({"url": "http://docs.example.invalid/page"}))], chunk=16),
        Reply(text="`docs.example.invalid` could not be reached.", chunk=8),
    ],
    # ask_user: a question card with the options as buttons and a field; the answer goes back to the model
    "question": [
        Reply(tool_calls=[Call("ask_user", json.dumps({"question": "Which database should the service use?",
                                                        "options": ["PostgreSQL", "SQLite"]}))], chunk=16),
        lambda body: Reply(text=f"Noted: {json.loads(body['messages'][-1]['content'].split(': ', 1)[1])}.", chunk=8),
    ],
    # task: a sub-agent whose own tool calls show inside its card
    "subagent": [
        Reply(tool_calls=[Call("task", json.dumps({"description": "Find where main is defined and every place that calls it", "prompt": "Where is main defined? "
                                                   "Report the file and line."}))], chunk=16),
        Reply(tool_calls=[Call("search_files", json.dumps({"pattern": "def main"}))], chunk=8, delay=0.1),
        Reply(tool_calls=[Call("read_file", json.dumps({"path": "src/app.py"}))], chunk=8, delay=0.1),
        Reply(text="`main` is defined in src/app.py, line 1; it returns 42.", chunk=8, delay=0.05),
        Reply(text="The sub-agent found it: `main` is in **src/app.py**, line 1.", chunk=8),
    ],
    # task stopped while its sub-agent works: a slow sub-agent answer, cut off by Stop
    "subagent-stop": [
        Reply(tool_calls=[Call("task", json.dumps({"description": "Survey slowly", "prompt": "List and think."}))],
              chunk=16),
        Reply(tool_calls=[Call("list_files", json.dumps({"path": "."}))], chunk=8),
        Reply(text=SLOW_TEXT, chunk=6, delay=0.25),
    ],
    # code intelligence answered by VS Code's TypeScript features
    "code-intel": [
        Reply(tool_calls=[Call("diagnostics", json.dumps({"path": "src"})),
                          Call("find_symbol", json.dumps({"query": "greet"})),
                          Call("find_references", json.dumps({"symbol": "greet", "path": "src/broken.ts"}))],
              chunk=16),
        Reply(text="`src/broken.ts` has a type error; `greet` is declared in `src/greet.ts`.", chunk=8),
    ],
    # "fetch-local" (web_fetch of this server's /page.html, allowed in the user settings) is added once the port is known
    # issue 30: a turn whose second request is held (NEVER never exists) while the test kills the sidecar; Resume
    # sends only that request again, and the next reply answers it
    "kill-resume": [
        Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=16),
        Reply(text="This answer never arrives: the engine is killed while it waits.", wait_for=NEVER),
        Reply(text="Resumed after the restart: `a.txt` says **hello from the demo**.", chunk=8, delay=0.02),
    ],
    # a plan, then a question: the pinned checklist and the question card (issue 34 item 13: light theme, narrow)
    "plan-question": [
        Reply(tool_calls=[Call("update_plan", json.dumps({"items": [
            {"step": "Read the service's configuration", "status": "done"},
            {"step": "Choose the storage with the user", "status": "in_progress"},
            {"step": "Write the storage layer and its tests", "status": "pending"}]}))], chunk=16),
        Reply(tool_calls=[Call("ask_user", json.dumps({"question": "Which database should the service use, given "
                                                       "that it must run on a laptop without a server?",
                                                       "options": ["PostgreSQL", "SQLite", "DuckDB"]}))], chunk=16),
        Reply(text="Noted: the storage layer will use the database you chose.", chunk=8),
    ],
    # the same read twice: an info notice (repeated_call) the chat folds into the turn's notes
    "read-repeated": [
        Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=16),
        Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=16),
        Reply(text="`a.txt` says **hello from the demo**, both times.", chunk=8),
    ],
    # issue 34 items 8 and 10: an answer; the answer to the line edited in its place; the one Retry asks for again
    "edit-resend": [
        Reply(text="First answer, to the line as it was sent first.", chunk=8, delay=0.02),
        Reply(text="Second answer, to the edited line.", chunk=8, delay=0.02),
        Reply(text="Third answer, asked for again by Retry.", chunk=8, delay=0.02),
    ],
    # a file the turn creates, for the turn's Undo button
    "write-undo": [
        Reply(tool_calls=[Call("write_file", json.dumps({"path": "undo-me.txt", "content": "temporary\n"}))], chunk=16),
        Reply(text="Created `undo-me.txt`.", chunk=8),
    ],
}


def main() -> int:
    fake = FakeProvider().start()

    class Control(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            url = urlparse(self.path)
            parts = url.path.strip("/").split("/")
            if len(parts) == 2 and parts[0] == "release" and parts[1].isalnum():
                (RELEASED / parts[1]).touch()
                self._json(200, {"released": parts[1]})
                return
            if len(parts) != 2 or parts[0] != "scenario" or parts[1] not in SCENARIOS:
                self._json(404, {"error": f"unknown: {url.path}; scenarios: {sorted(SCENARIOS)}"})
                return
            with fake._lock:  # the queue of a stopped turn must not leak into the next scenario
                fake._queue.clear()
            fake.script(*SCENARIOS[parts[1]])
            self._json(200, {"requests": len(fake.requests)})

        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path == "/requests":
                since = int(parse_qs(url.query).get("since", ["0"])[0])
                self._json(200, [{"path": r.path, "body": r.body} for r in fake.requests[since:]])
            elif url.path == "/page.html":
                data = PAGE.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif url.path == "/openapi.json":
                self._json(200, pokeapi_document(f"http://{host}:{port}/api/v2"))
            elif url.path.startswith("/api/v2/pokemon/") and url.path.split("/")[4] in POKEMON:
                name = url.path.split("/")[4]
                self._json(200, {"id": POKEMON.index(name) + 1, "name": name, "types": [
                    {"slot": 1, "type": {"name": kind}} for kind in TYPES.get(name, ["normal"])]})
            elif url.path == "/state":
                self._json(200, {"remaining": fake.remaining, "requests": len(fake.requests)})
            else:
                self._json(404, {"error": f"unknown: {url.path}"})

    control = ThreadingHTTPServer(("127.0.0.1", 0), Control)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, args=(0.05,), daemon=True).start()
    host, port = control.server_address[:2]
    SCENARIOS["fetch-local"] = [
        Reply(tool_calls=[Call("web_fetch", json.dumps({"url": f"http://{host}:{port}/page.html"}))], chunk=16),
        Reply(text="The local page is titled **Sunwell test page**.", chunk=8),
    ]
    SCENARIOS["learn-api"] = [
        Reply(tool_calls=[Call("learn_api", json.dumps({"source": f"http://{host}:{port}/openapi.json",
                                                         "name": "pokeapi"}))], chunk=16),
        Reply(text="Learned **pokeapi**.", chunk=8),
    ]
    SCENARIOS["learned-call"] = [
        Reply(tool_calls=[Call("pokeapi__pokemon_retrieve", json.dumps({"id": "pikachu"}))], chunk=16),
        Reply(text="Pikachu is an **electric** type.", chunk=8),
    ]
    # issue 44: a web server the agent starts in the background (a port free now, for it to listen on)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    SCENARIOS["background-server"] = [
        Reply(tool_calls=[Call("run_command", json.dumps({
            "command": f"python3 -m http.server {free} --bind 127.0.0.1", "background": True,
            "wait_for": "Serving HTTP"}))], chunk=16),
        Reply(text=f"The server runs: http://127.0.0.1:{free}/ serves the workspace.", chunk=8),
    ]
    print(json.dumps({"url": fake.url, "control": f"http://{host}:{port}"}), flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    control.shutdown()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
