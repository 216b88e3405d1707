"""The command line as a new user finds it (issue 41, item 2), through the real `sunwell` subprocess: a reader that
stops early, `--json` that is JSON whatever there is to list, `::commands` as the prompt of `sunwell run`, a
`--dry-run` value it does not know, a dry run above the trust level, a path as the user means it, a denial said
once, a duration that is the tool's own, a sign-in failure said once, and the README's table of every command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from api_server import pokeapi_document
from conftest import ROOT, check_stream_rules
from fake_provider import Call, Reply
from mcp_support import free_port, write_user_config
from test_approvals import Terminal, write_call
from test_mcp_offerings import offerings, user_text

OPENAI = "openai:gpt-4o"


def closed_pipe_run(env: dict, cwd: Path, *args: str, lines: str = "") -> subprocess.CompletedProcess:
    """`sunwell ARGS` writing to a pipe whose reader has already gone, as `| head -1` leaves it once it has its line."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "sunwell", *args], stdout=write, stderr=subprocess.PIPE,
                              input=lines, text=True, env=env, cwd=cwd, timeout=60, check=False)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [("sessions", "list"), ("version",), ("version", "--json"),
                                  ("models", OPENAI, "--json"), ("run", "hi", "--model", OPENAI),
                                  ("run", "hi", "--model", OPENAI, "--json"), ("--help",)])
def test_a_reader_that_stops_early_is_not_an_error(args, sunwell, fake, env, workspace):
    fake.script(Reply(text="a first answer, for a session to list"), Reply(text="and the answer no one reads"))
    assert sunwell("run", "hello", "--model", OPENAI).code == 0
    ran = closed_pipe_run(env, workspace, *args)
    assert (ran.returncode, ran.stderr) == (0, "")


def test_a_chat_whose_reader_stopped_ends_without_a_word(env, workspace):
    ran = closed_pipe_run(env, workspace, "chat", "--model", OPENAI, lines="::help\n::context\n::tools\n")
    assert (ran.returncode, ran.stderr) == (0, "")


@pytest.mark.parametrize("args", [("mcp", "list", "--json"), ("tools", "list", "--json"), ("hooks", "list", "--json"),
                                  ("version", "--json"), ("models", OPENAI, "--json"), ("sessions", "list", "--json")])
def test_json_output_is_json_with_nothing_configured(args, sunwell):
    run = sunwell(*args)
    assert run.code == 0, run.stderr
    if args[0] == "version":
        assert json.loads(run.stdout)["sunwell"]  # one object
        return
    for line in run.stdout.splitlines():
        json.loads(line)  # JSON lines: an empty list is no line at all, never a sentence


def test_run_answers_a_chat_command_without_asking_the_model(sunwell, fake):
    run = sunwell("run", "::help", "--model", OPENAI)
    assert run.code == 0, run.stderr
    assert "::context" in run.stdout and "::help" in run.stdout
    assert fake.requests == []


def test_run_json_gives_a_command_its_command_output_event(sunwell, fake):
    run = sunwell("run", "::context", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    [output] = [e for e in run.events if e["type"] == "commandOutput"]
    assert output["command"] == "context" and output["output"]
    assert run.events[-1]["status"] == "completed" and fake.requests == []


def test_run_expands_a_server_prompt_into_the_turn(sunwell, fake, tmp_path):
    write_user_config(tmp_path / "config", mcp_servers={"notes": offerings()})
    fake.script(Reply(text="reviewed"))
    run = sunwell("run", '::notes:review path=src/app.py focus="style issues"', "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    assert "Review src/app.py and report style issues" in user_text(fake.requests[-1])


@pytest.mark.parametrize("args", [("--dry-run=bogus", "hi"), ("--dry-run", "risky", "hi"), ("--dry-run", "all"),
                                  ("hi", "--dry-run", "risky")])
def test_a_dry_run_value_it_does_not_take_names_the_ones_it_does(args, sunwell, fake):
    run = sunwell("run", *args, "--model", OPENAI)
    assert run.code == 2 and fake.requests == []
    assert "--dry-run=all" in run.stderr and "--dry-run=risky" in run.stderr, run.stderr
    assert "ignored explicit argument" not in run.stderr and run.stderr.startswith("usage: sunwell run")


@pytest.mark.parametrize("mode", ["--dry-run=risky", "--dry-run"])
def test_a_dry_run_answers_dry_run_above_the_trust_level_too(mode, sunwell, fake, workspace):
    fake.script(Reply(tool_calls=[Call("run_command", '{"command": "touch ran"}'), write_call()]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, mode, "--yes", "--json")  # trust: workspace, the default
    assert run.code == 0, run.stderr
    results = [e for e in run.events if e["type"] == "toolResult"]
    assert [r["error"]["code"] for r in results] == ["dry_run", "dry_run"]
    assert "needs trust level shell" in results[0]["error"]["message"]
    assert not (workspace / "ran").exists() and not (workspace / "notes.txt").exists()


def test_tools_list_shows_the_document_where_it_really_is(sunwell, workspace, tmp_path):
    write_user_config(tmp_path / "config", network={"allow": ["127.0.0.1"]})
    (workspace.parent / "spec.json").write_text(json.dumps(pokeapi_document("http://127.0.0.1:9/api/v2")))
    learned = sunwell("tools", "learn", "ws/../spec.json", "--name", "poke", cwd=workspace.parent, input="")
    assert learned.code == 0, learned.stderr
    listing = sunwell("tools", "list")
    assert f"from {workspace.parent / 'spec.json'} ·" in listing.stdout and ".." not in listing.stdout
    [row] = map(json.loads, sunwell("tools", "list", "--json").stdout.splitlines())
    assert row["source"] == str(workspace.parent / "spec.json")


def test_a_denied_call_is_said_once(sunwell, fake, workspace):
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="Not written."))
    run = sunwell("run", "update notes", "--model", OPENAI, "--approve", "deny")
    assert run.code == 0, run.stderr
    assert [line for line in run.stdout.splitlines() if "denied" in line] == [
        "  ✘ denied: write_file was denied by policy (approval mode deny, or no answer in time)"]


def test_an_approved_write_takes_the_time_it_ran_not_the_time_it_waited(env, workspace, fake):
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="Updated."))
    term = Terminal(env, workspace, "update notes", "--model", OPENAI, "--approve", "ask", "--json")
    term.expect("Allow?")
    time.sleep(2.5)  # the person reads the diff
    term.answer("y")
    code, out = term.finish()
    assert code == 0
    [result] = [e for e in map(json.loads, out.splitlines()) if e["type"] == "toolResult"]
    assert result["ok"] and result["durationMs"] < 2000, result
    audit = "".join(p.read_text() for p in (Path(env["SUNWELL_DATA_DIR"]) / "audit").glob("*.jsonl"))
    assert [json.loads(line)["duration_ms"] < 2000 for line in audit.splitlines()] == [True]


def test_a_sign_in_to_a_server_that_cannot_be_reached_says_so_once(sunwell, tmp_path):
    write_user_config(tmp_path / "config", mcp_servers={"far": {"url": f"http://127.0.0.1:{free_port()}/mcp"}})
    run = sunwell("mcp", "login", "far")
    assert run.code == 1 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith("sunwell: MCP server far could not start: ") and "next needed" not in line, line


def test_the_readme_table_has_every_command(sunwell):
    usage = sunwell("--help").stdout
    commands = set(re.search(r"\{([\w,]+)\}", usage).group(1).split(","))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| command | what it does |"):]
    table = table[:table.index("\n\n")]
    listed = set(re.findall(r"^\| `sunwell (\w+)", table, flags=re.MULTILINE))
    assert len(commands) > 10 and sorted(commands - listed) == []


def test_sessions_list_json_is_an_object_per_session(sunwell, fake):
    fake.script(Reply(text="one"))
    assert sunwell("run", "first", "--model", OPENAI).code == 0
    [row] = map(json.loads, sunwell("sessions", "list", "--json").stdout.splitlines())
    assert row["title"] == "first" and row["turns"] == 1 and row["status"] == "completed"
