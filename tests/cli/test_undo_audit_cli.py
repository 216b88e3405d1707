"""`sunwell undo` and `sunwell audit` after real turns that changed the workspace."""

from __future__ import annotations

import json
import os

from fake_provider import Call, Reply

OPENAI = "openai:gpt-4o"


def _change_files(sunwell, fake):
    fake.script(Reply(tool_calls=[
        Call("write_file", json.dumps({"path": "new/created.txt", "content": "fresh\n"})),
        Call("edit_file", json.dumps({"path": "a.txt", "old_text": "hello", "new_text": "goodbye"})),
    ]), Reply(text="changed"))
    run = sunwell("run", "change things", "--model", OPENAI, "--yes", "--json")
    assert run.code == 0, run.stderr
    return run.events[0]["session"]


def test_undo_puts_the_workspace_back(sunwell, fake, workspace):
    before = (workspace / "a.txt").read_bytes()
    os.chmod(workspace / "a.txt", 0o640)
    _change_files(sunwell, fake)
    assert (workspace / "a.txt").read_text().startswith("goodbye")
    undo = sunwell("undo")
    assert undo.code == 0, undo.stderr
    assert "restored a.txt" in undo.stdout and "deleted new/created.txt" in undo.stdout
    assert (workspace / "a.txt").read_bytes() == before
    assert (workspace / "a.txt").stat().st_mode & 0o777 == 0o640
    assert not (workspace / "new/created.txt").exists()
    assert "nothing to undo" in sunwell("undo").stderr


def test_undo_refuses_a_file_changed_since_unless_forced(sunwell, fake, workspace):
    session = _change_files(sunwell, fake)
    (workspace / "a.txt").write_text("edited by hand\n")
    refused = sunwell("undo", "--session", session)
    assert refused.code == 1 and "a.txt" in refused.stderr and "--force" in refused.stderr
    assert (workspace / "a.txt").read_text() == "edited by hand\n"
    assert (workspace / "new/created.txt").exists()  # a refused undo changes nothing
    forced = sunwell("undo", "--session", session, "--force")
    assert forced.code == 0 and (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"


def test_audit_never_holds_a_secret(sunwell, fake, workspace, tmp_path):
    canary = "canary-7f3e9a1b2c"
    fake.script(Reply(tool_calls=[
        Call("write_file", json.dumps({"path": "notes.txt", "content": f"token={canary}\n"})),
        Call("read_file", '{"path": ".env"}'),
        Call("run_command", json.dumps({"command": f"echo {canary} && cat .env"})),
    ]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--yes", "--trust", "shell", "--json",
                  extra_env={"MY_SERVICE_TOKEN": canary})
    assert run.code == 0, run.stderr
    shell = next(e for e in run.events if e["type"] == "toolResult" and e["name"] == "run_command")
    assert "canary-123" not in shell["output"]  # .env is masked inside the sandbox
    listing = sunwell("audit")
    assert "write_file" in listing.stdout and "run_command" in listing.stdout
    data = tmp_path / "data"
    for path in data.rglob("*"):
        if path.is_file() and "audit" in path.parts:
            assert canary.encode() not in path.read_bytes(), path
            assert b"canary-123" not in path.read_bytes(), path
