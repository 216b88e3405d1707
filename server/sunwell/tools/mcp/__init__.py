"""Tools from outside: MCP servers whose tools become ordinary Sunwell tools named `SERVER__TOOL` (README "Tools
from outside (MCP)"). A transport of the tools floor: what it makes goes through the same validation, trust,
approval, audit, limits and events as the core tools.
"""

from sunwell.tools.mcp.hub import McpHub
from sunwell.tools.mcp.surroundings import ServerDown, Surroundings

__all__ = ["McpHub", "ServerDown", "Surroundings"]
