"""`task`: read-only sub-agents through a real engine and its sessions, and `sunwell run` (only the model's answers are
scripted): their events marked with the call, only their answer in the parent's context, their tools read-only,
several of one reply at once, the limit of their round trips, cancelled with their turn, indented in the terminal."""

from __future__ import annotations

import asyncio
import json
import threading

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.agent.chat import UserInput
from sunwell.agent.session import Session
from sunwell.agent.subagent import INSTRUCTIONS

OPENAI = "openai:gpt-4o"


def call(name: str, call_id: str | None = None, **arguments) -> Call:
    return Call(name, json.dumps(arguments), id=call_id)


def is_subagent(body: dict) -> bool:
    return INSTRUCTIONS[:40] in body["messages"][0]["content"]


def tool_names(body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


async def run(engine, text: str) -> list[dict]:
    events: list = []
    await Session(engine, None).submit(UserInput(text), events.append)
    return [event.wire() for event in events]


async def test_a_sub_agent_explores_and_only_its_answer_reaches_the_parent(engine, fake, workspace):
    (workspace / "src" / "retry.py").write_text("def backoff(n):\n    return 2 ** n  # the retry delay\n")
    fake.script(Reply(tool_calls=[call("task", "call_task", description="Find the retry delay",
                                       prompt="Where is the retry delay computed? Report file and line.")]),
                Reply(tool_calls=[call("search_files", pattern="retry delay")]),
                Reply(tool_calls=[call("read_file", path="src/retry.py")]),
                Reply(text="src/retry.py:2, backoff(n) returns 2 ** n."),
                Reply(text="The delay is computed in src/retry.py line 2."))
    events = await run(engine, "where is the retry delay computed?")
    check_stream_rules(events)
    assert events[-1]["status"] == "completed" and events[-1]["toolCalls"] == 3
    nested = [e for e in events if e.get("parentCallId")]
    assert {e["parentCallId"] for e in nested} == {"call_task"}
    assert [e["name"] for e in nested if e["type"] == "toolCall"] == ["search_files", "read_file"]
    assert not any(e["type"] in ("done", "contextUsage", "text", "thinking") for e in nested)
    assert all("parentCallId" not in e for e in events if e not in nested)
    task = next(e for e in events if e["type"] == "toolResult" and e["callId"] == "call_task")
    assert task["ok"] and task["output"] == "src/retry.py:2, backoff(n) returns 2 ** n."
    assert task["data"] == {"kind": "subagent", "description": "Find the retry delay",  # what its card draws
                            "answer": "src/retry.py:2, backoff(n) returns 2 ** n."}
    # the sub-agent starts from nothing: its instructions and the prompt, never the parent's conversation
    first_sub = fake.requests[1].body
    assert is_subagent(first_sub) and first_sub["messages"][1]["content"].startswith("Where is the retry delay")
    assert sorted(tool_names(first_sub)) == ["get_time", "kv_get", "list_files", "math_eval", "read_file",
                                             "search_files", "web_fetch"]
    # the parent's last request holds the answer alone: no search hit, no file content
    last = json.dumps(fake.requests[-1].body["messages"])
    assert "backoff(n) returns" in last and "# the retry delay" not in last and "search_files" not in last
    # the session keeps the parent's messages only; the log keeps the sub-agent's events, marked
    messages = engine.store.messages(events[0]["session"])
    assert not any("read_file" in json.dumps(m.model_dump()) for m in messages)
    replayed = Session(engine, events[0]["session"]).replay()
    assert [e.name for e in replayed if e.type == "toolCall" and e.parent_call_id == "call_task"] == \
        ["search_files", "read_file"]
    assert next(e for e in replayed if e.type == "toolResult" and e.call_id == "call_task").data.answer.startswith(
        "src/retry.py:2")  # replayed with its data


async def test_a_sub_agent_cannot_write_nor_start_another(engine, fake, workspace):
    fake.script(Reply(tool_calls=[call("task", "t1", description="Try to write", prompt="Write x.txt")]),
                Reply(tool_calls=[call("write_file", path="x.txt", content="no"), call("task", description="again",
                                                                                       prompt="again")]),
                Reply(text="I could not."),
                Reply(text="It could not."))
    events = await run(engine, "go")
    check_stream_rules(events)
    refused = [(e["name"], e["error"]["code"]) for e in events if e["type"] == "toolResult" and e.get("parentCallId")]
    assert refused == [("write_file", "permission"), ("task", "permission")]
    assert not (workspace / "x.txt").exists()


async def test_several_tasks_of_one_reply_run_at_once(engine, fake, workspace):
    arrived: list[str] = []
    both_asked = threading.Event()
    overlapped: dict[str, bool] = {}
    lock = threading.Lock()

    def model(body: dict) -> Reply:
        if not is_subagent(body):
            done = any(m["role"] == "tool" for m in body["messages"])
            return Reply(text="both found") if done else Reply(tool_calls=[
                call("task", "ta", description="A", prompt="job A"), call("task", "tb", description="B",
                                                                          prompt="job B")])
        job = body["messages"][1]["content"]
        with lock:
            arrived.append(job)
            if len(arrived) == 2:
                both_asked.set()
        # the second sub-agent asks while the first still waits for its answer (run one after the other, the first
        # would wait here in vain)
        overlapped[job] = both_asked.wait(5)
        return Reply(text=f"answer to {job}")

    fake.script(*[model] * 4)
    events = await run(engine, "two jobs")
    check_stream_rules(events)
    assert sorted(arrived) == ["job A", "job B"] and overlapped == {"job A": True, "job B": True}
    outputs = {e["callId"]: e["output"] for e in events if e["type"] == "toolResult"}
    assert outputs == {"ta": "answer to job A", "tb": "answer to job B"}


async def test_a_sub_agent_stops_at_its_own_tool_turn_limit(engine, fake):
    engine.settings.subagent.max_tool_turns = 2
    fake.script(Reply(tool_calls=[call("task", "t", description="Loop", prompt="list forever")]),
                Reply(tool_calls=[call("list_files", path=".")]),
                Reply(tool_calls=[call("list_files", path="src")]),
                Reply(text="summary after the limit"),
                Reply(text="ok"))
    events = await run(engine, "go")
    check_stream_rules(events)
    task = next(e for e in events if e["type"] == "toolResult" and e["callId"] == "t")
    assert task["output"] == "summary after the limit"
    assert "tools" not in fake.requests[3].body or fake.requests[3].body.get("tool_choice") == "none"


async def test_a_sub_agent_is_cancelled_with_its_turn(engine, fake):
    fake.script(Reply(tool_calls=[call("task", "t", description="Slow", prompt="take your time")]),
                Reply(text="s" * 200, chunk=1, delay=0.05))
    events: list = []
    turn = asyncio.ensure_future(Session(engine, None).submit(UserInput("go"), events.append))
    while len(fake.requests) < 2:  # the sub-agent is streaming its answer
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    turn.cancel()
    try:
        await turn
    except asyncio.CancelledError:
        pass  # the engine's turn ends with its `done` either way
    wired = [e.wire() for e in events]
    check_stream_rules(wired)
    assert wired[-1]["status"] == "cancelled"
    task = next(e for e in wired if e["type"] == "toolResult" and e["callId"] == "t")
    assert task["error"]["code"] == "interrupted"


def test_the_terminal_indents_a_sub_agents_calls(sunwell, fake):
    fake.script(Reply(tool_calls=[call("task", "t", description="Look", prompt="list the files")]),
                Reply(tool_calls=[call("list_files")]),
                Reply(text="two files"),
                Reply(text="There are two files."))
    run = sunwell("run", "what is here?", "--model", OPENAI)
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    task_line = next(i for i, line in enumerate(lines) if line.startswith("↪ task("))
    assert lines[task_line + 1].startswith("    ↪ list_files(")
    assert lines[task_line + 2].startswith("    ✔")
    assert lines[task_line + 3].startswith("  ✔")
    assert "two files" not in "\n".join(lines[:task_line + 3])
