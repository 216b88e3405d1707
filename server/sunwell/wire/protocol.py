"""The sidecar's JSON-RPC contract (docs/sidecar.md), declared once.

Every custom method name and the params/result model of each live here and nowhere else; handlers parse params
with `parse` and answer with `model.wire()`. Wire keys are camelCase (WireModel). Unknown params keys are
ignored, so an older sidecar still answers a newer client. The extension's TypeScript types are
generated from these models (scripts/gen-protocol-types.py).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from sunwell.errors import first_problem
from sunwell.vocabulary import MentionKind, TrustName, TurnStatus
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.events import SessionEvent
from sunwell.wire.images import ImageAttachment
from sunwell.wire.messages import Message, ShortText, Usage, WireModel
from sunwell.wire.options import (  # re-exported: the contract's names stay in one place
    Name,
    Params,
    PathText,
)
from sunwell.wire.processes import ProcessInfo, ProcessRow
from sunwell.wire.usage import SessionUsage
from sunwell.wire.user_requests import (  # what the sidecar asks its client: named here in REQUESTS too
    ApproveResult,
    AskParams,
    AskResult,
    CodeIntelParams,
    CodeIntelResult,
    ElicitParams,
    ElicitResult,
    SecretParams,
    SecretResult,
)
from sunwell.wire.worktrees import WorktreeActionParams, WorktreeActionResult, WorktreesResult

CHAT = "sunwell/chat"
RESUME = "sunwell/resume"
"""Takes up a session's interrupted or failed last turn; answered like `sunwell/chat` (docs/events.md
"Durable turns")."""
CHAT_EVENT = "sunwell/chatEvent"
"""Server -> client notification; its params are the event object itself (docs/events.md)."""
SESSIONS = "sunwell/sessions"
SESSION = "sunwell/session"
UNDO = "sunwell/undo"
TOOLS = "sunwell/tools"
MODELS = "sunwell/models"
COMMANDS = "sunwell/commands"
MCP = "sunwell/mcp"
MCP_RESTART = "sunwell/mcpRestart"
MCP_SIGN_OUT = "sunwell/mcpSignOut"
"""Forgets a url server's OAuth sign-in and stops it (VS Code's "Sunwell: MCP Servers", `sunwell mcp logout`)."""
LEARNED_APIS = "sunwell/learnedApis"
LEARNED_FORGET = "sunwell/learnedForget"
USAGE = "sunwell/usage"
APPROVE = "sunwell/approve"
ELICIT = "sunwell/elicit"
"""Server -> client: an MCP server asks the user `{session, server, message, schema}` -> `{action, content?}`."""
ASK = "sunwell/ask"
"""Server -> client request: `ask_user`'s question to the person."""
CODE_INTEL = "sunwell/codeIntel"
"""Server -> client request: the editor's language features (diagnostics, symbols, definitions, references)."""
PROCESSES = "sunwell/processes"
WORKTREES, WORKTREE_ACTION = "sunwell/worktrees", "sunwell/worktreeAction"  # meanings: scripts/docgen/meanings.py
PROCESS_STOP = "sunwell/processStop"
"""Stops a background process of a session (SIGTERM, then SIGKILL after a grace) and answers once it ended."""
SECRET = "sunwell/secret"
"""Server -> client request: an MCP server's OAuth sign-in kept in the editor's secret storage (tools/mcp/vaults.py)."""

LANGUAGE_ID = "lens"
CONFIG_SECTION = "sunwell"
"""`workspace/didChangeConfiguration` carries the initializationOptions keys under this section."""

TAIL_LIMIT = 65_536  # the most of a process's output `sunwell/processes` hands back: a strip's tail, not a reader

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
"""LSP RequestFailed: the request was well-formed but could not be served (e.g. the data dir is unusable)."""

class Mention(WireModel):
    """Something the user attached to the line with `@` (sunwell.agent.mentions): a workspace file (read by the
    sidecar, through the jail), or what only the editor knows, as text."""

    kind: MentionKind
    label: PathText
    """As the user saw it: `@src/app.py`, `@selection`."""
    path: PathText | None = None
    """A file: workspace-relative. A selection: the file it is in."""
    text: str | None = None
    """A selection, the problems, the terminal's output; none for a file."""
    server: Name | None = None
    """A resource (`@SERVER:URI`): the MCP server it is read from when the line is sent."""
    uri: PathText | None = None
    """A resource: its URI, as the server listed it."""


class ChatParams(Params):
    session: Name | None = None
    """Continue this stored session; a new one is created when absent."""
    text: str = Field(min_length=1)
    lens: PathText | None = None
    """A lens name or path to activate for this turn."""
    model: Name | None = None
    trust: TrustName | None = None
    mentions: list[Mention] = Field(default_factory=list)
    """Attachments sent with the line, within a quarter of the context window; `::context` lists them."""
    worktree: Name | None = None
    worktree_base: Name | None = None
    """A new worktree's base: a branch or commit of the repository (default: the branch checked out)."""
    images: list[ImageAttachment] = Field(default_factory=list)
    """Images sent with the line, at most `images.per_message` of them; a model that cannot see reads a line in
    their place and the user gets an `images_not_seen` notice."""
    replace_turn: Name | None = Field(default=None, min_length=1)
    """The turn this line replaces (Edit & resend, Retry): the session's history is taken back to before it, so
    the model never sees it or what came after; the log keeps it. Only a turn of `session`'s current conversation,
    and not while a turn runs there; the line must not be a `::command`."""


class ResumeParams(Params):
    session: Name = Field(min_length=1)
    model: Name | None = None
    """Another model for the rest of the turn; default: the one the turn ran with."""


class ChatResult(WireModel):
    session: str
    turn: str
    status: TurnStatus
    tool_calls: int
    usage: Usage | None
    error: ShortText | None = None


class SessionInfo(WireModel):
    id: str
    title: str | None
    updated_at: str
    """ISO 8601, UTC."""
    turns: int
    status: TurnStatus | None = None
    """How its last turn ended; `interrupted` (the process died) and `error` can be resumed (`sunwell/resume`)."""


class SessionsResult(WireModel):
    sessions: list[SessionInfo]


class SessionParams(Params):
    session: Name = Field(min_length=1)


class SessionResult(WireModel):
    session: str
    messages: list[Message]
    events: list[SessionEvent]
    """The session's turns as events, in order, for a client to rebuild its transcript with the same code that
    draws the live stream: each turn is a `userMessage`, the events the log kept (an answer's text comes whole,
    where the stream had deltas), and one `done` (a turn the sidecar never finished ends with status `error`)."""


class UndoParams(Params):
    session: Name = Field(min_length=1)
    force: bool = False
    """Also overwrite files changed since the turn wrote them (without it such a conflict undoes nothing)."""


class UndoResult(WireModel):
    restored: list[str]
    """Workspace-relative paths put back as they were before the turn (files it created are deleted)."""
    turn: str | None = None
    """The turn undone; null when there was nothing to undo."""
    deleted: list[str] = Field(default_factory=list)
    """Of `restored`, the files the turn had created."""
    conflicts: list[str] = Field(default_factory=list)
    """Files changed since the turn, overwritten because of `force`."""


class UsageParams(Params):
    session: Name = Field(min_length=1)


class ToolsParams(Params):
    session: Name | None = None
    """Reserved: tools that depend on a session's state (none yet)."""
    lens: PathText | None = None
    """Narrow the list by this lens' tool policy, and add its skills."""
    trust: TrustName | None = None
    """The trust level to list for (default: the configured one)."""


class ToolInfo(WireModel):
    name: str
    description: str
    source: str
    policy: Literal["auto", "ask"]
    min_trust: TrustName


class ToolsResult(WireModel):
    tools: list[ToolInfo]


class ModelInfo(WireModel):
    id: str
    """The full model string, `PROVIDER:MODEL`, as `sunwell/chat` takes it."""
    provider: str
    capabilities: dict[str, Any]
    served: bool = False
    """Listed by the configured model's server (an OpenAI-compatible `/v1/models`, Ollama's tags), not by the
    config."""


class ModelsResult(WireModel):
    current: str | None
    models: list[ModelInfo]


class CommandInfo(WireModel):
    name: str
    usage: str
    description: str


class ResourceInfo(WireModel):
    """An MCP server's resource, for the `@` picker: attached as `@SERVER:URI` (a `resource` mention)."""

    server: str
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


class CommandsResult(WireModel):
    commands: list[CommandInfo]
    """With the prompts of the MCP servers started (`SERVER:PROMPT`)."""
    resources: list[ResourceInfo] = Field(default_factory=list)
    """The resources of the MCP servers started, for the `@` picker."""


class EmptyParams(Params):
    pass


class McpServerInfo(WireModel):
    name: str
    state: str
    """`stopped`, `starting`, `running`, `failed: REASON` or `awaiting approval` (as `sunwell mcp list`)."""
    transport: Literal["stdio", "http"]
    tools: list[str]
    """The Sunwell names of its tools (`SERVER__TOOL`); empty until it has started once."""


class McpResult(WireModel):
    servers: list[McpServerInfo]
    config: str | None = None
    """The user config file, where `mcp_servers` are added (VS Code opens it there when there are none)."""


class McpRestartParams(Params):
    name: Name
    """A configured server (not a workspace proposal awaiting approval)."""


class McpSignOutParams(Params):
    name: Name
    """A configured url server."""


class McpSignOutResult(WireModel):
    forgotten: bool
    """A sign-in was kept (and is gone now)."""


class McpRestartResult(WireModel):
    state: str
    """Its state after the restart: `running`, or `failed: REASON`."""


class LearnedApiInfo(WireModel):
    name: str
    title: str
    source: str
    hosts: list[str]
    tools: list[str]
    """The tools offered (`NAME__OPERATION`)."""
    schemes: list[str]
    """Its security schemes, in the document's order: the credentials it may need (kept in VS Code's secret
    storage, never sent over this protocol)."""
    operations: int
    """How many operations it has (more than `tools` when only some tags are offered)."""


class LearnedApisResult(WireModel):
    apis: list[LearnedApiInfo]


class LearnedForgetParams(Params):
    name: Name


class LearnedForgetResult(WireModel):
    forgotten: bool


class ProcessesParams(Params):
    session: Name
    """The session whose processes are listed."""
    tail: int = Field(default=0, ge=0, le=TAIL_LIMIT)
    """Bytes of each process's latest output to include as its `tail` (whole lines); 0: none."""


class ProcessesResult(WireModel):
    processes: list[ProcessRow]
    """The session's background processes, by id, the ended ones too."""


class ProcessStopParams(Params):
    session: Name
    """The session the process belongs to."""
    process_id: int = Field(ge=1)
    """The process to stop, by its id in the session."""


class ProcessStopResult(WireModel):
    process: ProcessInfo
    """As it is once stopped (or as it was, when it was not running)."""


REQUESTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    CHAT: (ChatParams, ChatResult),
    RESUME: (ResumeParams, ChatResult),
    SESSIONS: (EmptyParams, SessionsResult),
    SESSION: (SessionParams, SessionResult),
    UNDO: (UndoParams, UndoResult),
    TOOLS: (ToolsParams, ToolsResult),
    MODELS: (EmptyParams, ModelsResult),
    COMMANDS: (EmptyParams, CommandsResult),
    MCP: (EmptyParams, McpResult),
    MCP_RESTART: (McpRestartParams, McpRestartResult),
    MCP_SIGN_OUT: (McpSignOutParams, McpSignOutResult),
    LEARNED_APIS: (EmptyParams, LearnedApisResult),
    LEARNED_FORGET: (LearnedForgetParams, LearnedForgetResult),
    PROCESSES: (ProcessesParams, ProcessesResult),
    PROCESS_STOP: (ProcessStopParams, ProcessStopResult),
    WORKTREES: (EmptyParams, WorktreesResult), WORKTREE_ACTION: (WorktreeActionParams, WorktreeActionResult),
    USAGE: (UsageParams, SessionUsage),
    APPROVE: (ApprovalRequest, ApproveResult),
    ASK: (AskParams, AskResult),
    CODE_INTEL: (CodeIntelParams, CodeIntelResult),
    SECRET: (SecretParams, SecretResult),
    ELICIT: (ElicitParams, ElicitResult),
}
"""Every custom request: method -> (params, result)."""

P = TypeVar("P", bound=BaseModel)


class InvalidParams(ValueError):
    """Params that do not match the method's model; the handler layer answers JSON-RPC -32602 with the text."""


def parse(model: type[P], params: Any, method: str) -> P:
    """Validate a request's params (a JSON object, or nothing); the error names the first bad key."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams(f"{method}: params must be an object, got {type(params).__name__}")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        where, problem = first_problem(exc, top="params")
        raise InvalidParams(f"{method}: invalid params: '{where}': {problem}") from None

