"""How much of an MCP server Sunwell reads, and what it says about servers it cannot contain.

A message over MAX_MESSAGE_BYTES is cut while its bytes arrive, over stdio (tools/mcp/stdio_transport.py) and over
streamable HTTP (tools/mcp/http_transport.py): the call ends with an `execution` error saying the result was too
large, and the server goes on answering. Real servers throughout: the toolbox (the official SDK's MCPServer) and
a hand-written one that orders its answers as the TypeScript SDK does. And a `sandbox: off` server is said to be
unsandboxed, and able to leave processes behind, by `sunwell mcp list` and by the notice of its first start.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from unittest import mock

import pytest

from fake_provider import Reply
from mcp_support import HttpToolbox, toolbox, write_user_config
from sunwell.tools.mcp.oversize import HEAD, MAX_MESSAGE_BYTES, BoundedLines, Cut
from sunwell.tools.mcp.surroundings import UNSANDBOXED
from test_mcp_bridge import bridge_factory  # noqa: F401 - the fixture

REORDERED = Path(__file__).parents[2] / "mcp_servers" / "reordered.py"
TOO_LARGE = f"result was too large: over {MAX_MESSAGE_BYTES:,} bytes, so it was not read whole"


def reordered(**config) -> dict:
    return {"command": sys.executable, "args": [str(REORDERED)], "sandbox": "off", "timeout": 10, **config}


# ---- the line reader ----------------------------------------------------------------------------------------------


def test_lines_come_whole_across_chunks_and_a_long_one_is_cut_without_being_held():
    lines = BoundedLines(limit=100)
    assert lines.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert lines.feed(b':2}\n\n') == [b'{"b":2}', b""]
    head = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'
    assert lines.feed(head) == []
    assert lines.feed(b"x" * 60) == [Cut(7, None, len(head) + 60)]  # told as soon as it passes the limit
    for _ in range(1000):
        assert lines.feed(b"y" * 1000) == [] and len(lines._line) == 0  # skipped, not held
    assert lines.feed(b'"}]}}\n{"c":3}\n') == [b'{"c":3}']


def test_a_cut_line_is_matched_to_its_request_by_its_end_or_dropped_when_the_server_sent_it_on_its_own():
    lines = BoundedLines(limit=50)
    long = b"z" * (HEAD + 100)  # past the first bytes, which say nothing more then
    ts_order = b'{"result":{"content":[{"type":"text","text":"' + long + b'"}]},"jsonrpc":"2.0","id":"r-9"}\n'
    assert lines.feed(ts_order[:100]) == []
    assert lines.feed(ts_order[100:]) == [Cut("r-9", None, len(ts_order) - 1)]
    note = b'{"method":"notifications/message","params":{"data":"' + long + b'"},"jsonrpc":"2.0"}\n'
    assert lines.feed(note[:60]) == [Cut(None, "notifications/message", 60)]
    assert lines.feed(note[60:]) == []
    nameless = b'{"result":{"text":"' + long + b'"},"id":3,"jsonrpc":"2.0"}\n'
    assert lines.feed(nameless) == [Cut(None, None, len(nameless) - 1)]
    start = b'{"jsonrpc":"2.0","x":"'
    cut_short = start + b"q" * (HEAD - len(start) - len(b'","id":12')) + b'","id":12'  # the first bytes end in 12...
    assert len(cut_short) == HEAD
    assert lines.feed(cut_short + b'345,"result":{"text":"' + long + b'"}}\n') == [Cut(None, None, mock.ANY)]


# ---- stdio ----------------------------------------------------------------------------------------------------------


async def test_a_50_mb_answer_is_cut_while_reading_and_the_server_stays_usable(bridge_factory):  # noqa: F811
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    result = await bridge.call("box__big", megabytes=50)
    assert not result.ok and result.error.code == "execution"
    assert result.error.message == f"the MCP server box's {TOO_LARGE}"
    assert (await bridge.call("box__echo", text="still here")).output == "still here"
    assert bridge.notices == [] and len(bridge.started) == 1  # no incident, no restart
    assert bridge.hub.servers["box"].failures == 0


async def test_a_huge_log_message_is_dropped_and_the_call_still_answers(bridge_factory):  # noqa: F811
    bridge = bridge_factory(box=toolbox(sandbox="off"))
    await bridge.start()
    result = await bridge.call("box__big", megabytes=50, as_log=True)
    assert result.ok and result.output == "logged"
    assert bridge.notices == []


async def test_an_answer_whose_id_comes_last_is_cut_too(bridge_factory):  # noqa: F811
    bridge = bridge_factory(ts=reordered())
    await bridge.start()
    result = await bridge.call("ts__big", megabytes=30, where="end")
    assert not result.ok and result.error.message == f"the MCP server ts's {TOO_LARGE}"
    assert (await bridge.call("ts__small")).output == "small and fine"
    assert bridge.notices == []


async def test_an_answer_that_names_no_request_is_an_incident_and_the_server_restarts(bridge_factory):  # noqa: F811
    bridge = bridge_factory(odd=reordered())
    await bridge.start()
    result = await bridge.call("odd__big", megabytes=30, where="middle")
    assert not result.ok and result.error.code == "execution" and "not read whole" in result.error.message
    [(level, code, message)] = bridge.notices
    assert (level, code) == ("warning", "mcp_server")
    assert f"MCP server odd sent a message of over {MAX_MESSAGE_BYTES:,} bytes" in message
    assert "it will be restarted" in message
    assert (await bridge.call("odd__small")).output == "small and fine"
    assert bridge.notices[-1] == ("info", "mcp_server", "MCP server odd was restarted (2 tools)")


# ---- streamable HTTP ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answers", ["events", "json"])
async def test_over_http_a_50_mb_answer_is_cut_and_the_session_goes_on(bridge_factory, answers):  # noqa: F811
    with HttpToolbox(*(["--json-response"] if answers == "json" else [])) as server:
        bridge = bridge_factory(web={"url": server.url, "timeout": 10})
        await bridge.start()
        result = await bridge.call("web__big", megabytes=50)
        assert not result.ok and result.error.message == f"the MCP server web's {TOO_LARGE}"
        assert (await bridge.call("web__echo", text="still here")).output == "still here"
        assert bridge.notices == [] and len(bridge.started) == 1


async def test_over_http_a_3_mb_answer_is_read_and_capped_like_any_output(bridge_factory):  # noqa: F811
    # the SDK's own bound on an event is 1 MiB: this answer (a 6.3 MB message) used to fail as "exited"
    with HttpToolbox() as server:
        bridge = bridge_factory(web={"url": server.url, "timeout": 10})
        await bridge.start()
        result = await bridge.call("web__big", megabytes=3)
        assert result.ok and "of 3,145,725 bytes" in result.output
        assert bridge.notices == []


# ---- sandbox: off -----------------------------------------------------------------------------------------------


async def test_an_unsandboxed_server_says_so_when_it_first_starts(bridge_factory):  # noqa: F811
    with HttpToolbox() as server:
        bridge = bridge_factory(box=toolbox(sandbox="off"), web={"url": server.url})
        await bridge.start()
        assert sorted(bridge.started) == [f"MCP server box started (14 tools), {UNSANDBOXED}",
                                          "MCP server web started (14 tools)"]
    assert "may keep running after Sunwell exits" in UNSANDBOXED and "runs as you" in UNSANDBOXED


def test_mcp_list_says_which_servers_are_unsandboxed(sunwell, env):
    write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={
        "loose": toolbox(sandbox="off", tools=["echo"]),
        "remote": {"url": "http://127.0.0.1:9/mcp", "timeout": 2}})
    run = sunwell("mcp", "list", "--json")
    assert run.code == 0, run.stderr
    rows = {row["name"]: row for row in map(json.loads, run.stdout.splitlines())}
    assert rows["loose"]["sandbox"] == "off" and rows["loose"]["warning"] == UNSANDBOXED
    assert rows["remote"]["warning"] is None
    text = sunwell("mcp", "list").stdout
    block = text[text.index("loose"):text.index("remote")]
    assert f"\n  {UNSANDBOXED}\n" in block and UNSANDBOXED not in text[text.index("remote"):]


def test_sunwell_run_says_it_when_it_starts_an_unsandboxed_server(sunwell, fake, env):
    write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={"loose": toolbox(sandbox="off", tools=["echo"])})
    fake.script(Reply(text="hello"))
    run = sunwell("run", "hi", "--model", "openai:gpt-4o", "--json", "--trust", "shell")
    assert run.code == 0, run.stderr
    notices = [e["message"] for e in run.events if e["type"] == "notice" and e["code"] == "mcp_server"]
    assert notices == [f"MCP server loose started (1 tool), {UNSANDBOXED}"]
