"""Deny with a note (docs/sidecar.md "ApproveResult": the result may carry `note`): the answer stays a denial by the
user, and the model reads the note with it. Over real stdio against the sidecar."""

from __future__ import annotations

import json

from fake_provider import Call, Reply
from sunwell.wire.protocol import ApproveResult

pytest_plugins = ["test_sidecar_support"]

NOTE = "keep 42, the tests depend on it"


def _write() -> Reply:
    return Reply(tool_calls=[Call("write_file", json.dumps({"path": "src/app.py", "content": "x = 1\n"}))])


def test_the_note_is_an_optional_field_of_the_answer():
    assert ApproveResult.model_validate({"decision": "deny"}).note is None
    assert ApproveResult.model_validate({"decision": "deny", "note": NOTE}).wire() == {"decision": "deny", "note": NOTE}


async def test_a_denial_with_a_note_is_still_the_users_denial(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "deny", "note": NOTE}
    fake.script(_write(), Reply(text="ok"))
    result, events = await sidecar.chat("change main")
    assert result["status"] == "completed"
    approval = next(e for e in events if e["type"] == "approval")
    assert (approval["decision"], approval["by"]) == ("deny", "user")
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 42\n"


async def test_the_model_reads_the_note_with_the_denial(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "deny", "note": NOTE}
    fake.script(_write(), Reply(text="ok"))
    await sidecar.chat("change main")
    told = [m for m in fake.requests[-1].body["messages"] if m["role"] == "tool"][-1]
    assert "denied" in str(told["content"]) and NOTE in str(told["content"])


async def test_the_same_call_again_in_the_turn_is_denied_again_without_asking(sidecar, fake, workspace):
    asked = []

    def answer(params):
        asked.append(params["callId"])
        return {"decision": "deny", "note": NOTE}

    sidecar.answer = answer
    fake.script(_write(), _write(), Reply(text="ok"))  # the model tries exactly the denied call once more
    result, events = await sidecar.chat("change main")
    assert result["status"] == "completed" and len(asked) == 1  # one card, not the same card twice
    first, second = [e for e in events if e["type"] == "toolResult"]
    assert first["error"]["code"] == second["error"]["code"] == "denied"
    assert NOTE in second["error"]["message"] and "already" in second["error"]["message"]
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 42\n"
