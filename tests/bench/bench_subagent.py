"""What a `task` sub-agent saves the parent's context: "explore this repository and tell me where X is handled".

    python tests/bench/bench_subagent.py [--files 12] [--reads 8]

A repository of `--files` Python modules (about 150 lines each; one of them handles the retries) and the scripted
provider, which counts every request's prompt tokens like a BPE tokenizer. The same exploration is scripted twice:
the parent itself searches, lists and reads `--reads` files, then answers; or the parent hands the job to `task`,
whose sub-agent makes those very calls and answers in a paragraph, and the parent answers from that. Printed: the
tokens of the parent's last request (what its context holds when it answers) both ways and their ratio (target:
at least 3x fewer with `task`), and what the sub-agent's own context held (it is thrown away after its answer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "tests")]

from fake_provider import Call, FakeProvider, Reply

ANSWER = ("Retries are handled in pkg/transport.py: `send_with_retry` (line 12) loops up to `MAX_ATTEMPTS` (3) "
          "and sleeps `backoff(attempt)` between tries; `backoff` (line 5) returns 0.5 * 2 ** attempt seconds, "
          "capped at 8. Callers: pkg/client.py `Client.get` and `Client.post`. Nothing else retries.")


def module(n: int, retry: bool) -> str:
    lines = [f'"""Module {n}: helpers for the service layer."""', "", "import json", ""]
    if retry:
        lines += ["MAX_ATTEMPTS = 3", "", "def backoff(attempt):", "    return min(0.5 * 2 ** attempt, 8)", "",
                  "def send_with_retry(request):", "    for attempt in range(MAX_ATTEMPTS):", "        try:",
                  "            return request()", "        except OSError:", "            sleep(backoff(attempt))"]
    for f in range(14):
        lines += [f"def handler_{n}_{f}(payload, options=None):",
                  f'    """Validate the payload of kind {f} and turn it into a record for the store."""',
                  "    data = json.loads(payload) if isinstance(payload, str) else dict(payload)",
                  f"    data.setdefault('kind', {f})", "    for key in sorted(data):",
                  "        if data[key] is None:", "            del data[key]",
                  f"    return {{'module': {n}, 'handler': {f}, 'data': data, 'options': options or {{}}}}", ""]
    return "\n".join(lines) + "\n"


def repository(root: Path, files: int) -> list[str]:
    (root / "pkg").mkdir()
    names = []
    for n in range(files):
        name = "pkg/transport.py" if n == 3 else f"pkg/module_{n}.py"
        (root / name).write_text(module(n, n == 3))
        names.append(name)
    return names


def exploration(names: list[str], reads: int) -> list[Reply]:
    """The calls of an agent looking for the retries: a search, a listing, then file after file."""
    replies = [Reply(tool_calls=[Call("search_files", json.dumps({"pattern": "retry|backoff"}))]),
               Reply(tool_calls=[Call("list_files", json.dumps({"path": "pkg"}))])]
    replies += [Reply(tool_calls=[Call("read_file", json.dumps({"path": name}))]) for name in names[:reads]]
    return replies


async def parent_tokens(workspace: Path, data: Path, script: list[Reply], prompt: str) -> tuple[int, int]:
    """(tokens of the parent's last request, most tokens any sub-agent request held) for one scripted turn."""
    from sunwell.agent.chat import UserInput
    from sunwell.agent.engine import Engine
    from sunwell.agent.session import Session
    from sunwell.agent.subagent import INSTRUCTIONS
    from sunwell.config import Settings

    with FakeProvider(context_limit=1_000_000) as fake:
        os.environ.update(OPENAI_BASE_URL=f"{fake.url}/v1", OPENAI_API_KEY="sk-bench")
        engine = Engine(Settings(model="openai:gpt-4o", data_dir=data, approval="auto"), workspace)
        fake.script(*script)
        done = await Session(engine, None).submit(UserInput(prompt), lambda event: None)
        assert done.done.status == "completed", done.done
        await engine.aclose()
        sub = [r for r in fake.requests if INSTRUCTIONS[:40] in r.body["messages"][0]["content"]]
        parent = [r for r in fake.requests if r not in sub]
        return parent[-1].tokens or 0, max((r.tokens or 0 for r in sub), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--reads", type=int, default=8)
    args = parser.parse_args()
    prompt = "Explore this repository and tell me where retries are handled."
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        names = repository(workspace, args.files)
        names.sort(key=lambda name: name != "pkg/transport.py")
        alone = [*exploration(names, args.reads), Reply(text=ANSWER)]
        task = Call("task", json.dumps({"description": "Find the retry handling", "prompt": prompt}))
        delegated = [Reply(tool_calls=[task]), *exploration(names, args.reads), Reply(text=ANSWER), Reply(text=ANSWER)]
        without, _ = asyncio.run(parent_tokens(workspace, Path(tmp) / "d1", alone, prompt))
        with_task, sub_held = asyncio.run(parent_tokens(workspace, Path(tmp) / "d2", delegated, prompt))
    print(f"{args.files} files, {args.reads} read; tokens of the parent's last request:")
    print(f"  without task: {without:>7,}")
    print(f"  with task:    {with_task:>7,}  ({without / with_task:.1f}x fewer; the sub-agent's own context held "
          f"{sub_held:,} at most, dropped after its answer)")


if __name__ == "__main__":
    main()
