"""Issue 40, item 6c: a write whose JSON or YAML names a remote `$schema` says so on the approval card, since VS Code
fetches that URL when the file is opened. The diff preview's `remoteSchema`, over the sidecar's `sunwell/approve`
and at the terminal prompt."""

from __future__ import annotations

import asyncio
import json

import pytest

from fake_provider import Call, Reply
from sunwell.tools.workspace.remote_schema import remote_schema
from test_approvals import Terminal
from test_sidecar_support import check_turn

OPENAI = "openai:gpt-4o"
EVIL = "https://schemas.evil.example/s.json"
pytest_plugins = ["test_sidecar_support"]  # the `sidecar` fixture


@pytest.mark.parametrize("path, text", [
    ("a.json", json.dumps({"$schema": EVIL, "name": "x"})),
    ("conf/app.JSON", '// settings\n{\n  /* why */ "$schema": "' + EVIL + '", // here\n  "a": [1, 2,],\n}\n'),
    ("a.json", '{"\\u0024schema": "' + EVIL + '"}'),  # an escape spells the key as VS Code reads it
    ("a.json", '{"$schema": "' + EVIL + '", "$schema": "./local.json"}'),  # each key, not only the last
    ("proj.code-workspace", '{"$schema": "' + EVIL + '", "folders": []}'),
    ("web/.babelrc", '{\n  // presets\n  "$schema": "' + EVIL + '"\n}'),
    ("data.txt", '{"$schema": "' + EVIL + '"}'),  # strict JSON, whatever the name (a language mode can be chosen)
    ("ci.yaml", f"$schema: {EVIL}\nname: x\n"),
    ("ci.yml", f"name: x\n---\n'$schema': {EVIL}\n"),  # any document of the stream, a quoted key
    ("ci.yml", f'{{"$schema": "{EVIL}", name: x}}\n'),  # flow style
    ("ci.yaml", '"\\x24schema": ' + EVIL + "\n"),  # an escape in a double-quoted key
    ("ci.yaml", f"# yaml-language-server: $schema={EVIL}\nname: x\n"),
    ("deploy/k8s.yml", f"name: x\nspec: {{a: 1}}\n#   yaml-language-server:  $schema={EVIL}\n"),
    ("a.json", '{"$schema": "//fileserver.example/share/s.json"}'),  # a UNC path on Windows: SMB to that host
])  # fmt: skip
def test_a_remote_schema_is_found(path, text):
    assert remote_schema(path, text) in (EVIL, "//fileserver.example/share/s.json")


@pytest.mark.parametrize("path, text", [
    ("a.json", '{"name": "x", "nested": {"$schema": "' + EVIL + '"}}'),  # not at the top level
    ("a.json", '[{"$schema": "' + EVIL + '"}]'),
    ("a.json", '{"$schema": "./schema.json"}'),  # a file beside it
    ("a.json", '{"$schema": "vscode://schemas/settings/folder"}'),
    ("a.json", '{"$schema": 42}'),
    ("ci.yaml", f"spec:\n  $schema: {EVIL}\n"),
    ("ci.yaml", f"name: x  # $schema: {EVIL}\n"),
    ("ci.yaml", "a: [unclosed\n$schema: " + EVIL),  # not YAML: nothing VS Code would take it from either
    ("notes.md", f"# yaml-language-server: $schema={EVIL}\n"),  # a modeline counts only in YAML
    ("app.py", f'CONFIG = {{"$schema": "{EVIL}"}}\n'),  # code that holds JSON is not a JSON file
    ("app.js", f'// config\nexport default {{"$schema": "{EVIL}"}}\n'),
    ("a.json", '{"name": "plain"}'),
])  # fmt: skip
def test_no_remote_schema_is_claimed_where_there_is_none(path, text):
    assert remote_schema(path, text) is None


def write_call(path: str, content: str) -> Reply:
    return Reply(tool_calls=[Call("write_file", json.dumps({"path": path, "content": content}))])


async def test_the_approval_request_carries_the_remote_schema(sidecar, fake, workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    (workspace / "ci.yaml").write_text("name: x\n")
    fake.script(write_call("app.json", json.dumps({"$schema": EVIL, "name": "x"}, indent=2)),
                Reply(tool_calls=[Call("edit_file", json.dumps({"path": "ci.yaml", "old_text": "name: x",
                                                                "new_text": f"# yaml-language-server: $schema={EVIL}\nname: x"}))]),
                write_call("plain.json", '{"name": "x"}'), Reply(text="done"))  # fmt: skip
    result, events = await asyncio.wait_for(sidecar.chat("configure"), 60)
    check_turn(events, result)
    assert [(a["preview"]["path"], a["preview"]["remoteSchema"]) for a in sidecar.approvals] == [
        ("app.json", EVIL), ("ci.yaml", EVIL), ("plain.json", None)]
    assert json.loads((workspace / "app.json").read_text())["$schema"] == EVIL  # shown, not refused


def test_the_terminal_prompt_names_the_remote_schema(env, workspace, fake):
    fake.script(write_call("app.json", json.dumps({"$schema": EVIL})), Reply(text="Not written."))
    term = Terminal(env, workspace, "configure", "--model", OPENAI, "--approve", "ask", "--json")
    screen = term.expect("Allow?")
    term.answer("n")
    code, _ = term.finish()
    assert code == 0
    assert f"This file names a remote schema: {EVIL}" in screen
    assert "VS Code will fetch it when the file is opened" in screen
    assert not (workspace / "app.json").exists()
