"""Approvals over the wire: `sunwell/approve` requests answered allow, deny, allowSession, garbage, an error, or
never; the previews a client needs to show a real diff or the command; and a cancelled turn stopping the tool's
process. Over real stdio against `python -m sunwell.lsp`."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from fake_provider import Call, Reply
from sunwell.wire import protocol
from test_sidecar_support import OPENAI, check_turn

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures


def write_call(path: str = "new.txt", content: str = "fresh\n") -> Reply:
    return Reply(tool_calls=[Call("write_file", json.dumps({"path": path, "content": content}))])


def tool_result(events: list[dict]) -> dict:
    return next(e for e in events if e["type"] == "toolResult")


def approval_event(events: list[dict]) -> dict:
    return next(e for e in events if e["type"] == "approval")


async def test_allow_runs_the_write_and_the_request_carries_a_diff_preview(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    fake.script(write_call(), Reply(text="written"))
    result, events = await sidecar.chat("create new.txt")
    check_turn(events, result)
    [asked] = sidecar.approvals
    call = next(e for e in events if e["type"] == "toolCall")
    assert asked["session"] == result["session"] and asked["turn"] == result["turn"]
    assert asked["callId"] == call["callId"] and asked["name"] == "write_file"
    assert asked["arguments"] == {"path": "new.txt", "content": "fresh\n"}
    assert asked["risk"] == "write"
    assert asked["preview"] == {"kind": "diff", "path": "new.txt", "before": None, "after": "fresh\n",
                                "remoteSchema": None}
    approval = approval_event(events)
    assert (approval["decision"], approval["by"], approval["callId"]) == ("allow", "user", call["callId"])
    assert tool_result(events)["ok"]
    assert (workspace / "new.txt").read_text() == "fresh\n"


async def test_undo_puts_back_the_files_of_the_last_turn(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "new.txt", "content": "fresh"})),
                                  Call("edit_file", json.dumps({"path": "a.txt", "old_text": "second",
                                                                "new_text": "2nd"}))]),
                Reply(text="done"))
    result, _ = await sidecar.chat("change things")
    assert (workspace / "new.txt").exists() and "2nd" in (workspace / "a.txt").read_text()
    undone = await sidecar.request(protocol.UNDO, {"session": result["session"]})
    assert sorted(undone["restored"]) == ["a.txt", "new.txt"] and undone["deleted"] == ["new.txt"]
    assert undone["turn"] == result["turn"]
    assert not (workspace / "new.txt").exists()
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    with pytest.raises(JsonRpcInvalidParams, match="nope"):
        await sidecar.request(protocol.UNDO, {"session": "nope"})


async def test_edit_preview_has_before_and_after(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    fake.script(Reply(tool_calls=[Call("edit_file", '{"path": "a.txt", "old_text": "second", "new_text": "2nd"}')]),
                Reply(text="edited"))
    result, events = await sidecar.chat("edit a.txt")
    check_turn(events, result)
    [asked] = sidecar.approvals
    assert asked["preview"] == {"kind": "diff", "path": "a.txt", "before": "hello from a\nsecond line\n",
                                "after": "hello from a\n2nd line\n", "remoteSchema": None}
    assert (workspace / "a.txt").read_text() == "hello from a\n2nd line\n"


async def test_deny_is_a_denied_result_the_model_reads(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "deny"}
    fake.script(write_call(), Reply(text="ok, I will not"))
    result, events = await sidecar.chat("create new.txt")
    check_turn(events, result)
    assert result["status"] == "completed"
    assert approval_event(events)["decision"] == "deny" and approval_event(events)["by"] == "user"
    assert tool_result(events)["error"]["code"] == "denied"
    assert not (workspace / "new.txt").exists()
    assert "denied" in str(fake.requests[-1].body["messages"][-1])


@pytest.mark.parametrize("answer", [
    lambda params: "yes please",                       # not an object
    lambda params: {"decision": "maybe"},              # not a decision
    lambda params: {},                                 # no decision
    lambda params: (_ for _ in ()).throw(RuntimeError("client broke")),  # an error answer
], ids=["string", "unknown-decision", "empty", "error"])
async def test_garbage_or_error_answers_mean_deny_by_policy(sidecar, fake, workspace, answer):
    sidecar.answer = answer
    fake.script(write_call(), Reply(text="ok"))
    result, events = await sidecar.chat("create new.txt")
    check_turn(events, result)
    assert len(sidecar.approvals) == 1
    assert approval_event(events)["decision"] == "deny" and approval_event(events)["by"] == "policy"
    assert tool_result(events)["error"]["code"] == "denied"
    assert not (workspace / "new.txt").exists()


async def test_no_answer_in_time_means_deny_and_the_client_is_told_to_drop_the_prompt(sidecar_factory, fake,
                                                                                       tmp_path, workspace):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI,
                                     "approvalTimeoutSec": 1})
    sidecar.answer = lambda params: asyncio.Event().wait()  # never answers
    fake.script(write_call(), Reply(text="ok"))
    started = time.monotonic()
    result, events = await sidecar.chat("create new.txt")
    assert 0.9 < time.monotonic() - started < 10
    check_turn(events, result)
    assert approval_event(events)["decision"] == "deny" and approval_event(events)["by"] == "policy"
    await sidecar.wait_for(lambda: sidecar.approval_cancelled)  # `$/cancelRequest` reached the client
    assert not (workspace / "new.txt").exists()
    assert (await sidecar.request(protocol.COMMANDS))["commands"]  # and the sidecar is fine


async def test_cancelling_the_turn_while_it_waits_for_approval(sidecar, fake, workspace):
    sidecar.answer = lambda params: asyncio.Event().wait()  # the user has not decided yet
    fake.script(write_call(), Reply(text="never asked"))
    msg_id = sidecar.next_id()
    request = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "create new.txt"}, msg_id=msg_id))
    await sidecar.wait_for(lambda: sidecar.approvals)
    sidecar.cancel(msg_id)
    cancelled_at = time.monotonic()
    done = await sidecar.wait_for(lambda: next((e for e in sidecar.events if e["type"] == "done"), None))
    assert done["status"] == "cancelled"
    assert sidecar.event_times[sidecar.events.index(done)] - cancelled_at < 2.0
    await sidecar.wait_for(lambda: sidecar.approval_cancelled)  # the approval card can go away
    assert tool_result(sidecar.turn_events(done["turn"]))["error"]["code"] == "interrupted"
    try:
        assert (await asyncio.wait_for(request, 5))["status"] == "cancelled"
    except JsonRpcException as exc:
        assert exc.code == -32800
    assert not (workspace / "new.txt").exists()


async def test_allow_session_is_remembered_for_that_tool(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allowSession"}
    fake.script(write_call("one.txt"), write_call("two.txt"), Reply(text="both written"))
    result, events = await sidecar.chat("create two files")
    check_turn(events, result)
    assert len(sidecar.approvals) == 1
    decisions = [(e["decision"], e["by"]) for e in events if e["type"] == "approval"]
    assert decisions == [("allowSession", "user"), ("allow", "policy")]
    assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()


@pytest.mark.parametrize("mode,decision", [("auto", "allow"), ("deny", "deny")])
async def test_auto_and_deny_modes_send_no_request(sidecar_factory, fake, tmp_path, mode, decision):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI, "approval": mode})
    fake.script(write_call(), Reply(text="ok"))
    result, events = await sidecar.chat("create new.txt")
    check_turn(events, result)
    assert sidecar.approvals == []
    assert (approval_event(events)["decision"], approval_event(events)["by"]) == (decision, "policy")


async def test_shell_call_asks_with_its_effects_and_applies_them_on_allow(sidecar, fake, workspace):
    seen = []

    def answer(params):  # asked once the command ran staged: nothing may be in the workspace yet
        seen.append((workspace / "src" / "made.txt").exists())
        return {"decision": "allow"}

    sidecar.answer = answer
    command = "echo made > made.txt && echo hi"
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command, "cwd": "src"}))]),
                Reply(text="ok"))
    result, events = await sidecar.chat("say hi", trust="shell")
    check_turn(events, result)
    [asked] = sidecar.approvals
    assert asked["risk"] == "shell" and seen == [False]
    assert asked["preview"] == {"kind": "effects", "command": command, "cwd": "src", "exitCode": 0,
                                "output": "hi\n[exit code: 0]", "truncated": False,
                                "changes": [{"path": "src/made.txt", "change": "added", "before": None,
                                             "after": "made\n", "binary": False}]}
    assert "hi" in tool_result(events)["output"] and "applied 1 file change" in tool_result(events)["output"]
    assert (workspace / "src" / "made.txt").read_text() == "made\n"


async def test_with_the_network_a_command_is_asked_before_it_runs(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    fake.script(Reply(tool_calls=[Call("run_command", '{"command": "echo hi", "cwd": "src"}')]), Reply(text="ok"))
    result, events = await sidecar.chat("say hi", trust="full")
    check_turn(events, result)
    [asked] = sidecar.approvals
    assert asked["preview"] == {"kind": "command", "command": "echo hi", "cwd": "src"}
    assert "hi" in tool_result(events)["output"]


async def test_cancel_mid_tool_stops_the_process(sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI, "approval": "auto"})
    marker = "31.4159"  # an unusual sleep length, to find the process in /proc
    fake.script(Reply(tool_calls=[Call("run_command", f'{{"command": "sleep {marker}", "timeout": 60}}')]),
                Reply(text="never asked"))
    msg_id = sidecar.next_id()
    request = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "wait", "trust": "shell"},
                                                    msg_id=msg_id))
    await sidecar.wait_for(lambda: _sleeping(marker), timeout=15)
    sidecar.cancel(msg_id)
    cancelled_at = time.monotonic()
    done = await sidecar.wait_for(lambda: next((e for e in sidecar.events if e["type"] == "done"), None))
    assert done["status"] == "cancelled"
    assert sidecar.event_times[sidecar.events.index(done)] - cancelled_at < 2.0
    result = tool_result(sidecar.turn_events(done["turn"]))
    assert result["error"]["code"] == "interrupted"
    await sidecar.wait_for(lambda: not _sleeping(marker), timeout=2)
    try:
        answer = await asyncio.wait_for(request, 5)
        assert answer["status"] == "cancelled"
    except JsonRpcException as exc:  # RequestCancelled is allowed too
        assert exc.code == -32800


def _sleeping(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path("/proc", pid, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", marker.encode()]:
                return True
    return False
