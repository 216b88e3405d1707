"""The two MCP servers from npm the README shows, installed by scripts/test.sh into SUNWELL_MCP_SERVERS_DIR
(default ~/.cache/sunwell-mcp-servers): `@modelcontextprotocol/server-filesystem` sandboxed, and
`@modelcontextprotocol/server-everything`. Skipped, with the reason, when they are not installed."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from mcp_support import NPM_SERVERS, npm_server, write_user_config
from test_mcp_bridge import bridge_factory  # noqa: F401 - the fixture

FILESYSTEM = npm_server("mcp-server-filesystem")
EVERYTHING = npm_server("mcp-server-everything")
pytestmark = [
    pytest.mark.skipif(FILESYSTEM is None or EVERYTHING is None,
                       reason=f"the npm MCP servers are not installed in {NPM_SERVERS} (scripts/test.sh installs "
                              "them; npm could not fetch them)"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]


async def test_the_filesystem_server_sandboxed_reads_the_workspace_and_nothing_else(bridge_factory, tmp_path):  # noqa: F811
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the server\n")
    bridge = bridge_factory(files={"command": str(FILESYSTEM), "args": [str(tmp_path / "ws"), str(outside)]})
    await bridge.start()
    assert bridge.hub.servers["files"].state == "running", bridge.notices
    ws = bridge.workspace.resolve()
    read = await bridge.call("files__read_text_file", path=str(ws / "a.txt"))
    assert read.ok and read.output == "inside the workspace\n"
    assert bridge.tool("files__read_text_file").read_only and not bridge.tool("files__write_file").read_only
    # it was told it may read `outside`, but in the sandbox that folder does not exist
    allowed = await bridge.call("files__list_allowed_directories")
    assert str(outside) not in allowed.output and str(ws) in allowed.output
    secret = await bridge.call("files__read_text_file", path=str(outside / "secret.txt"))
    assert not secret.ok and "not for the server" not in secret.error.message
    env_file = await bridge.call("files__read_text_file", path=str(ws / ".env"))
    assert not env_file.ok or "canary" not in env_file.output  # masked
    written = await bridge.call("files__write_file", path=str(ws / "new.txt"), content="x")
    assert not written.ok and "read-only" in written.error.message.lower() and not (ws / "new.txt").exists()


async def test_the_everything_server(bridge_factory):  # noqa: F811
    bridge = bridge_factory(every={"command": str(EVERYTHING)})
    await bridge.start()
    assert (await bridge.call("every__echo", message="hey")).output == "Echo: hey"
    image = await bridge.call("every__get-tiny-image")
    # its logo's broken colour-profile checksum is skipped as a browser skips it: the image goes through, re-encoded
    assert image.ok and "[image: image/png, 20×20, about" in image.output
    assert [(p.media_type, p.width, p.height) for p in image.parts if p.kind == "image"] == [("image/png", 20, 20)]
    assert (await bridge.call("every__get-sum", a=2, b=40)).ok
    env = await bridge.call("every__get-env")
    assert env.ok and "OPENAI" not in env.output and "SUNWELL" not in env.output  # the allowlisted environment


def test_a_scripted_model_uses_the_filesystem_server_through_the_cli(sunwell, fake, env, workspace, tmp_path):
    write_user_config(tmp_path / "config", mcp_servers={"files": {"command": str(FILESYSTEM), "args": ["."]}})
    fake.script(Reply(tool_calls=[Call("files__list_directory", json.dumps({"path": str(workspace.resolve())}))]),
                Reply(text="I see a.txt and src."))
    run = sunwell("run", "what is here?", "--model", "openai:gpt-4o", "--json", "--trust", "shell", "--yes")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "[FILE] a.txt" in result["output"] and "[DIR] src" in result["output"]


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
async def test_an_npx_server_without_network_starts_from_a_cache_of_its_own(bridge_factory, tmp_path):  # noqa: F811
    bridge = bridge_factory(every={"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31"],
                                   "timeout": 120})
    await bridge.start()
    assert bridge.hub.servers["every"].state == "running", bridge.notices
    assert (await bridge.call("every__echo", message="offline")).output == "Echo: offline"
    cache = tmp_path / "data" / "mcp" / "cache" / "npm"
    assert any((cache / "_npx").iterdir())  # Sunwell's own cache, filled outside the server's sandbox
    env = (await bridge.call("every__get-env")).output
    assert '"npm_config_offline": "true"' in env and str(cache) in env
