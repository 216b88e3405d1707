"""The shape of a tool, of what it gives back and of its failures, and what a call may use (`ToolContext`).

A tool comes in one of two kinds. Most are declared from their arguments model (`Tool.of(Args, handler, ...)`,
tools/arguments.py): the model gives the schema the model is shown, the subject policy judges and the arguments
that carry file text; a valid call's arguments become an instance of it, once (`bind`), and that instance is what
the handler, the preview, the stage and the cut-off take. A tool whose schema is known only at run time (an MCP
server's, a learned API operation's, a lens skill's) is `Tool.dynamic(parameters, handler, ...)`: its arguments,
checked against that schema, stay the dict they are, and it says its subject with a function of that dict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, cast

from pydantic import ValidationError

from sunwell.config.settings import ImageSettings
from sunwell.errors import first_problem
from sunwell.tools.arguments import ToolArguments
from sunwell.tools.failure import ToolFailure
from sunwell.tools.scratch import Scratch
from sunwell.tools.subject import NOTHING, Subject
from sunwell.tools.validation import signature, validate_arguments
from sunwell.vocabulary import Trust
from sunwell.wire.client import HEADLESS, Client
from sunwell.wire.messages import TextPart, ToolSpec
from sunwell.wire.results import ResultData, ResultPart, map_text

if TYPE_CHECKING:
    from sunwell.tools.network.policy import Network
    from sunwell.tools.policy.environment import EnvSecrets
    from sunwell.tools.processes import SessionProcesses
    from sunwell.tools.workspace.jail import Jail

__all__ = ["CallIdentity", "CommandSettings", "Limits", "Output", "SearchSettings", "StagedEffects", "Subject", "Tool",
           "ToolContext", "ToolFailure", "ToolReturn", "Trust", "TurnServices", "UndoHooks"]

@dataclass(frozen=True)
class ToolReturn:
    """What a handler gives back when it is more than a text (a handler may return just a `str`): the parts a model
    reads, in order, and the data a front end draws the result from (wire/results.py)."""

    parts: Sequence[ResultPart]
    data: ResultData | None = None

    @classmethod
    def text(cls, text: str, data: ResultData | None = None) -> ToolReturn:
        return cls([TextPart(text=text)], data)

    def changed(self, change: Callable[[str], str]) -> ToolReturn:
        """This return with `change` applied to each part's text (secrets masked); the data is the tool's own."""
        return ToolReturn([map_text(part, change) for part in self.parts], self.data)


Output = str | ToolReturn


@dataclass(frozen=True)
class SearchSettings:
    ripgrep_path: str | None = None
    """The rg executable for search_files; "" means none (the Python search), None: `rg` on PATH."""
    timeout: float | None = None
    """Deadline of one search_files call (None: just under the call's limit, `ToolContext.tool_timeout`)."""


@dataclass(frozen=True)
class CommandSettings:
    """How run_command runs a command: its sandbox, its time, what it may see, where its changes are staged."""

    sandbox: Literal["auto", "off"] = "auto"
    """In bubblewrap (and refused without it), or `off`: unsandboxed, with a warning every turn."""
    network: bool = False
    """Whether commands may use the network: only at trust level `full`."""
    max_timeout: float = 600.0
    """Cap, in seconds, on the `timeout` the model may ask of run_command (at most 3600)."""
    bwrap_path: str | None = None
    """The bwrap executable (None: `bwrap` on PATH); a path that does not exist means "no bwrap"."""
    ro_paths: Sequence[str] | str = ()
    """Extra host paths shown read-only in the sandbox (toolchains such as ~/.pyenv), never credentials."""
    env_passthrough: tuple[str, ...] = ()
    """Variables of Sunwell's environment commands may see besides the base allowlist (tools/policy/environment.py)."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables set for every command, on top of those: a worktree session's own ports (`PORT`)."""
    quarantine_dir: Any = None
    """Where what a command planted under a blocked or protected name is moved (a Path), else the temp dir."""
    staging_dir: Any = None
    """Where a command's changes are staged before they are shown (a Path), else the temp dir."""
    staging_max_bytes: int = 500_000_000
    staging_max_files: int = 20_000


@dataclass(frozen=True)
class UndoHooks:
    """How undo learns what a call changes (tools/workspace/checkpoints.py); each None records nothing."""

    before_write: Callable[[Any, str], None] | None = None
    """Called with (real path, workspace-relative path) before a write changes a file: undo keeps what it was."""
    after_write: Callable[[Any, str, bytes], None] | None = None
    """Called with (real path, relative path, the bytes written) after a write: undo can tell later edits."""
    before_changes: Callable[[list[tuple[Any, str, str | None]]], None] | None = None
    """Called with [(prior file, relative path, sha256 of the new content or None for a deletion)] before a
    command's changes are applied (tools/sandbox/effects.py): undo puts them back like writes."""


@dataclass(frozen=True)
class Limits:
    """How much a call may take and how searches and commands run: the user's settings, for every call of a turn."""

    max_output_bytes: int = 100_000
    tool_timeout: float = 30.0
    """The time limit of a call to a tool that sets none of its own: the user's `tool_timeout_sec`."""
    search: SearchSettings = SearchSettings()
    commands: CommandSettings = CommandSettings()
    images: ImageSettings = field(default_factory=ImageSettings)
    """How an image a tool returns is bounded (tools/images.py): the user's `images:` settings."""


@dataclass(frozen=True)
class CallIdentity:
    """Which call runs: its session, turn and id (set for each call by tools/executor.py `execute`)."""

    session: str = ""
    turn: str = ""
    id: str = ""
    recovery: str = ""
    """A key naming what the call keeps for after a crash, unique to its session and call (set for each call of
    a durable turn by agent/orchestrator.py); "": the call cannot be taken up after a crash, keep nothing."""


@dataclass(frozen=True)
class TurnServices:
    """What the running turn lends its calls; each None where there is none (a context with no turn)."""

    notify: Callable[[str, str, str], None] | None = None
    """(level, code, message) -> a `notice` event of the running turn (an MCP server failed or restarted)."""
    secrets: EnvSecrets | None = None
    """Masks results before the model or a log sees them."""
    complete: Callable[[str, str], Awaitable[str]] | None = None
    """(system instructions, user text) -> the model's answer with no tools: a skill's nested model call."""
    subagent: Callable[[str, str, str], Awaitable[str]] | None = None
    """(call id, description, prompt) -> a read-only sub-agent's final answer (`task`); None: no sub-agents here
    (inside a sub-agent)."""
    processes: SessionProcesses | None = None
    """The session's background processes (tools/processes/table.py); None: none here (no session)."""


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use, as a few capabilities: the jail (the only way to a path), the limits, the person on
    the other side (the client port, wire/client.py), the network, the session's scratch state, undo's hooks, what
    the running turn lends (notices, secret masking, a nested model call, sub-agents), and which call this is."""

    jail: Jail
    limits: Limits = Limits()
    client: Client = HEADLESS
    """Whom a tool asks (`ask_user`, code intelligence, learn_api's tags), through the engine's time limits."""
    network: Network | None = None
    """The user's host rules, the caps, the session's page cache; None: no network tools."""
    scratch: Scratch | None = None
    """The session's key-value store and plan (kv_set, kv_get, update_plan); None: a context with no session."""
    undo: UndoHooks = UndoHooks()
    turn: TurnServices = TurnServices()
    call: CallIdentity = CallIdentity()

    # Shorthands the handlers read (tools/handlers/): the limits, and the call's secrets and recovery key.
    @property
    def max_output_bytes(self) -> int:
        return self.limits.max_output_bytes

    @property
    def tool_timeout(self) -> float:
        return self.limits.tool_timeout

    @property
    def search(self) -> SearchSettings:
        return self.limits.search

    @property
    def commands(self) -> CommandSettings:
        return self.limits.commands

    @property
    def secrets(self) -> EnvSecrets | None:
        return self.turn.secrets

    @property
    def recovery(self) -> str:
        return self.call.recovery

    def calling(self, call_id: str, recovery: str | None = None) -> ToolContext:
        """This context for the call `call_id` (with `recovery`, its key for after a crash)."""
        call = replace(self.call, id=call_id, recovery=self.call.recovery if recovery is None else recovery)
        return replace(self, call=call)

    def lending(self, **services: Any) -> ToolContext:
        """This context with some of the turn's services replaced (a sub-agent's: its own notices, none of its own)."""
        return replace(self, turn=replace(self.turn, **services))

    def own_deadline(self) -> float:
        """Seconds that end a little before the user's limit: a tool that waits on something (a search, the editor)
        then stops it itself and says what it waited for, instead of being cut off by tools/executor.py."""
        return self.tool_timeout - min(self.tool_timeout / 10, 5.0)


class StagedEffects(Protocol):
    """What a call did in a staging overlay, held back from the workspace. Whoever holds it shows `preview`, then
    `apply`s or not, and always `discard`s it (the staged copy is gone after that)."""

    async def preview(self) -> dict[str, Any]:
        """The `effects` preview (docs/sidecar.md "EffectsPreview"): what it ran, its output, what it would change."""
        ...

    async def apply(self) -> str:
        """Put the changes in the workspace; the result the model reads."""
        ...

    async def discard(self) -> None: ...


A = TypeVar("A")
"""What a tool's handler takes: an instance of its arguments model, or a dynamic tool's dict."""
M = TypeVar("M", bound=ToolArguments)
Raw = dict[str, Any]

Preview = Callable[[A, ToolContext], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""What an approval shows before a risky call runs: its `preview` (`diff`, `command`, `fetch`...; docs/sidecar.md
"ApprovalRequest")."""
Stage = Callable[[A, ToolContext], Awaitable[StagedEffects]]
CutOff = Callable[[A, ToolContext], Awaitable["str | None"]]
"""A call's arguments, and a context with its `call_id` and `recovery` -> a note for the user and the model, or None."""


@dataclass(frozen=True)
class Tool(Generic[A]):
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[A, ToolContext], Awaitable[Output]]
    arguments: type[ToolArguments] | None = None
    """The arguments model the tool was declared from (`Tool.of`); None: a dynamic tool (`Tool.dynamic`)."""
    min_trust: Trust = Trust.read_only
    approval: Literal["auto", "ask"] = "auto"
    risk: Literal["write", "shell", "network", "mcp"] | None = None
    read_only: bool = True
    """Read-only calls of one response may run concurrently; the others run in order."""
    harmless: bool = False
    """It changes nothing and reaches no network (reads, listings, the plan, the time, arithmetic, kv_get):
    `--dry-run=risky` runs it for real (docs/cli.md "sunwell run"). False for any tool that does not say so."""
    volatile: bool = False
    """What it reads changes by itself (a running process's output): a repeated call is run again, never answered
    from the turn's memory of the earlier one (agent/call_memory.py)."""
    expendable: bool = False
    """A convenience the agent can do without (the plan, the time, arithmetic, the key-value store): fitting
    leaves it out before anything else when the context window is small."""
    source: str = "core"
    companion: str | None = None
    """Offered only in a turn that offers this tool too (the process tools go with run_command: without it no
    process starts, and their definitions would cost every request for nothing)."""
    timeout: float | None = None
    """Seconds a call may run; None: the user's `tool_timeout_sec`. A tool sets its own only when its time is
    bounded elsewhere (run_command's `timeout`, an MCP server's, the network's) or is a person's or a model's."""
    preview: Preview[A] | None = None
    subject: Callable[[A], Subject] | None = None
    """What a call touches, for policy (tools/subject.py); None: nothing policy looks at."""
    stage: Stage[A] | None = None
    """Runs a call whose subject is `staged` in a staging overlay and returns its effects held back, for the
    orchestrator to show, then apply or discard (the handler runs and applies in one go, unasked)."""
    cut_off: CutOff[A] | None = None
    """Called in a resumed turn for a call of this tool the crash cut off while it ran (it is never run again):
    it may record for undo what the call did, from what it kept under ToolContext.recovery, and clear that."""

    @classmethod
    def of(cls, arguments: type[M], handler: Callable[[M, ToolContext], Awaitable[Output]], *, name: str,
           description: str, preview: Preview[M] | None = None, stage: Stage[M] | None = None,
           cut_off: CutOff[M] | None = None, **policy: Any) -> Tool[M]:
        """A tool declared from its arguments model: its schema and its subject are the model's."""
        return Tool(name=name, description=description, parameters=arguments.schema_for_tool(), handler=handler,
                    arguments=arguments, subject=arguments.subject, preview=preview, stage=stage, cut_off=cut_off,
                    **policy)

    @classmethod
    def dynamic(cls, parameters: dict[str, Any], handler: Callable[[Raw, ToolContext], Awaitable[Output]], *,
                name: str, description: str, subject: Callable[[Raw], Subject] | None = None,
                preview: Preview[Raw] | None = None, stage: Stage[Raw] | None = None,
                cut_off: CutOff[Raw] | None = None, **policy: Any) -> Tool[Raw]:
        """A tool whose schema is known only at run time (an MCP server's, a learned API's, a lens skill's)."""
        return Tool(name=name, description=description, parameters=parameters, handler=handler, subject=subject,
                    preview=preview, stage=stage, cut_off=cut_off, **policy)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    @property
    def content(self) -> frozenset[str]:
        """The arguments that carry text into a file (`CONTENT`): the audit keeps their size and hash only."""
        return self.arguments.content_fields() if self.arguments is not None else frozenset()

    def bind(self, arguments: Raw) -> A:
        """A call's arguments as the handler takes them, validated here, once: every problem the schema finds named
        (tools/validation.py), then read into the arguments model, which may refuse what a schema cannot say
        (update_plan's one step in progress). Raises ToolFailure `validation`."""
        if (error := validate_arguments(self.parameters, arguments)) is not None:
            raise ToolFailure(error.code, error.message, error.suggestion)
        if self.arguments is None:
            return cast(A, arguments)
        try:
            return cast(A, self.arguments.model_validate(arguments))
        except ValidationError as exc:
            where, problem = first_problem(exc)
            raise ToolFailure("validation", f"parameter '{where}': {problem.removeprefix('Value error, ')}",
                              signature(self.parameters)) from None

    def declared(self, arguments: A) -> Subject:
        return self.subject(arguments) if self.subject is not None else NOTHING
