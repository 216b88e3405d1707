"""The names of the tools Sunwell knows before any MCP server has run or any API is learned: what `--tools` and a
lens' `allowed_tools` are checked against (a server's tools are `SERVER__*` until it lists them)."""

from __future__ import annotations

from collections.abc import Iterable

from sunwell.tools.mcp.naming import server_prefix
from sunwell.tools.registry import CORE_TOOLS


def core_tool_names() -> list[str]:
    return [tool.name for tool in CORE_TOOLS]


def known_tools(servers: Iterable[str], learned: Iterable[str] = ()) -> list[str]:
    """The core tools, `SERVER__*` for each of `servers`, and the learned APIs' patterns `learned`."""
    return [*core_tool_names(), *(server_prefix(name) + "*" for name in servers), *learned]
