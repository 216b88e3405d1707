"""Compaction mid-turn is a step like the others (issue 30, item 4): a real `sunwell run` killed with SIGKILL while
the summary is being made, then `sunwell run --resume` makes it again before the very request it was made for."""

from __future__ import annotations

import json

from fake_provider import Call, Reply
from test_durable_support import OPENAI, Crashing, files_of, log_rows

pytest_plugins = ["test_durable_support"]  # the `user_config` fixture


def test_killed_during_compaction_it_is_made_again_before_the_same_request(sunwell, fake, env, workspace,
                                                                           user_config):
    from sunwell.agent.prompts import COMPACT_SYSTEM

    user_config('models:\n  "openai:gpt-4o": {context_window: 8192}\n')
    fake.context_limit = 8192
    for n in range(8):
        (workspace / f"f{n}.py").write_text("".join(f"def func_{n}_{i}(value):  # helper {i} of file {n}\n"
                                                    f"    return value * {i} + {n}\n" for i in range(100)))
    untouched = files_of(workspace)
    summaries: list[dict] = []
    reads = [f"f{n % 8}.py" for n in range(16)]
    writes = [Call("write_file", json.dumps({"path": "notes.md", "content": "before the compaction\n"})),
              Call("write_file", json.dumps({"path": "f0.py", "content": "after it\n"}))]

    def model(body: dict) -> Reply:
        if COMPACT_SYSTEM in json.dumps(body["messages"][0]):
            summaries.append(body)
            held = workspace / "never" if len(summaries) == 1 else None
            return Reply(text=f"Summary {len(summaries)}: files were read.", wait_for=held)
        if reads:
            first = [writes.pop(0)] if len(reads) == 16 else []
            return Reply(text="Reading the next one to compare the helpers. " * 25,  # text is never elided
                         tool_calls=[*first, Call("read_file", json.dumps({"path": reads.pop(0)}))])
        if writes:
            return Reply(tool_calls=[writes.pop(0)])
        return Reply(text="Read them all.")

    fake.script(*[model] * 100)
    run = Crashing(env, workspace, "read them", "--json", "--yes", "--model", OPENAI)
    run.kill_when(lambda: len(summaries) == 1, timeout=60)
    assert not any(kind == "compaction" for kind, _ in log_rows(env))
    assert (workspace / "notes.md").exists()  # the turn wrote before the crash
    asked_before = [r.body for r in fake.requests if COMPACT_SYSTEM not in json.dumps(r.body["messages"][0])]

    resumed = sunwell("run", "--resume", "--json", "--yes")
    assert resumed.code == 0, resumed.stderr
    assert summaries[1] == summaries[0]  # the same compaction, made again
    assert [e["code"] for e in resumed.events if e["type"] == "notice"].count("compacted") >= 1
    assert [kind for kind, _ in log_rows(env)].count("compaction") >= 1
    asked_after = [r.body for r in fake.requests if COMPACT_SYSTEM not in json.dumps(r.body["messages"][0])]
    assert asked_after[: len(asked_before)] == asked_before and not reads and not writes
    assert resumed.events[-1]["status"] == "completed"
    assert (workspace / "notes.md").exists() and (workspace / "f0.py").read_text() == "after it\n"

    undone = sunwell("undo")  # the whole turn, before and after the crash
    assert undone.code == 0, undone.stderr
    assert files_of(workspace) == untouched
