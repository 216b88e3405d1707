"""Small read-then-write tasks through `sunwell run`, judged by the files left: with and without constrained decoding.

    python tests/bench/agentic_eval.py --base-url http://127.0.0.1:18090/v1 [--model qwen2.5-coder-0.5b] \
        [--modes constrained,free,anchor] [--tasks upper,hello] [--out agentic.json] [-v]

Each task gets a fresh workspace with its files and one prompt, as a new user would type it ("Read a.txt and write
its content in upper case to b.txt"); `sunwell run --yes --json` runs it as a subprocess against the server, with a
user config that gives the model its real window (`context_window`, as scripts/start.sh writes it) and, per mode,
`constrained: true` or `false`. A task passes when the files it should leave are there with the right content.
The same model, prompts and limits in both modes; the server must serve no one else (llama-cpp-python interrupts
a request when another arrives). `anchor` mode is the model's own ceiling on the same tasks (`run_anchor`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().parents[2] / "server"
Judge = Callable[[Path], tuple[bool, str]]


@dataclass
class Task:
    id: str
    prompt: str
    files: dict[str, str]
    judge: Judge | str
    """What the files left must hold, or (a question) a word the answer must contain."""


def _text(ws: Path, name: str) -> str | None:
    path = ws / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _expect(name: str, check: Callable[[str], bool], want: str) -> Judge:
    def judge(ws: Path) -> tuple[bool, str]:
        text = _text(ws, name)
        if text is None:
            return False, f"no {name}"
        return (True, "") if check(text) else (False, f"{name} = {text[:80]!r}, wanted {want}")

    return judge


def _prints_hello(ws: Path) -> tuple[bool, str]:
    if not (ws / "hello.py").is_file():
        return False, "no hello.py"
    run = subprocess.run(
        [sys.executable, "hello.py"], cwd=ws, capture_output=True, text=True, timeout=20, check=False
    )
    out = run.stdout.strip()
    return ("hello" in out.lower(), f"prints {out[:60]!r} (exit {run.returncode})")


def _json_name(text: str) -> bool:
    try:
        return json.loads(text).get("name") == "demo"
    except (ValueError, AttributeError):
        return False


TASKS = [
    Task("upper", "Read a.txt and write its content in upper case to b.txt", {"a.txt": "hello world\n"},
         _expect("b.txt", lambda t: t.strip() == "HELLO WORLD", "'HELLO WORLD'")),
    Task("hello", "Create hello.py that prints hello", {}, _prints_hello),
    Task("where", "Find the file that defines class Invoice and write its path into where.txt",
         {"src/models.py": "class Invoice:\n    total = 0\n", "src/util.py": "def helper():\n    return 1\n",
          "README.md": "A billing app.\n"},
         _expect("where.txt", lambda t: t.strip().removeprefix("./") == "src/models.py", "'src/models.py'")),
    Task("copy", "Copy notes.txt to backup.txt", {"notes.txt": "meeting at noon\nbring slides\n"},
         _expect("backup.txt", lambda t: t.strip() == "meeting at noon\nbring slides", "the notes")),
    Task("first", "Write the first line of lines.txt to first.txt", {"lines.txt": "alpha\nbeta\ngamma\n"},
         _expect("first.txt", lambda t: t.strip() == "alpha", "'alpha'")),
    Task("count", "Count the lines of data.txt and write the number to count.txt",
         {"data.txt": "one\ntwo\nthree\nfour\n"}, _expect("count.txt", lambda t: t.strip() == "4", "'4'")),
    Task("json", "Create config.json with a key name set to demo", {}, _expect("config.json", _json_name, "name=demo")),
    Task("typo", "Fix the typo in greet.py: helo should be hello", {"greet.py": 'print("helo")\n'},
         _expect("greet.py", lambda t: 'print("hello")' in t, 'print("hello")')),
    Task("index", "List the files in the docs folder and write their names into index.txt",
         {"docs/intro.md": "# Intro\n", "docs/usage.md": "# Usage\n"},
         _expect("index.txt", lambda t: "intro.md" in t and "usage.md" in t, "intro.md and usage.md")),
    Task("append", "Append the line 'call mom' to todo.txt", {"todo.txt": "buy milk\n"},
         _expect("todo.txt", lambda t: [s.strip() for s in t.strip().splitlines()] == ["buy milk", "call mom"],
                 "'buy milk' then 'call mom'")),
    Task("status", "Write done into status.txt", {}, _expect("status.txt", lambda t: t.strip().lower() == "done",
                                                             "'done'")),
    Task("release", "Read version.txt and create release.txt containing the word Release and the version",
         {"version.txt": "1.2.3\n"},
         _expect("release.txt", lambda t: "release" in t.lower() and "1.2.3" in t, "Release 1.2.3")),
]  # fmt: skip

QUESTIONS = [
    Task("ask-a", "What does a.txt say?", {"a.txt": "hello world\n", "notes.md": "# Notes\n"}, "hello world"),
    Task("ask-add", "What does the function in calc.py do?",
         {"calc.py": "def add(a, b):\n    return a + b\n", "test.sh": "#!/bin/sh\npytest -q\n"}, "add"),
    Task("ask-port", "Which port is set in config.json?", {"config.json": '{"port": 8080, "debug": false}\n'}, "8080"),
    Task("ask-class", "Which class is defined in src/models.py?",
         {"src/models.py": "class Invoice:\n    total = 0\n", "src/util.py": "def helper():\n    return 1\n"},
         "invoice"),
    Task("ask-readme", "What is this project, according to README.md?",
         {"README.md": "# Ledger\nA small billing app for freelancers.\n", "main.py": "print('hi')\n"}, "billing"),
]  # fmt: skip
"""Questions about named files, judged by the answer: the same small-model prompt must still answer them."""


@dataclass
class Outcome:
    task: str
    mode: str
    ok: bool
    why: str
    exit: int | None
    calls: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    answer: str = ""
    seconds: float = 0.0


def run_task(task: Task, mode: str, args: argparse.Namespace, root: Path) -> Outcome:
    base = root / f"{mode}-{task.id}"
    ws = base / "ws"
    for name, text in task.files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text, encoding="utf-8")
    ws.mkdir(parents=True, exist_ok=True)
    config = base / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    override = {"context_window": args.window, "constrained": mode == "constrained"}
    config.write_text(json.dumps({"models": {f"openai-compatible:{args.model}": override},
                                  "max_tokens": args.max_tokens}))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(
        PYTHONPATH=args.pythonpath, XDG_CONFIG_HOME=str(base / "config"), SUNWELL_DATA_DIR=str(base / "data")
    )
    started = time.monotonic()
    command = [sys.executable, "-m", "sunwell", "run", task.prompt, "--model", f"openai-compatible:{args.model}",
               "--base-url", args.base_url, "--json", "--yes", "--max-tool-turns", str(args.rounds), "--trust", args.trust]  # fmt: skip
    try:
        proc = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=args.timeout,
                              check=False)  # fmt: skip
        code, stdout = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        code, stdout = None, exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    answer = "".join(e["delta"] for e in events if e["type"] == "text")
    if isinstance(task.judge, str):
        ok, why = task.judge in answer.lower(), f"the answer does not say {task.judge!r}"
    else:
        ok, why = task.judge(ws)
    return Outcome(
        task.id, mode, ok, why if not ok else "", code,
        calls=[f"{e['name']}({json.dumps(e['arguments'], ensure_ascii=False)[:80]})" for e in events
               if e["type"] == "toolCall"],
        notices=[e["code"] for e in events if e["type"] == "notice"],
        answer=answer[:200],
        seconds=round(time.monotonic() - started, 1),
    )  # fmt: skip


def run_anchor(task: Task, args: argparse.Namespace, root: Path) -> Outcome:
    """The model's own ceiling on `task`: a plain client that sends the tools natively (the server's chat template
    for the model puts them in the prompt), reads each reply leniently (native `tool_calls`, else each JSON object
    with `name` and `arguments` in its text, as `toolcall_eval.py`'s anchor does) and runs the calls with
    Sunwell's own tool handlers, so the results read the same. No system prompt, no constraint, no validation."""
    sys.path.insert(0, args.pythonpath)
    sys.path.insert(0, str(Path(__file__).parent))
    from openai import BadRequestError, OpenAI
    from toolcall_eval import json_calls, json_object

    from sunwell.tools.base import ToolContext, ToolFailure, Trust
    from sunwell.tools.registry import CORE_TOOLS, select_tools
    from sunwell.tools.workspace.jail import Jail

    ws = root / f"anchor-{task.id}" / "ws"
    for name, text in task.files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text, encoding="utf-8")
    ws.mkdir(parents=True, exist_ok=True)
    tools = {t.name: t for t in select_tools(CORE_TOOLS, Trust[args.trust])}
    specs = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                               "parameters": t.parameters}} for t in tools.values()]  # fmt: skip
    client = OpenAI(base_url=args.base_url, api_key="sk-no-key", max_retries=0)
    ctx = ToolContext(jail=Jail(ws))
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
    outcome, started = Outcome(task.id, "anchor", False, "", 0), time.monotonic()
    for round_ in range(args.rounds + 1):
        try:
            reply = client.chat.completions.create(model=args.model, messages=messages, tools=specs, temperature=0,
                                                   max_tokens=args.max_tokens).choices[0].message  # fmt: skip
        except BadRequestError as exc:  # a plain client keeps no budget: the history outgrew the window
            outcome.exit, outcome.notices = 1, [f"{exc.status_code}: {str(exc.message)[:80]}"]
            break
        calls = [{"name": c.function.name, "arguments": json_object(c.function.arguments) or {}}
                 for c in reply.tool_calls or []] or json_calls(reply.content or "")  # fmt: skip
        if not calls or round_ == args.rounds:
            outcome.answer, outcome.exit = (reply.content or "")[:200], 0 if not calls else 3
            break
        ids = [f"call_{round_}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": reply.content or "", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for i, c in zip(ids, calls, strict=True)]})  # fmt: skip
        for i, call in zip(ids, calls, strict=True):
            outcome.calls.append(f"{call['name']}({json.dumps(call['arguments'], ensure_ascii=False)[:80]})")
            result = f"no tool {call['name']}"
            if tool := tools.get(call["name"]):
                try:  # the arguments as the model wrote them, unvalidated
                    result = asyncio.run(tool.handler(call["arguments"], ctx))
                except (ToolFailure, OSError, KeyError, TypeError, ValueError) as exc:
                    result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": i, "content": result})
    if isinstance(task.judge, str):
        outcome.ok, why = task.judge in outcome.answer.lower(), f"the answer does not say {task.judge!r}"
    else:
        outcome.ok, why = task.judge(ws)
    outcome.why, outcome.seconds = "" if outcome.ok else why, round(time.monotonic() - started, 1)
    return outcome


def table(outcomes: list[Outcome], modes: list[str]) -> str:
    rows = ["| task | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for task in dict.fromkeys(o.task for o in outcomes):
        cells = []
        for mode in modes:
            o = next((o for o in outcomes if o.task == task and o.mode == mode), None)
            cells.append("" if o is None else "pass" if o.ok else f"fail: {o.why}")
        rows.append(f"| {task} | " + " | ".join(cells) + " |")
    totals = []
    for mode in modes:
        done = [o for o in outcomes if o.mode == mode]
        totals.append(f"**{sum(o.ok for o in done)}/{len(done)}**")
    rows.append("| passed | " + " | ".join(totals) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:18090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--modes", default="constrained,free", type=lambda s: [x for x in s.split(",") if x])
    parser.add_argument(
        "--tasks", type=lambda s: [x for x in s.split(",") if x], help="task ids (default: all)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="--max-tool-turns of each run")
    parser.add_argument("--trust", default="workspace", help="--trust of each run (shell offers run_command)")
    parser.add_argument("--window", type=int, default=4096, help="the server's context window (its --n_ctx)")
    parser.add_argument("--max-tokens", type=int, default=512, help="max_tokens of every request")
    parser.add_argument("--timeout", type=float, default=420, help="seconds per task")
    parser.add_argument("--pythonpath", default=str(SERVER), help="where `sunwell` is imported from")
    parser.add_argument("--out", default="agentic_eval.json")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    tasks = [t for t in TASKS + QUESTIONS if args.tasks is None or t.id in args.tasks]
    root = Path(tempfile.mkdtemp(prefix="sunwell-agentic-"))
    outcomes: list[Outcome] = []
    for mode in args.modes:
        for task in tasks:
            outcome = run_anchor(task, args, root) if mode == "anchor" else run_task(task, mode, args, root)
            outcomes.append(outcome)
            if args.verbose:
                mark = "ok " if outcome.ok else "BAD"
                print(f"{mode:11} {mark} {task.id:8} {outcome.seconds:6.1f}s exit={outcome.exit} {outcome.why} "
                      f"calls={outcome.calls}", file=sys.stderr, flush=True)  # fmt: skip
            Path(args.out).write_text(json.dumps({"model": args.model, "date": time.strftime("%Y-%m-%d %H:%M"),
                                                  "outcomes": [asdict(o) for o in outcomes]}, indent=1))  # fmt: skip
    print(table(outcomes, args.modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
