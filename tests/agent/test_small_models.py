"""Small-model discipline end to end: a 0.5B model (emulated, hermes) through the CLI against the scripted server.

What the real Qwen2.5-Coder-0.5B does, scripted: it copies an absolute root into paths, keeps calling the same tool
after it has the result, and writes a call again when shown the history with "answer now". See test_real_model.py
for the same against the real model.
"""

from __future__ import annotations

import json

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.agent.prompts import ANSWER_FROM_RESULTS, named_files_note

SMALL = "openai-compatible:qwen2.5-coder-0.5b"


def hermes(name: str, arguments: dict, *, free: bool = True) -> list[Reply]:
    """A call in Qwen's own format; twice when it is `free` to answer instead: opened in the free request, then
    written again in the one that should hold it to the schema (the fake ignores schemas), as `choice.py` asks
    for a call. A turn's first call is not free when the request names a workspace file (`plan.read_first`)."""
    reply = Reply(text=f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>", chunk=7)
    return [reply] * (2 if free else 1)


def small(sunwell, fake, prompt, *flags):
    return sunwell("run", prompt, "--model", SMALL, "--base-url", f"{fake.url}/v1", "--json", *flags)


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


def test_a_small_model_sees_the_files_not_the_absolute_root(sunwell, fake, workspace):
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False), Reply(text="It says hello from a."))
    run = small(sunwell, fake, "Read a.txt and tell me what it says")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    system = system_of(fake.requests[0])
    assert "Files in the workspace: a.txt, src/app.py" in system
    assert str(workspace) not in system and ".env" not in system.split("Files in the workspace")[1]
    assert fake.requests[0].body["temperature"] == 0  # small models sample greedily: steadier calls
    assert "<tool_call>" not in "".join(e["delta"] for e in run.events if e["type"] == "text")


def test_a_big_model_keeps_the_root_and_the_server_default_temperature(sunwell, fake, workspace):
    fake.script(Reply(text="hi"))
    run = sunwell("run", "hello", "--model", "openai:gpt-4o", "--json")
    assert run.code == 0, run.stderr
    assert str(workspace) in system_of(fake.requests[0]) and "Files in the workspace" not in system_of(fake.requests[0])
    assert "temperature" not in fake.requests[0].body


def test_the_temperature_can_be_set_per_model(sunwell, fake, tmp_path):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("models:\n  gpt-4o: {temperature: 0.3}\n")
    fake.script(Reply(text="hi"))
    assert sunwell("run", "hello", "--model", "openai:gpt-4o", "--json").code == 0
    assert fake.requests[0].body["temperature"] == 0.3
    config.write_text("models:\n  gpt-4o: {temperature: 7}\n")
    run = sunwell("run", "hello", "--model", "openai:gpt-4o", "--json")
    assert run.code == 2 and "temperature" in run.stderr


def test_a_repeated_read_ends_in_an_answer_from_the_results(sunwell, fake):
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False), *hermes("read_file", {"path": "a.txt"}),
                Reply(text="a.txt says hello from a."))
    run = small(sunwell, fake, "Read a.txt and tell me what it says")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    results = [e for e in run.events if e["type"] == "toolResult"]
    # the card shows the tool's output; the steering text is for the model, and the user gets a notice instead
    assert [r["ok"] for r in results] == [True, True] and results[1]["output"] == results[0]["output"]
    assert all("[Sunwell]" not in r["output"] for r in results)
    assert any(e["type"] == "notice" and e["code"] == "repeated_call" for e in run.events)
    [notice] = [e for e in run.events if e["type"] == "notice" and e["code"] == "answer_from_results"]
    assert "read_file" in notice["message"]
    assert len(fake.requests) == 4
    last = fake.requests[3].body
    assert last["messages"][0] == {"role": "system", "content": ANSWER_FROM_RESULTS}
    [ask] = last["messages"][1:]
    assert ask["role"] == "user" and ask["content"].startswith("Request: Read a.txt and tell me what it says")
    assert 'read_file({"path": "a.txt"}) returned:\nhello from a' in ask["content"]
    assert "tools" not in last and "<tool_call>" not in ask["content"]
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "a.txt says hello from a."
    # The meter shows the conversation, not the small answer request beside it (issue 34 bug 3: "≈4 %" against
    # `::context`'s 36 %): it only grows over the turn.
    meter = [e["usedTokens"] for e in run.events if e["type"] == "contextUsage"]
    # one per reply: the second read, opened free and then held to the schema, is one reply of two requests
    assert len(meter) == len(fake.requests) - 1 and meter == sorted(meter), meter


def test_the_same_write_again_runs_and_then_asks_for_the_answer(sunwell, fake, workspace):
    write = {"path": "b.txt", "content": "HELLO WORLD"}
    fake.script(*hermes("write_file", write), *hermes("write_file", write), Reply(text="I wrote b.txt."))
    run = small(sunwell, fake, "Write HELLO WORLD to b.txt", "--yes")
    assert run.code == 0, run.stderr
    assert [e["ok"] for e in run.events if e["type"] == "toolResult"] == [True, True]
    [notice] = [e for e in run.events if e["type"] == "notice" and e["code"] == "answer_from_results"]
    assert "same write_file" in notice["message"]
    assert len(fake.requests) == 5 and fake.requests[4].body["messages"][0]["content"] == ANSWER_FROM_RESULTS
    assert (workspace / "b.txt").read_text() == "HELLO WORLD"


def test_the_same_content_again_with_other_arguments_also_ends_it(sunwell, fake):
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False),
                *hermes("read_file", {"path": "a.txt", "offset": 1}), Reply(text="hello from a"))
    run = small(sunwell, fake, "Read a.txt")
    assert run.code == 0, run.stderr
    assert [e["code"] for e in run.events if e["type"] == "notice"] == ["answer_from_results"]
    assert fake.requests[3].body["messages"][0]["content"] == ANSWER_FROM_RESULTS


def test_at_the_limit_a_small_model_answers_from_its_results_not_the_history(sunwell, fake):
    fake.script(*hermes("read_file", {"path": "nope.txt"}), *hermes("list_files", {"path": "."}),
                Reply(text="The workspace holds a.txt and src/."))
    run = small(sunwell, fake, "What is here?", "--max-tool-turns", "2")
    assert run.code == 3, run.stderr  # stopped at the tool-turn limit
    check_stream_rules(run.events)
    ask = fake.requests[4].body["messages"][1]["content"]
    assert "list_files" in ask and "a.txt" in ask and "nope.txt" not in ask  # a failure it moved past is left out
    assert run.events[-1]["status"] == "limitReached"


def test_a_big_model_at_the_limit_is_asked_in_the_history(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]),
                Reply(tool_calls=[Call("read_file", '{"path": "a.txt"}')]), Reply(text="done"))
    run = sunwell("run", "go", "--model", "openai:gpt-4o", "--json", "--max-tool-turns", "2")
    assert run.code == 3, run.stderr
    assert not [e for e in run.events if e["type"] == "notice" and e["code"] == "answer_from_results"]
    last = fake.requests[2].body
    assert "[Sunwell] The tool-call limit" in last["messages"][-1]["content"]


def test_the_file_list_is_shallow_first_bounded_and_leaves_out_hidden_and_blocked(tmp_path):
    from sunwell.agent.prompts import workspace_files
    from sunwell.tools.workspace.jail import Jail

    for rel in ("z.md", "src/app.py", "src/deep/x.py", ".venv/lib/site.py", "node_modules/m/i.js", "key.pem",
                ".env", "docs/a.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "link.py").symlink_to(tmp_path / "z.md")
    jail = Jail(tmp_path)
    assert workspace_files(jail) == ["z.md", "docs/a.md", "src/app.py", "src/deep/x.py"]
    assert workspace_files(jail, limit=2) == ["z.md", "docs/a.md", "…"]


def test_a_small_model_repeating_a_failing_call_is_asked_for_its_answer(sunwell, fake, workspace):
    # Seen in the demo workspace: after reading src/calc.py, Qwen 0.5B calls `add` (a function in it) until stopped.
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False), *hermes("add", {"a": 5, "b": 3}),
                *hermes("add", {"a": 5, "b": 3}),
                Reply(text="a.txt says hello from a."))
    run = small(sunwell, fake, "Read a.txt and tell me what it says")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert [e["error"]["code"] for e in run.events if e["type"] == "toolResult" and not e["ok"]] == ["unknown_tool"] * 2
    [notice] = [e for e in run.events if e["type"] == "notice"]
    assert notice["code"] == "answer_from_results" and "add" in notice["message"]
    ask = fake.requests[5].body["messages"][1]["content"]
    assert "hello from a" in ask and "add" not in ask.split("Tool results:")[1]
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "a.txt says hello from a."
    # The meter shows the conversation, not the small answer request beside it (issue 34 bug 3: "≈4 %" against
    # `::context`'s 36 %): it only grows over the turn.
    meter = [e["usedTokens"] for e in run.events if e["type"] == "contextUsage"]
    # one per reply: each `add`, opened free and then held to the schema, is one reply of two requests
    assert len(meter) == len(fake.requests) - 2 and meter == sorted(meter), meter


def test_an_empty_answer_after_tools_is_asked_again_from_the_results(sunwell, fake):
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False), Reply(text=""),
                Reply(text="It says hello from a."))
    run = small(sunwell, fake, "Read a.txt and tell me what it says")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert [e["code"] for e in run.events if e["type"] == "notice"] == ["answer_from_results"]
    assert fake.requests[2].body["messages"][0]["content"] == ANSWER_FROM_RESULTS
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "It says hello from a."
    # The session keeps a valid history: the empty answer was dropped, the real one follows the tool result.
    shown = sunwell("sessions", "show", run.events[0]["session"])
    assert shown.code == 0 and "It says hello from a." in shown.stdout


def test_the_request_names_the_files_it_mentions(sunwell, fake, workspace):
    fake.script(*hermes("read_file", {"path": "a.txt"}, free=False), Reply(text="ok"))
    assert small(sunwell, fake, "Compare a.txt with src/app.py, not .env or missing.txt").code == 0
    # told only that they exist, a 0.5B model lists them first; told the tool, it reads them. Said after the line,
    # in the turn's first request only: the system prompt stays the same from turn to turn (issue 42)
    note = "The user's request names the files a.txt, src/app.py, which exist: read them with read_file."
    first, second = (r.body["messages"] for r in fake.requests)
    assert first[-1]["content"].startswith(f"Compare a.txt with src/app.py, not .env or missing.txt\n\n{note}")
    assert note not in json.dumps(second) and note not in system_of(fake.requests[0])


def test_the_reading_tool_is_named_only_when_offered():
    assert named_files_note(["a.txt"], "read_file") == (
        "The user's request names the file a.txt, which exists: read it with read_file.")
    assert named_files_note(["a.txt"], None) == "The user's request names the file a.txt."


def test_a_call_written_as_python_runs_and_is_never_shown(sunwell, fake):
    # Qwen 0.5B at the server's default temperature once answered with exactly this.
    fake.script(Reply(text='Read_file(path="a.txt", offset=1, limit=2000)', chunk=3), Reply(text="It says hello."))
    run = small(sunwell, fake, "Read a.txt and tell me what it says")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and result["name"] == "read_file" and "hello from a" in result["output"]
    codes = [e["code"] for e in run.events if e["type"] == "notice"]
    assert "tool_call_repaired" in codes and "repaired_tool_name" in codes
    assert "".join(e["delta"] for e in run.events if e["type"] == "text") == "It says hello."
