"""MCP tools through the sidecar (real stdio LSP, pytest-lsp): `sunwell/tools` lists them with source "mcp", a
scripted model calls one and the client's approval card shows server, tool and arguments, and a server the
workspace proposes is put to the client once, as the command it would run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from fake_provider import Call, Reply
from mcp_support import toolbox, write_user_config
from sunwell.wire import protocol
from test_sidecar_support import check_turn

pytest_plugins = ["test_sidecar_support"]


@pytest.fixture
def boxed(env) -> None:
    write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={"box": toolbox(sandbox="off", tools=["echo", "add"])})


async def test_sunwell_tools_lists_mcp_tools_with_source_mcp(boxed, sidecar):
    core = await sidecar.request(protocol.TOOLS, {"trust": "workspace"})
    assert not any(tool["source"] == "mcp" for tool in core["tools"])  # below their trust: not even started
    listing = await sidecar.request(protocol.TOOLS, {"trust": "shell"})
    mcp = {tool["name"]: tool for tool in listing["tools"] if tool["source"] == "mcp"}
    assert set(mcp) == {"box__echo", "box__add"}
    assert mcp["box__add"]["policy"] == "ask" and mcp["box__add"]["minTrust"] == "shell"


async def test_a_scripted_model_calls_an_mcp_tool_and_the_card_shows_it(boxed, sidecar, fake):
    fake.script(Reply(tool_calls=[Call("box__add", json.dumps({"a": 40, "b": 2}))]), Reply(text="42"))
    sidecar.answer = lambda params: {"decision": "allow"}
    result, events = await sidecar.chat("add them", trust="shell")
    check_turn(events, result)
    [card] = sidecar.approvals
    assert card["risk"] == "mcp" and card["name"] == "box__add"
    assert {k: v for k, v in card["preview"].items() if k != "definition"} == {
        "kind": "tool", "server": "box", "tool": "add", "arguments": {"a": 40, "b": 2}}
    answer = next(e for e in events if e["type"] == "toolResult")
    assert answer["ok"] and '"sum": 42' in answer["output"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_a_proposed_server_is_asked_about_once_and_refused(sidecar, fake, workspace):
    (workspace / ".sunwell").mkdir()
    (workspace / ".sunwell" / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"theirs": toolbox()}}))
    fake.script(Reply(text="one"), Reply(text="two"))
    sidecar.answer = lambda params: {"decision": "deny"}
    first, events = await sidecar.chat("hello", trust="shell")
    [card] = sidecar.approvals
    assert card["risk"] == "shell" and card["preview"]["kind"] == "command"
    assert "toolbox.py" in card["preview"]["command"] and card["session"] == first["session"]
    notice = next(e for e in events if e["type"] == "notice" and e["code"] == "mcp_server")
    assert "sunwell mcp approve theirs" in notice["message"]
    assert not any(t["function"]["name"].startswith("theirs__") for t in fake.requests[0].body["tools"])
    await sidecar.chat("again", trust="shell", session=first["session"])
    assert len(sidecar.approvals) == 1  # a refusal holds while the sidecar runs


async def test_sunwell_mcp_shows_servers_and_restart_starts_one(sidecar, env, workspace):
    write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={
        "box": toolbox(sandbox="off", tools=["echo", "add"]), "bad": toolbox("--crash-at-start", sandbox="off")})
    (workspace / ".sunwell").mkdir()
    (workspace / ".sunwell" / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"theirs": toolbox()}}))
    listing = await sidecar.request(protocol.MCP, {})
    servers = {server["name"]: server for server in listing["servers"]}
    assert servers["box"] == {"name": "box", "state": "stopped", "transport": "stdio", "tools": []}  # listing starts none
    assert servers["theirs"]["state"] == "awaiting approval"
    assert listing["config"] == str(Path(env["XDG_CONFIG_HOME"]) / "sunwell" / "config.yaml")  # where to add one

    assert await sidecar.request(protocol.MCP_RESTART, {"name": "box"}) == {"state": "running"}
    assert await sidecar.request(protocol.MCP_RESTART, {"name": "bad"}) == {"state": "failed: exited while starting"}
    servers = {server["name"]: server for server in (await sidecar.request(protocol.MCP, {}))["servers"]}
    assert servers["box"]["state"] == "running" and servers["box"]["tools"] == ["box__echo", "box__add"]
    assert servers["bad"]["state"] == "failed: exited while starting"
    assert await sidecar.request(protocol.MCP_RESTART, {"name": "box"}) == {"state": "running"}  # again

    with pytest.raises(JsonRpcException, match="sunwell mcp approve theirs") as caught:
        await sidecar.request(protocol.MCP_RESTART, {"name": "theirs"})
    assert caught.value.code == protocol.REQUEST_FAILED
    with pytest.raises(JsonRpcInvalidParams, match="no MCP server 'nope'"):
        await sidecar.request(protocol.MCP_RESTART, {"name": "nope"})
    with pytest.raises(JsonRpcInvalidParams, match="name"):
        await sidecar.request(protocol.MCP_RESTART, {})


async def test_the_client_can_configure_servers_in_its_options(sidecar_factory):
    sidecar = await sidecar_factory({"mcpServers": {"box": toolbox(sandbox="off", tools=["echo"])}})
    listing = await sidecar.request(protocol.MCP, {})
    assert listing["servers"] == [{"name": "box", "state": "stopped", "transport": "stdio", "tools": []}]
    assert await sidecar.request(protocol.MCP_RESTART, {"name": "box"}) == {"state": "running"}
