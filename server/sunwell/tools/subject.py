"""What one tool call touches, as the tool declares it: the subject policy judges.

Policy (agent/gate.py) reads this, never a tool's argument names: a write's path for the protected-path check and
its bytes for the write budget, a command and its folder, an MCP server and tool, a URL's host. A new kind of tool
states its subject here instead of adding a special case to the gate (Claude Code's permission rules name a tool and
its subject the same way: `Bash(git diff:*)`, `Edit(src/**)`, `WebFetch(domain:docs.python.org)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sunwell.tools.network.urls import Target


@dataclass(frozen=True)
class Write:
    path: str
    """As the call names it, relative to the workspace; policy resolves it through the jail."""
    data: bytes
    """The new bytes the call brings: a whole file's content, or the replacement text of an edit."""


@dataclass(frozen=True)
class Command:
    line: str
    """What will run: for a lens skill, its rendered template, not the model's arguments."""
    cwd: str = "."


@dataclass(frozen=True)
class McpCall:
    server: str
    tool: str
    """The server's own name for the tool (the Sunwell tool is `SERVER__TOOL`)."""


@dataclass(frozen=True)
class Subject:
    reads: tuple[str, ...] = ()
    """Paths the call reads or lists, as it names them."""
    writes: tuple[Write, ...] = ()
    command: Command | None = None
    mcp: McpCall | None = None
    web: Target | None = None
    """The URL the call requests, parsed and normalised: policy judges its host (tools/network/policy.py)."""
    asked: bool = False
    """Asked even on a host the user allowed: it sends or changes something there, or learns what to call (a learned
    API's POST, learn_api)."""
    staged: bool = False
    """Its file changes can be made in a staging overlay, shown, then applied or discarded (the tool's `stage`)."""

    @property
    def bytes_written(self) -> int:
        return sum(len(write.data) for write in self.writes)


class _Content:
    def __repr__(self) -> str:
        return "CONTENT"


CONTENT = _Content()
"""Marks an argument of a tool's arguments model that carries text into a file (`Annotated[str, CONTENT]`: a write's
content, an edit's old and new text): the audit keeps its size and hash, never the text (tools/policy/audit.py)."""

NOTHING = Subject()
"""A call that touches nothing policy looks at (a lens skill answered by a nested model call)."""
