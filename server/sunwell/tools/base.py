"""The shape of a tool and of its failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from sunwell.tools.scratch import Scratch
from sunwell.tools.subject import NOTHING, Subject
from sunwell.vocabulary import Trust
from sunwell.wire.messages import ToolError, ToolSpec

__all__ = ["CommandSettings", "SearchSettings", "StagedEffects", "Subject", "Tool", "ToolContext", "ToolFailure", "Trust",
           "UndoHooks"]


class ToolFailure(Exception):
    """Raised by a handler; becomes an error result the model reads (never an exception through the loop)."""

    def __init__(self, code: str, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.error = ToolError(code=code, message=message, suggestion=suggestion)


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


@dataclass
class ToolContext:
    """What a handler may use, as a few named capabilities: the jail (the only way to a path), the cap on a
    result, how searches and commands run, undo's hooks, a nested model call, the turn's notices, secret masking,
    the session's scratch state, the network."""

    jail: Any  # sunwell.tools.workspace.jail.Jail (kept loose to avoid an import cycle in handlers' typing)
    max_output_bytes: int = 100_000
    tool_timeout: float = 30.0
    """The time limit of a call to a tool that sets none of its own: the user's `tool_timeout_sec`."""
    search: SearchSettings = SearchSettings()
    commands: CommandSettings = CommandSettings()
    undo: UndoHooks = UndoHooks()
    complete: Callable[[str, str], Awaitable[str]] | None = None
    """(system instructions, user text) -> the model's answer with no tools: a skill's nested model call."""
    secrets: Any = None
    """A sunwell.tools.policy.environment.EnvSecrets masking results before the model or a log sees them, or None."""
    notify: Callable[[str, str, str], None] | None = None
    """(level, code, message) -> a `notice` event of the running turn (an MCP server failed or restarted)."""
    network: Any = None
    """A sunwell.tools.network.policy.Network: the user's host rules, the caps, the session's page cache; None: no
    network tools."""
    scratch: Scratch | None = None
    """The session's key-value store and plan (kv_set, kv_get, update_plan); None: a context with no session."""
    call_id: str = ""
    """The call being run (set for each call by tools/executor.py `execute`)."""
    recovery: str = ""
    """A key naming what the call keeps for after a crash, unique to its session and call (set for each call of
    a durable turn by agent/orchestrator.py); "": the call cannot be taken up after a crash, keep nothing."""
    ask: Callable[[str, str, list[str]], Awaitable[str | None]] | None = None
    """(call id, question, options) -> the person's answer, None when none came (declined, time limit): what the
    front end answers `ask_user` with; None: no one to ask (headless, `--approve deny`)."""
    code_intel: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
    """`sunwell/codeIntel` params -> the editor's raw answer (checked by the tool); None: no editor answers."""
    subagent: Callable[[str, str, str], Awaitable[str]] | None = None
    """(call id, description, prompt) -> a read-only sub-agent's final answer (`task`); None: no sub-agents here
    (inside a sub-agent)."""
    processes: Any = None
    """The session's background processes (tools/processes/table.py SessionProcesses); None: none here."""

    def own_deadline(self) -> float:
        """Seconds that end a little before the user's limit: a tool that waits on something (a search, the editor)
        then stops it itself and says what it waited for, instead of being cut off by tools/executor.py."""
        return self.tool_timeout - min(self.tool_timeout / 10, 5.0)


class StagedEffects(Protocol):
    """What a call did in a staging overlay, held back from the workspace. Whoever holds it shows `preview`, then
    `apply`s or not, and always `discard`s it (the staged copy is gone after that)."""

    async def preview(self) -> dict[str, Any]:
        """PROTOCOL.md `effects` preview: what it ran, its output, what it would change."""
        ...

    async def apply(self) -> str:
        """Put the changes in the workspace; the result the model reads."""
        ...

    async def discard(self) -> None: ...


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]
Preview = Callable[[dict[str, Any], ToolContext], dict[str, Any]]
"""What an approval shows before a risky call runs: PROTOCOL.md `preview` (`diff` or `command`)."""
Declare = Callable[[dict[str, Any]], Subject]
"""A call's arguments (valid by the tool's schema) -> what it touches; raises ToolFailure if they say nothing."""
Stage = Callable[[dict[str, Any], ToolContext], Awaitable[StagedEffects]]
CutOff = Callable[[dict[str, Any], ToolContext], Awaitable[str | None]]
"""A call's arguments, and a context with its `call_id` and `recovery` -> a note for the user and the model, or None."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    min_trust: Trust = Trust.read_only
    approval: Literal["auto", "ask"] = "auto"
    risk: Literal["write", "shell", "network", "mcp"] | None = None
    read_only: bool = True
    """Read-only calls of one response may run concurrently; the others run in order."""
    harmless: bool = False
    """It changes nothing and reaches no network (PROTOCOL.md "Read-only": reads, listings, the plan, the time,
    arithmetic, kv_get): `--dry-run=risky` runs it for real. False for any tool that does not say so."""
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
    preview: Preview | None = None
    subject: Declare | None = None
    """What a call touches, for policy (tools/subject.py); None: nothing policy looks at."""
    stage: Stage | None = None
    """Runs a call whose subject is `staged` in a staging overlay and returns its effects held back, for the
    orchestrator to show, then apply or discard (the handler runs and applies in one go, unasked)."""
    cut_off: CutOff | None = None
    """Called in a resumed turn for a call of this tool the crash cut off while it ran (it is never run again):
    it may record for undo what the call did, from what it kept under ToolContext.recovery, and clear that."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def declared(self, arguments: dict[str, Any]) -> Subject:
        return self.subject(arguments) if self.subject is not None else NOTHING
