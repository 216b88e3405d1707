"""A resumed turn is judged by the policy in force now (issue 40, item 3): a turn killed at `--trust full`, then the
user lowers `trust` in the user config; `sunwell run --resume --approve auto` must not run the pending calls at the
trust the log remembers. Only the user, now, widens: `--trust` given to the resume is theirs."""

from __future__ import annotations

import json

import pytest

from fake_provider import Call, Reply
from test_durable_support import COUNT, OPENAI, Crashing, counted, resumed_turn

pytest_plugins = ["test_durable_support"]  # the `user_config` fixture

WRITE = Call("write_file", json.dumps({"path": "a.txt", "content": "overwritten\n"}))
COMMAND = Call("run_command", json.dumps({"command": COUNT}))


def _killed_waiting_for_approval(env, workspace, fake, call) -> list[dict]:
    fake.script(Reply(tool_calls=[call]))
    run = Crashing(env, workspace, "do it", "--json", "--trust", "full", "--approve", "ask", "--model", OPENAI)
    return run.kill_when(lambda: "Allow?" in "".join(run.stderr))


@pytest.mark.parametrize("call", [WRITE, COMMAND], ids=["write_file", "run_command"])
def test_a_resumed_call_is_judged_at_the_trust_the_user_config_has_now(sunwell, fake, env, workspace, user_config,
                                                                       call):
    before = _killed_waiting_for_approval(env, workspace, fake, call)
    user_config("trust: read_only\n")

    fake.script(Reply(text="could not"))
    resumed = sunwell("run", "--resume", "--json", "--approve", "auto")
    assert resumed.code == 0, resumed.stderr
    after = resumed.events
    resumed_turn(before, after)
    [result] = [e for e in after if e["type"] == "toolResult"]
    assert (result["ok"], result["error"]["code"]) == (False, "permission"), result
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert counted(workspace) == 0


def test_a_resume_never_widens_a_turn_that_ran_narrower(sunwell, fake, env, workspace, user_config, tmp_path):
    """The log's trust is a bound too: a turn started at read_only does not resume at the config's full."""
    user_config("trust: full\n")
    fake.script(Reply(text="never sent", wait_for=tmp_path / "never"))
    run = Crashing(env, workspace, "do it", "--json", "--trust", "read_only", "--model", OPENAI)
    run.kill_when(lambda: len(fake.requests) >= 1)
    offered = {tool["function"]["name"] for tool in fake.requests[0].body.get("tools", [])}
    assert "read_file" in offered and "write_file" not in offered

    fake.script(Reply(text="read only"))
    resumed = sunwell("run", "--resume", "--json", "--approve", "auto")
    assert resumed.code == 0, resumed.stderr
    assert resumed.events[-1]["status"] == "completed"
    assert {tool["function"]["name"] for tool in fake.requests[-1].body.get("tools", [])} == offered


def test_the_user_may_widen_a_resume_by_saying_so_now(sunwell, fake, env, workspace, user_config):
    before = _killed_waiting_for_approval(env, workspace, fake, WRITE)
    user_config("trust: read_only\n")

    fake.script(Reply(text="written"))
    resumed = sunwell("run", "--resume", "--json", "--approve", "auto", "--trust", "workspace")
    assert resumed.code == 0, resumed.stderr
    resumed_turn(before, resumed.events)
    assert (workspace / "a.txt").read_text() == "overwritten\n"
