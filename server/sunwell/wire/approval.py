"""The approval request as it travels (docs/sidecar.md "sunwell/approve"): the risky call, and a preview of what it
will do, a union tagged by `kind`.

It lives on the bottom floor because three floors share it: tools produce the previews, the agent's gate asks the
question, and the front ends (the sidecar's `sunwell/approve`, the terminal prompt) show it. The extension's
TypeScript types are generated from these models (scripts/gen-protocol-types.py). Tools produce their previews as
plain dicts (`{"kind": "diff", ...}`); building the request validates them into these models, at the approval
boundary (sunwell.agent.gate).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from sunwell.vocabulary import Risk
from sunwell.wire.messages import WireModel

__all__ = [
    "ApprovalRequest",
    "CommandPreview",
    "DiffPreview",
    "EffectsPreview",
    "FetchPreview",
    "FileChange",
    "LearnPreview",
    "Preview",
    "ToolPreview",
]


class DiffPreview(WireModel):
    """A write or an edit: the file as it is and as the call would leave it."""

    kind: Literal["diff"] = "diff"
    path: str
    """Workspace-relative."""
    before: str | None
    """Null for a new file."""
    after: str
    remote_schema: str | None = None
    """A remote URL the file names as its `$schema` (JSON, YAML): VS Code fetches it when the file is opened."""


class CommandPreview(WireModel):
    """A command line, exactly as it will run, and where."""

    kind: Literal["command"] = "command"
    command: str
    cwd: str
    """Workspace-relative."""


class FileChange(WireModel):
    """One file a command changed in its staging overlay."""

    path: str
    change: Literal["added", "modified", "deleted", "mode"]
    before: str | None
    """The text before (null when added, binary, or too large to show)."""
    after: str | None
    """The text after (null when deleted, binary, or too large to show)."""
    binary: bool


class EffectsPreview(WireModel):
    """A command that already ran in a staging overlay: nothing reaches the workspace unless the answer is allow."""

    kind: Literal["effects"] = "effects"
    command: str
    cwd: str
    exit_code: int
    output: str
    changes: list[FileChange]
    truncated: bool
    """More changes than listed."""


class ToolPreview(WireModel):
    """A call to a tool of an MCP server, with the arguments it will get."""

    kind: Literal["tool"] = "tool"
    server: str
    """The MCP server; empty for a tool of Sunwell's own that has no better preview."""
    tool: str
    arguments: dict[str, Any]
    definition: str | None = None
    """A hash of the tool's description and schema as the server lists them now: allow-for-session holds only for
    the tool it was given for (a server that changes a tool after it was allowed is asked again)."""


class FetchPreview(WireModel):
    """A request to a web host: the host first (what allow-for-session allows), then the whole URL."""

    kind: Literal["fetch"] = "fetch"
    url: str
    host: str
    """IDNA-normalised (`xn--` for a non-ASCII name), so a look-alike shows as what it is."""


class LearnedOperation(WireModel):
    """One operation a learned API offers as a tool."""

    tool: str
    method: str
    path: str
    summary: str


class LearnPreview(WireModel):
    """Learning an API (learn_api): the tools it will offer and the hosts they call. Always asked: allow-for-session
    remembers nothing for it."""

    kind: Literal["learn"] = "learn"
    name: str
    hosts: list[str]
    operations: list[LearnedOperation]
    changes: dict[str, list[str]] | None = None
    """When re-learning: the tools `added`, `removed`, `changed`, and `hosts` when they change."""


Preview = Annotated[DiffPreview | CommandPreview | EffectsPreview | ToolPreview | FetchPreview | LearnPreview,
                    Field(discriminator="kind")]
HOST_RULE = "network:host"
"""The middle of a session rule that allows a host (for every network tool), not one tool."""


class ApprovalRequest(WireModel):
    """A risky call waiting for a decision: the params of `sunwell/approve`."""

    model_config = ConfigDict(frozen=True)

    session: str
    turn: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    risk: Risk
    preview: Preview

    @property
    def command(self) -> str | None:
        """The command line a shell call will run, as its preview shows it; None for other calls."""
        if self.risk != "shell" or not isinstance(self.preview, CommandPreview | EffectsPreview):
            return None
        return self.preview.command

    def session_rule(self) -> tuple[str, str, str] | None:
        """What allow-for-session remembers: the exact tool, and for shell the exact command line (none known:
        nothing is remembered, the answer counts for this call only); for an MCP tool the exact arguments too; for a
        web request its host, whatever tool asks."""
        if isinstance(self.preview, LearnPreview):
            return None
        if self.risk == "network" and isinstance(self.preview, FetchPreview):
            return self.session, HOST_RULE, self.preview.host
        if self.risk == "mcp":
            definition = self.preview.definition if isinstance(self.preview, ToolPreview) else None
            arguments = json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)
            return self.session, self.name, f"{arguments}#{definition or ''}"
        if self.risk != "shell":
            return self.session, self.name, ""
        return None if self.command is None else (self.session, self.name, self.command)
