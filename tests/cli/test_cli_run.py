"""`sunwell run` end to end: a real subprocess, the real SDKs, a scripted provider on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Fail, Reply

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"


def test_text_answer_streams_as_events(sunwell, fake):
    fake.script(Reply(text="Hello there, friend.", chunk=3))
    run = sunwell("run", "hi", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "Hello there, friend."
    assert run.events[-1]["status"] == "completed"
    assert run.events[-1]["usage"] == {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 0, "cacheWriteTokens": 0}
    assert run.stderr == ""


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_tool_round_trip(sunwell, fake, model):
    fake.script(Reply(text="Let me look.", tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=1),
                Reply(text="It says hello."))
    run = sunwell("run", "What does a.txt say?", "--model", model, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    types = [e["type"] for e in run.events]
    assert types.index("toolCallStart") < types.index("toolCallDelta") < types.index("toolCall")
    call = next(e for e in run.events if e["type"] == "toolCall")
    assert call["name"] == "read_file" and call["arguments"] == {"path": "a.txt"}
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "hello from a" in result["output"]
    # the second request carried the result back, in the vendor's own shape (the fake validates pairing)
    second = json.dumps(fake.requests[-1].body)
    assert "hello from a" in second
    assert fake.remaining == 0


def test_parallel_reads_keep_call_order(sunwell, fake):
    calls = [Call("read_file", '{"path": "a.txt"}'), Call("list_files", '{"path": "src"}'),
             Call("search_files", '{"pattern": "return"}')]
    fake.script(Reply(tool_calls=calls, chunk=2), Reply(text="done"))
    run = sunwell("run", "look around", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    tool_messages = [m for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3"]
    assert "src/app.py" in tool_messages[1]["content"] and "src/app.py:2:" in tool_messages[2]["content"]


def test_bad_calls_become_error_results_the_model_reads(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": 5}'), Call("delete_everything", "{}"),
                                  Call("read_file", '{"path": "../outside.txt"}'),
                                  Call("read_file", '{"path": ".env"}'),
                                  Call("list_files", '{"path": "src"}')]),
                Reply(text="sorry"))
    run = sunwell("run", "go", "--model", OPENAI, "--json", "--trust", "read_only")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    errors = [e["error"] for e in sorted((e for e in run.events if e["type"] == "toolResult"),
                                         key=lambda e: e["callId"])]
    assert [e and e["code"] for e in errors] == ["validation", "unknown_tool", "permission", "permission", None]
    assert "path" in errors[0]["message"] and "string" in errors[0]["message"]
    assert "read_file" in errors[1]["suggestion"]
    assert run.events[-1]["toolCalls"] == 5
    sent = json.dumps(fake.requests[-1].body)
    assert "canary-123" not in sent and "Error [unknown_tool]" in sent


def test_malformed_arguments_are_repaired_or_reported(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("read_file", "{'path': 'a.txt',}"), Call("read_file", "not json at all")]),
                Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--json")
    check_stream_rules(run.events)
    results = {e["callId"]: e for e in run.events if e["type"] == "toolResult"}
    assert results["call_1"]["ok"] and "hello from a" in results["call_1"]["output"]
    assert results["call_2"]["error"]["code"] == "validation"
    raw_call = [e for e in run.events if e["type"] == "toolCall"][1]
    assert raw_call["arguments"] == {} and raw_call["raw"] == "not json at all"
    assert any(e["type"] == "notice" and e["code"] == "repaired_arguments" for e in run.events)


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_tool_turn_limit_asks_for_a_summary(sunwell, fake, model):
    loop = Reply(tool_calls=[Call("list_files", "{}")])
    fake.script(loop, loop, Reply(text="Summary: I listed files twice."))
    run = sunwell("run", "go", "--model", model, "--json", "--max-tool-turns", "2")
    assert run.code == 3, run.stderr
    check_stream_rules(run.events)
    assert run.events[-1]["status"] == "limitReached"
    last = fake.requests[-1].body
    if model == OPENAI:
        assert "tools" not in last
    else:
        assert last["tool_choice"] == {"type": "none"} and last["tools"]


def test_rate_limit_is_retried_with_a_notice(sunwell, fake):
    fake.script(Fail(429, "slow down", headers={"retry-after": "0"}), Reply(text="fine"))
    run = sunwell("run", "hi", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    notices = [e for e in run.events if e["type"] == "notice"]
    assert [n["code"] for n in notices] == ["provider_retry"]


def test_persistent_server_error_ends_the_turn(sunwell, fake):
    fake.script(*[Fail(500, "boom", headers={"retry-after": "0"})] * 3)
    run = sunwell("run", "hi", "--model", ANTHROPIC, "--json")
    assert run.code == 1
    check_stream_rules(run.events)
    assert run.events[-1]["status"] == "error" and run.events[-1]["error"]
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr


def test_cut_stream_never_runs_a_partial_call(sunwell, fake, workspace):
    fake.script(Reply(text="Reading", tool_calls=[Call("read_file", '{"path": "a.txt"}')], chunk=1, cut_after=8))
    run = sunwell("run", "hi", "--model", OPENAI, "--json")
    assert run.code == 1
    check_stream_rules(run.events)
    assert not [e for e in run.events if e["type"] == "toolCall"]


def test_provider_rejection_shows_its_message(sunwell, fake):
    # a refusal for length is retried once, made smaller (test_context_budget.py); the second one ends the turn. The
    # ~2k-token prompt keeps the retry inside the guessed window (8k) whatever the length of the workspace's path.
    fake.script(Fail(400, "context length exceeded by 10 tokens"), Fail(400, "context length exceeded by 10 tokens"))
    run = sunwell("run", "hi " + "more words here " * 500, "--model", OPENAI)
    assert run.code == 1 and len(fake.requests) == 2
    assert "context length exceeded by 10 tokens" in run.stderr and len(run.stderr.splitlines()) == 1


@pytest.mark.parametrize("args, extra, needle", [
    (["--model", ""], {}, "no model"),
    (["--model", "acme:model-1"], {}, "unknown provider"),
    (["--model", OPENAI], {"OPENAI_API_KEY": ""}, "OPENAI_API_KEY"),
    (["--model", OPENAI, "--workspace", "/nonexistent/ws"], {}, "workspace"),
    (["--model", OPENAI, "--session", "nope"], {}, "unknown session"),
    (["--model", OPENAI, "--tools", "read_file,frobnicate"], {}, "frobnicate"),
])
def test_setup_errors_exit_2_with_one_line(sunwell, args, extra, needle):
    run = sunwell("run", "hi", *args, extra_env=extra)
    assert run.code == 2, (run.stdout, run.stderr)
    assert needle in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert run.stdout == ""


def test_unreachable_endpoint(sunwell):
    run = sunwell("run", "hi", "--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1", "--json")
    assert run.code == 1
    assert "cannot reach" in run.stderr
    check_stream_rules(run.events)


def test_session_continues_in_a_new_process(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]), Reply(text="It says hello."),
                Reply(text="You asked about a.txt."))
    first = sunwell("run", "read a.txt", "--model", ANTHROPIC, "--json")
    session = first.events[0]["session"]
    second = sunwell("run", "what did I ask?", "--model", ANTHROPIC, "--json", "--session", session)
    assert second.code == 0, second.stderr
    assert second.events[0]["session"] == session and second.events[0]["turn"] != first.events[0]["turn"]
    messages = fake.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "hello from a" in json.dumps(messages)
    listing = sunwell("sessions", "list")
    assert session in listing.stdout and "2 turn" in listing.stdout
    exported = json.loads(sunwell("sessions", "export", session).stdout)
    assert exported["id"] == session and any(e["kind"] == "toolCall" for e in exported["events"])


def _start(env, workspace, *args):
    return subprocess.Popen([sys.executable, "-m", "sunwell", "run", *args], cwd=workspace, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_event(proc, kind: str) -> list[dict]:
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["type"] == kind:
            return seen
    raise AssertionError(f"no {kind} event before exit: {seen}")


def test_ctrl_c_cancels_the_turn(env, workspace, fake):
    fake.script(Reply(text="a long answer " * 50, chunk=2, delay=0.05))
    proc = _start(env, workspace, "hi", "--model", OPENAI, "--json")
    _wait_for_event(proc, "text")
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - started < 5
    assert proc.returncode == 130, err
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "done" and last["status"] == "cancelled"


def test_kill_9_mid_turn_then_continue(env, workspace, fake, sunwell):
    # The kill lands once the answer after the tool result has begun to stream (it would take ~50 s more):
    # the turn is mid-answer, and that slow answer is spent on the killed run, not left for the next one.
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]),
                Reply(text="slow " * 200, chunk=1, delay=0.05))
    proc = _start(env, workspace, "read a.txt", "--model", OPENAI, "--json")
    events = _wait_for_event(proc, "text")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert [e["type"] for e in events].count("toolResult") == 1 and fake.remaining == 0
    session = events[0]["session"]
    fake.script(Reply(text="Back again."))
    run = sunwell("run", "continue", "--model", OPENAI, "--json", "--session", session)
    assert run.code == 0, run.stderr  # the fake rejects a conversation with an unanswered call
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "Back again."
    roles = [m["role"] for m in fake.requests[-1].body["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"]


def test_readable_transcript(sunwell, fake):
    fake.script(Reply(text="Looking.", tool_calls=[Call("read_file", '{"path": "a.txt"}'),
                                                   Call("read_file", '{"path": "../x"}')]),
                Reply(text="Done."))
    run = sunwell("run", "go", "--model", OPENAI)
    assert run.code == 0, run.stderr
    assert '↪ read_file(path="a.txt")' in run.stdout
    assert "✔ 2 lines ·" in run.stdout
    assert "✘ permission: path escapes the workspace" in run.stdout
    assert run.stdout.rstrip().endswith("Done.")


def test_prompt_from_stdin(sunwell, fake):
    fake.script(Reply(text="ok"))
    run = sunwell("run", "--model", OPENAI, "--json", input="from stdin\n")
    assert run.code == 0, run.stderr
    assert fake.requests[0].body["messages"][-1]["content"] == "from stdin\n"


def test_corrupt_session_database_is_reported_and_kept(sunwell, fake, tmp_path):
    db = tmp_path / "data" / "sessions.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database at all" * 100)
    run = sunwell("run", "hi", "--model", OPENAI)
    assert run.code == 1 and "sessions.db" in run.stderr and len(run.stderr.splitlines()) == 1
    assert db.read_bytes() == b"not a database at all" * 100
    assert fake.requests == []


def test_an_empty_answer_ends_the_turn_visibly(sunwell, fake):
    fake.script(Reply(text=""))
    run = sunwell("run", "hi", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    notice = next(e for e in run.events if e["type"] == "notice")
    assert (notice["code"], notice["message"]) == ("empty_answer", "The model returned no answer.")
    fake.script(Reply(text=""))
    assert "The model returned no answer." in sunwell("run", "hi", "--model", OPENAI).stdout  # the terminal too
