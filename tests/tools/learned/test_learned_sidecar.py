"""Learned APIs in the sidecar, over real stdio: learn_api asked with its `learn` preview (no allow-for-session
rule), the tools called in a later chat with the key VS Code hands over in the environment, masked in what comes
back; `sunwell/learnedApis` lists them and `sunwell/learnedForget` forgets one."""

from __future__ import annotations

import json
from pathlib import Path

from api_server import API_KEY, QUERY_SECRET, ApiServer, two_keys_document
from fake_provider import Call, Reply
from sunwell.wire import protocol

pytest_plugins = ["test_sidecar_support"]


def results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "toolResult"]


async def test_learn_then_call_in_the_sidecar_with_the_editor_s_key(sidecar_factory, fake, tmp_path: Path):
    config = tmp_path / "config" / "sunwell"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("network:\n  allow: [127.0.0.1]\n")
    given = json.dumps({"notes": {"key": API_KEY}})
    with ApiServer() as api:
        sidecar = await sidecar_factory(env_extra={"SUNWELL_LEARNED_CREDENTIALS": given,
                                                   "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"})
        sidecar.answer = lambda params: {"decision": "allowSession"}
        fake.script(Reply(tool_calls=[Call("learn_api", json.dumps({"source": api.url("/keyed/openapi.yaml"),
                                                                      "name": "notes"}))]), Reply(text="learned"))
        _, events = await sidecar.chat("learn the notes API")
        [learned] = results(events)
        assert learned["ok"], learned
        [asked] = sidecar.approvals
        assert asked["preview"]["kind"] == "learn" and asked["preview"]["hosts"] == ["127.0.0.1"]
        assert [op["tool"] for op in asked["preview"]["operations"]] == [
            "notes__echo", "notes__private", "notes__moved", "notes__add_note"]

        listed = await sidecar.request(protocol.LEARNED_APIS, {})
        assert [(a["name"], a["schemes"], len(a["tools"])) for a in listed["apis"]] == [("notes", ["key"], 4)]

        fake.script(Reply(tool_calls=[Call("notes__echo", '{"say": "hi"}')]),
                    Reply(tool_calls=[Call("notes__add_note", '{"body": {"text": "from VS Code"}}')]),
                    Reply(text="done"))
        _, events = await sidecar.chat("echo hi, then store a note")
        echo, note = results(events)
        assert echo["ok"] and '"say": "hi"' in echo["output"] and API_KEY not in json.dumps(events)
        assert note["ok"] and api.notes == [{"text": "from VS Code"}]
        assert [a["preview"]["kind"] for a in sidecar.approvals] == ["learn", "tool"]  # the POST was asked

        forgot = await sidecar.request(protocol.LEARNED_FORGET, {"name": "notes"})
        assert forgot == {"forgotten": True}
        assert (await sidecar.request(protocol.LEARNED_APIS, {}))["apis"] == []
        assert "notes" not in (config / "config.yaml").read_text()


async def test_a_query_key_stays_out_of_the_sidecar_s_debug_log(sidecar_factory, fake, tmp_path: Path, workspace: Path,
                                                               capfd):
    """The HTTP client logs each request's URL, the query key in it; at DEBUG every record reaches stderr (VS
    Code's output channel), masked."""
    config = tmp_path / "config" / "sunwell"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("network:\n  allow: [127.0.0.1]\n")
    given = json.dumps({"two": {"key": API_KEY, "q": QUERY_SECRET}})
    with ApiServer() as api:
        (workspace / "two.json").write_text(json.dumps(two_keys_document(api.url("/keyed"))))
        sidecar = await sidecar_factory(env_extra={"SUNWELL_LEARNED_CREDENTIALS": given, "SUNWELL_LOG_LEVEL": "DEBUG",
                                                   "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"})
        sidecar.answer = lambda params: {"decision": "allowSession"}
        fake.script(Reply(tool_calls=[Call("learn_api", '{"source": "two.json", "name": "two"}')]),
                    Reply(tool_calls=[Call("two__echo", '{"say": "hi"}')]), Reply(text="done"))
        _, events = await sidecar.chat("learn it and echo hi")
        learned, echo = results(events)
        assert learned["ok"] and echo["ok"] and '"say": "hi"' in echo["output"]
        assert f"k={QUERY_SECRET}" in api.requests[-1][1]  # sent
    logged = capfd.readouterr().err
    assert "DEBUG" in logged and "HTTP Request: GET" in logged
    assert QUERY_SECRET not in logged and API_KEY not in logged
