"""MCP resources as mentions, `@SERVER:URI` (docs/cli.md "Chat commands"): the VS Code picker lists the resources of the
servers started so far beside the files, and a `sunwell run` prompt may name one in its text. Each is read from its
server when the line is sent and attached like the editor's text mentions (agent/mentions.py), within the same
budget; a resource that cannot be read is attached as the reason."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sunwell.agent.mentions import Mention, mentioned_paths
from sunwell.tools.mcp.offerings import resource_text
from sunwell.tools.mcp.surroundings import ServerDown

if TYPE_CHECKING:
    from sunwell.tools.mcp.hub import McpHub
    from sunwell.tools.workspace.jail import Jail

_AT_RESOURCE = re.compile(r"(?<![\w@/.])@([A-Za-z][\w.-]*):(\S+)")


def resource_mention(server: str, uri: str) -> Mention:
    return Mention(kind="resource", label=f"@{server}:{uri}", server=server, uri=uri)


def resources_in(text: str, servers: Sequence[str]) -> list[Mention]:
    """`@SERVER:URI` words of a prompt that name a configured server (an e-mail address or `@x:y` stay words)."""
    found = {}
    for server, uri in _AT_RESOURCE.findall(text):
        uri = uri.rstrip(".,;)")
        if server in servers:
            found.setdefault((server, uri), resource_mention(server, uri))
    return list(found.values())


async def attach_resources(hub: McpHub, mentions: Sequence[Mention], jail: Jail, text: str = "") -> list[Mention]:
    """`mentions`, and the workspace files and resources `text` names (`sunwell run`'s mentions), each resource
    read now (its content as the mention's text)."""
    named = [*mentioned_paths(text, jail), *resources_in(text, list(hub.servers))] if text else []
    wanted = [*mentions, *(m for m in named if m not in mentions)]
    return [await _read(hub, m) if m.kind == "resource" else m for m in wanted]


async def _read(hub: McpHub, mention: Mention) -> Mention:
    server = hub.servers.get(mention.server or "")
    if server is None:
        return _with(mention, f"(not attached: no MCP server {mention.server})")
    try:
        client = await server.connected()
        result = await client.read_resource(mention.uri or "")
    except ServerDown as exc:
        return _with(mention, f"(not attached: the MCP server {server.name} is not available: {exc})")
    except Exception as exc:  # noqa: BLE001 - MCPError and the transport's: the server's answer is the reason
        return _with(mention, f"(not attached: {getattr(exc, 'message', None) or exc})")
    return _with(mention, "\n".join(resource_text(part) for part in result.contents) or "(empty)")


def _with(mention: Mention, text: str) -> Mention:
    return Mention(kind="resource", label=mention.label, server=mention.server, uri=mention.uri, text=text)
