"""An MCP server's tool listing as Sunwell tools: named `SERVER__TOOL`, filtered by the server's `tools` and
`disabled_tools`, with its trust, approval and `mcp` risk, a `tool` preview for the approval card, and the server's
read-only hint (a read-only tool may run alongside the other read-only calls of a response). The description and
the input schema are the server's, checked: a schema that is not valid JSON Schema for an object accepts any object
(the server still validates what it gets), and words a person cannot see removed (`_visible_listing`)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp import Client, types

from sunwell.config import McpServerConfig
from sunwell.hidden_text import removed_message, strip_hidden_in
from sunwell.tools.base import Output, Tool, ToolContext, Trust
from sunwell.tools.mcp.naming import tool_name
from sunwell.tools.subject import McpCall, Subject

log = logging.getLogger(__name__)
MAX_DESCRIPTION = 2_000
MAX_LIST_PAGES = 100
ANY_OBJECT: dict[str, Any] = {"type": "object"}
Call = Callable[[str, dict[str, Any], ToolContext], Awaitable[Output]]
"""(the server's tool name, arguments, context) -> output: the server's `tools/call`."""


async def list_tools(client: Client) -> list[types.Tool]:
    """Every page of `tools/list` (a paginator that never ends stops at MAX_LIST_PAGES)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _visible_listing(listing: list[types.Tool]) -> tuple[list[types.Tool], str]:
    """The listing without the characters that hide text (sunwell/hidden_text.py) in what a model reads of each
    tool (its title, description and input schema), and those removed."""
    shown, removed = [], []
    for remote in listing:
        (title, description, schema), hidden = strip_hidden_in((remote.title, remote.description, remote.input_schema))
        shown.append(remote.model_copy(update={"title": title, "description": description, "input_schema": schema})
                     if hidden else remote)
        removed.append(hidden)
    return shown, "".join(removed)


def sunwell_tools(server: str, config: McpServerConfig, listing: list[types.Tool], call: Call,
                  heard: Callable[[str], None] | None = None) -> list[Tool]:
    """The tools of `listing` Sunwell offers; `heard` is told when their definitions held characters that hide
    text, which were removed."""
    listing, hidden = _visible_listing(listing)
    if hidden and heard is not None:
        heard(removed_message(f"MCP server {server} (the descriptions of its tools)", hidden))
    wanted, disabled = config.tools, set(config.disabled_tools)
    tools: list[Tool] = []
    for remote in listing:
        if (wanted is not None and remote.name not in wanted) or remote.name in disabled:
            continue
        tools.append(_wrap(server, config, remote, tool_name(server, remote.name, {t.name for t in tools}), call))
    return tools


def _wrap(server: str, config: McpServerConfig, remote: types.Tool, name: str, call: Call) -> Tool:
    hints = remote.annotations
    read_only = bool(hints and hints.read_only_hint)
    notes = [f"MCP tool `{remote.name}` of the server `{server}`",
             *(["read-only"] if read_only else []), *(["destructive"] if hints and hints.destructive_hint else [])]
    description = (remote.description or remote.title or remote.name)[:MAX_DESCRIPTION]

    async def handler(args: dict[str, Any], ctx: ToolContext) -> Output:
        return await call(remote.name, args, ctx)

    definition = hashlib.sha256(json.dumps([description, remote.input_schema], sort_keys=True,
                                           default=str).encode()).hexdigest()[:16]

    def preview(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"kind": "tool", "server": server, "tool": remote.name, "arguments": args, "definition": definition}

    subject = Subject(mcp=McpCall(server, remote.name))

    # the executor's limit is a backstop: the call bounds itself by `timeout`, a restart before it too
    return Tool.dynamic(input_schema(remote, server), handler, name=name,
                        description=f"{description} ({', '.join(notes)})", subject=lambda args: subject,
                        preview=preview, min_trust=Trust[config.needs], approval=config.approval, risk="mcp",
                        read_only=read_only, source="mcp", timeout=config.timeout * 3 + 15)


def input_schema(remote: types.Tool, server: str) -> dict[str, Any]:
    """The tool's input schema if it is a valid JSON Schema for an object, else any object (and a log line)."""
    schema = remote.input_schema
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        log.info("MCP server %s: tool %s has no object input schema; accepting any object", server, remote.name)
        return dict(ANY_OBJECT)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        log.info("MCP server %s: tool %s has an invalid input schema (%s); accepting any object", server,
                 remote.name, exc.message)
        return dict(ANY_OBJECT)
    return {"type": "object", **schema}
