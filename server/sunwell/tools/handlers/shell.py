"""run_command: `bash -c COMMAND` in the workspace, sandboxed, time-limited, its output capped while it is read.

Its settings are ToolContext.commands (CommandSettings, tools/base.py); undo learns of its changes through
ToolContext.undo. How the process is run and stopped: tools/sandbox/process.py.

Where an overlay can be mounted (tools/sandbox/staging.py), a command runs staged: `stage_command` runs it and holds what it
changed back (StagedCommand) for the orchestrator to show and apply or discard; the handler applies it unasked (the
call needed no approval). Elsewhere it runs on the workspace itself, with a snapshot for undo that outlives a crash:
in the resumed turn `command_cut_off` records from it what a command cut off did (tools/sandbox/snapshot.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Output, Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.handlers.processes import processes_of, start_background, writable_folders
from sunwell.tools.policy.environment import command_env
from sunwell.tools.policy.guarded import GuardedEntry, guarded_entries, quarantine_planted
from sunwell.tools.processes import Launch
from sunwell.tools.sandbox.backend import backend_for, find_sandbox, shell_argv
from sunwell.tools.sandbox.bwrap import BwrapProbe, bwrap_argv, bwrap_available, probe_bwrap
from sunwell.tools.sandbox.copy_stage import CopyStage
from sunwell.tools.sandbox.effects import Effects, apply, assess
from sunwell.tools.sandbox.effects import preview as effects_preview
from sunwell.tools.sandbox.overlay import Stage
from sunwell.tools.sandbox.process import DRAIN_GRACE, KILL_GRACE, render, run_process
from sunwell.tools.sandbox.seatbelt import command_home, seatbelt_argv, seatbelt_policy
from sunwell.tools.sandbox.snapshot import BUDGET as SNAPSHOT_BUDGET
from sunwell.tools.sandbox.snapshot import Snapshot
from sunwell.tools.sandbox.staging import staging_parent, staging_problem
from sunwell.tools.subject import Command, Subject

__all__ = ["RUN_COMMAND", "RunCommandArguments", "command_cut_off", "command_preview", "run_command", "sandbox_warning",
           "stage_command", "staging_problem"]
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_TIMEOUT = 600.0
TIMEOUT_CEILING = 3600.0
log = logging.getLogger(__name__)
INSTALL_HINT = (
    "run_command needs the bubblewrap sandbox: apt-get install bubblewrap "
    "(or set sandbox: off in the config to run unsandboxed)"
)


def sandbox_warning(ctx: ToolContext) -> str | None:
    """The warning to show each turn while run_command runs unsandboxed, else None."""
    if ctx.commands.sandbox == "off":
        return (
            "run_command runs WITHOUT a sandbox (sandbox: off): commands can read and change anything your user "
            "can, outside the workspace too. Remove `sandbox: off` from the config to turn the sandbox back on."
        )
    return None


@dataclass(frozen=True)
class _Job:
    """One command, checked and ready to start: `argv` already wrapped in the sandbox when there is one."""

    command: str
    cwd: Path
    timeout: float
    env: dict[str, str]
    argv: list[str]
    entries: list[GuardedEntry]
    staging: str | None
    """Why it cannot run staged, or None."""


async def _prepare(args: RunCommandArguments, ctx: ToolContext, writable: list[Path] | None = None) -> _Job:
    command = args.command
    if not command.strip():
        hint = 'e.g. {"command": "pytest -q tests/test_app.py"}'
        raise ToolFailure("validation", "parameter 'command' is required (a bash command line)", hint)
    cwd_arg = args.cwd or "."
    cwd = ctx.jail.resolve(cwd_arg)
    if not cwd.is_dir():
        raise ToolFailure("unsupported", f"cwd is not a directory: {cwd_arg}", "pass a folder as cwd")
    timeout = _timeout(args.timeout, ctx)
    env = command_env(os.environ, ctx.commands.env_passthrough) | dict(ctx.commands.env)
    argv = shell_argv(command)
    entries = await asyncio.to_thread(guarded_entries, ctx.jail)
    if ctx.commands.sandbox == "off":
        return _Job(command, cwd, timeout, env, argv, entries, "the sandbox is off")
    backend = backend_for(sys.platform)
    if backend == "none":  # asked before it runs (the gate says so once: sandbox_unavailable), undone from a snapshot
        return _Job(command, cwd, timeout, env, argv, entries, await staging_problem(ctx))
    if backend == "seatbelt":  # always staged, in a clone: _run_staged wraps it once the clone exists
        if problem := find_sandbox().problem:
            raise ToolFailure("permission", f"run_command needs the Seatbelt sandbox: {problem}")
        env["HOME"] = await asyncio.to_thread(command_home)
        return _Job(command, cwd, timeout, env, argv, entries, await staging_problem(ctx))
    bwrap, probe = await _bwrap(ctx)
    env.pop("TMPDIR", None)  # the host's temp dir is not in the sandbox; its own /tmp is
    prefix = await asyncio.to_thread(
        bwrap_argv, ctx.jail.root, cwd, ctx.jail, network=ctx.commands.network, bwrap=bwrap,
        home=env.get("HOME"), ro_paths=ctx.commands.ro_paths, userns_flags=probe.userns_flags, entries=entries,
        writable=writable,
    )  # fmt: skip
    return _Job(command, cwd, timeout, env, prefix + argv, entries, await staging_problem(ctx))


async def run_command(args: RunCommandArguments, ctx: ToolContext) -> Output:
    if args.background:
        return await _background(args, ctx)
    job = await _prepare(args, ctx)
    if job.staging is None:
        staged = await _run_staged(job, ctx)
        try:
            return await staged.apply()
        finally:
            await staged.discard()
    snapshot = None
    guarded = {e.rel for e in job.entries}
    if ctx.undo.before_changes is not None:  # no overlay here: undo from a copy taken before (kept for a crash)
        budget = min(ctx.commands.staging_max_bytes, SNAPSHOT_BUDGET)
        snapshot = await asyncio.to_thread(Snapshot.take, ctx.jail, staging_parent(ctx), budget, ctx.recovery,
                                           guarded)
    try:
        try:
            code, out, err = await run_process(job.argv, str(job.cwd), job.env, job.timeout, ctx.max_output_bytes)
        finally:  # also when the turn is cancelled: nothing planted may stay for the host to run (the thread
            # finishes the move even if this await is cancelled; the walk stays off the event loop)
            moved, folder = await asyncio.to_thread(quarantine_planted, ctx.jail, guarded, ctx.commands.quarantine_dir)
            _, lost = await asyncio.to_thread(snapshot.record, ctx.undo.before_changes) if snapshot else ([], [])
    finally:
        if snapshot is not None:
            snapshot.discard()
    notes = _planted_note(moved, folder) + _lost_note(lost)
    if code is None:
        partial = render(out, err, f"[stopped after {job.timeout:g} s]", ctx.max_output_bytes)
        raise ToolFailure(
            "timeout",
            f"the command did not finish within {job.timeout:g} s and was stopped (its whole process group was "
            f"killed). Output so far:\n{partial}{notes}",
            f"pass a larger timeout (at most {_max_timeout(ctx):g} s) or make the command do less; "
            "servers and watchers that never exit cannot run here",
        )
    return render(out, err, f"[exit code: {code}]", ctx.max_output_bytes) + notes


async def _background(args: RunCommandArguments, ctx: ToolContext) -> Output:
    """A process that keeps running (tools/handlers/processes.py): sandboxed as any command, but on the workspace
    read-only (no staging, nothing to review when it stops) except the folders the user listed in
    `background.writable` (build caches); asked before it starts, like a command that cannot be staged."""
    sandboxed = ctx.commands.sandbox != "off"
    if sandboxed and backend_for(sys.platform) != "bubblewrap":
        raise ToolFailure("unsupported", "background processes run only in the bubblewrap sandbox (Linux), or with "
                          "sandbox: off", "run the command without background, with a timeout")
    writable = await asyncio.to_thread(writable_folders, ctx.jail, processes_of(ctx).limits.writable)
    job = await _prepare(args, ctx, writable=writable if sandboxed else None)
    guarded = {e.rel for e in job.entries}

    def planted() -> str:  # what it made under a blocked or protected name where it could write
        return _planted_words(*quarantine_planted(ctx.jail, guarded, ctx.commands.quarantine_dir))

    # read as it is printed: Python buffers a pipe, and a `wait_for` line would wait in its buffer
    env = {**job.env, "PYTHONUNBUFFERED": "1"}
    launch = Launch(job.command, job.argv, str(job.cwd), env, sandboxed=sandboxed,
                    isolated=sandboxed and not ctx.commands.network,
                    on_end=planted if writable or not sandboxed else None)
    return await start_background(launch, args.wait_for, job.timeout, ctx)


async def command_cut_off(args: RunCommandArguments, ctx: ToolContext) -> str | None:
    """A command the crash cut off while it ran unstaged (RUN_COMMAND.cut_off): what it planted is moved out, what
    changed since its snapshot is recorded into the turn's checkpoints, and the snapshot goes; None when it left
    none (it ran staged, or never started)."""
    if not ctx.recovery or ctx.undo.before_changes is None:
        return None
    snapshot = await asyncio.to_thread(Snapshot.found, ctx.jail, staging_parent(ctx), ctx.recovery)
    if snapshot is None:
        return None
    try:
        moved, folder = await asyncio.to_thread(quarantine_planted, ctx.jail, snapshot.guarded,
                                                ctx.commands.quarantine_dir)
        undone, lost = await asyncio.to_thread(snapshot.record, ctx.undo.before_changes)
    finally:
        await asyncio.to_thread(snapshot.discard)
    shown = ", ".join(undone[:10]) + (" and more" if len(undone) > 10 else "")
    return ((f"undo puts back the {len(undone)} workspace file(s) changed since it started ({shown}), by it or by "
             "anyone until the turn resumed" if undone else "it changed no workspace file undo tracks") +
            "; undo cannot restore what it did outside the workspace" + _lost_note(lost) + _planted_note(moved, folder))


async def stage_command(args: RunCommandArguments, ctx: ToolContext) -> StagedCommand:
    """Run the command staged and hold back what it changed (RUN_COMMAND.stage); refused where it cannot be staged."""
    job = await _prepare(args, ctx)
    if job.staging is not None:
        raise ToolFailure("execution", f"the command cannot run staged here ({job.staging}); it was not run")
    return await _run_staged(job, ctx)


async def _bwrap(ctx: ToolContext) -> tuple[str, BwrapProbe]:
    bwrap = bwrap_available(ctx.commands.bwrap_path)
    if bwrap is None:
        raise ToolFailure("permission", INSTALL_HINT)
    probe = await probe_bwrap(bwrap)
    if probe.problem:
        raise ToolFailure("permission", f"{INSTALL_HINT}; {probe.problem}")
    return bwrap, probe


@dataclass
class StagedCommand:
    """A command that ran in an overlay: what it changed, held back until `apply` or `discard` (StagedEffects)."""

    stage: Stage | CopyStage
    found: Effects
    ctx: ToolContext
    job: _Job
    exit_code: int
    output: str

    async def preview(self) -> dict[str, Any]:
        jail = self.ctx.jail
        return await asyncio.to_thread(effects_preview, self.found, jail, command=self.job.command,
                                       cwd=jail.relative(self.job.cwd), exit_code=self.exit_code, output=self.output)

    async def apply(self) -> str:
        applied = await asyncio.to_thread(apply, self.found, self.ctx.jail, self.ctx.undo.before_changes)
        return self.output + applied.note(self.found)

    async def discard(self) -> None:
        await asyncio.to_thread(self.stage.discard)


async def _run_staged(job: _Job, ctx: ToolContext) -> StagedCommand:
    """Run in an overlay and assess what it did (tools/sandbox/effects.py); the stage is the caller's once returned."""
    stage, argv, env = await _stage(job, ctx)
    try:
        cap = _Cap(stage, ctx.commands.staging_max_bytes, ctx.commands.staging_max_files)
        code, out, err = await run_process(argv, str(stage.inside(job.cwd, ctx.jail.root)), env, job.timeout,
                                           ctx.max_output_bytes, over=cap.over)
        if cap.reason is None:
            cap.reason = await asyncio.to_thread(cap.over)
        if cap.reason is not None:
            raise ToolFailure("execution", f"the command changed {cap.reason}, more than a command may change at once "
                              "(the staging limit); nothing was applied to the workspace",
                              "make it change less (build into a folder outside the workspace, clean first), or "
                              "raise staging.max_bytes / staging.max_files in the user config")  # fmt: skip
        if code is None:
            partial = render(out, err, f"[stopped after {job.timeout:g} s]", ctx.max_output_bytes)
            raise ToolFailure("timeout", f"the command did not finish within {job.timeout:g} s and was stopped; "
                              f"nothing it changed was applied. Output so far:\n{partial}",
                              f"pass a larger timeout (at most {_max_timeout(ctx):g} s) or make the command do less")
        output = render(out, err, f"[exit code: {code}]", ctx.max_output_bytes)
        if ctx.secrets is not None:
            output = ctx.secrets.mask(output)
        found = await asyncio.to_thread(assess, stage, ctx.jail)
        return StagedCommand(stage, found, ctx, job, code, output)
    except BaseException:  # failed or cancelled: nothing was handed over, so the stage goes here
        await asyncio.to_thread(stage.discard)
        raise


async def _stage(job: _Job, ctx: ToolContext) -> tuple[Stage | CopyStage, list[str], dict[str, str]]:
    """The stage and the command line that runs in it: an overlay and bwrap on Linux, a clone and Seatbelt on macOS."""
    if backend_for(sys.platform) != "seatbelt":
        stage = await asyncio.to_thread(Stage.create, staging_parent(ctx))
        return stage, stage.wrap(job.argv, ctx.jail.root), job.env
    clone = await asyncio.to_thread(CopyStage.create, staging_parent(ctx), ctx.jail.root, job.entries)
    policy = seatbelt_policy(ctx.jail.root, job.entries, copy=clone.upper, tmp=clone.tmp, network=ctx.commands.network,
                             home=job.env["HOME"], user_home=os.environ.get("HOME"), ro_paths=ctx.commands.ro_paths)
    return clone, seatbelt_argv(policy) + job.argv, {**job.env, "TMPDIR": str(clone.tmp)}


class _Cap:
    """The staging limit, checked while the command runs (every WATCH_EVERY s) and once after it."""

    def __init__(self, stage: Stage | CopyStage, max_bytes: int, max_files: int) -> None:
        self.stage, self.max_bytes, self.max_files = stage, max_bytes, max_files
        self.reason: str | None = None

    def over(self) -> str | None:
        size, count = self.stage.usage()
        if size > self.max_bytes:
            self.reason = f"{size:,} bytes of files (limit {self.max_bytes:,})"
        elif count > self.max_files:
            self.reason = f"{count:,} files and folders (limit {self.max_files:,})"
        return self.reason


def _lost_note(lost: list[str]) -> str:
    if not lost:
        return ""
    return (f"\n[Sunwell: undo cannot restore {', '.join(lost[:10])}{' and more' if len(lost) > 10 else ''}: "
            "too large to copy before the command ran]")


def _planted_note(moved: list[str], folder: object) -> str:
    return f"\n[Sunwell: {words}]" if (words := _planted_words(moved, folder)) else ""


def _planted_words(moved: list[str], folder: object) -> str:
    if not moved:
        return ""
    log.info("a command created %s; moved to %s", ", ".join(moved), folder)  # the result says it; stderr stays clean
    return (f"the command created {', '.join(moved)}, which commands may not create (configuration the host runs: "
            f".git, .sunwell, .vscode, *.code-workspace, .env files, keys). It was moved out of the workspace to "
            f"{folder}; ask the user to create such files themselves if they are needed.")


def _seconds(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None  # type: ignore[arg-type]


def _max_timeout(ctx: ToolContext) -> float:
    return min(_seconds(ctx.commands.max_timeout) or DEFAULT_MAX_TIMEOUT, TIMEOUT_CEILING)


def _timeout(value: object, ctx: ToolContext) -> float:
    seconds = DEFAULT_TIMEOUT if value is None else _seconds(value)
    if seconds is None:
        raise ToolFailure("validation", f"parameter 'timeout' must be a number of seconds > 0, got {value!r}")
    return min(seconds, _max_timeout(ctx))


class RunCommandArguments(ToolArguments):
    command: str = Field(description="The bash command line to run.")
    cwd: str = Field(".", description="Folder relative to the workspace root")
    timeout: float = Field(30, gt=0, description="Seconds")
    background: bool = Field(False, description="Keep it running (a server, a watcher) and return at once")
    wait_for: str | None = Field(None, description="With background: a regex; return once an output line matches")

    @field_validator("wait_for")
    @classmethod
    def _a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            if not value:
                raise ValueError('a regular expression, e.g. "ready on|listening"')
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    def subject(self) -> Subject:
        # a background process is asked before it starts: it has no end at which to review what it changed
        return Subject(command=Command(self.command, self.cwd), staged=not self.background)


def command_preview(args: RunCommandArguments, ctx: ToolContext) -> dict[str, Any]:
    """What an approval shows: the exact command and its jailed working directory, and that it keeps running."""
    cwd = ctx.jail.resolve(args.cwd or ".")
    return {"kind": "command", "command": args.command, "cwd": ctx.jail.relative(cwd),
            **({"background": True} if args.background else {})}


RUN_COMMAND = Tool.of(
    RunCommandArguments, run_command,
    name="run_command",
    description=(
        "Run a shell command (bash) in the workspace and get its output and exit code. Use it to run tests, "
        'builds and linters. `cwd` is the folder to run in, relative to the workspace root (default "."). '
        "`timeout` is in seconds (default 30). The command gets no input, cannot see secrets (.env files, keys), "
        ".git, node_modules or files outside the workspace, and has no network unless the user allowed it. "
        "A non-zero exit code is reported in the result, it is not an error. "
        'Example: {"command": "pytest -q tests/test_app.py", "timeout": 120}. '
        "For a server or a watcher that keeps running, pass `background: true` (with `wait_for`, a regex for the "
        "line that says it is ready, e.g. \"Serving|listening\"): it returns its process id and first output; "
        "then use process_output, process_stop and process_list, and web_fetch http://127.0.0.1:PORT for its own "
        "ports. A background process sees the workspace read-only."
    ),
    preview=command_preview,
    stage=stage_command,
    cut_off=command_cut_off,
    min_trust=Trust.shell,
    approval="ask",
    risk="shell",
    read_only=False,
    timeout=TIMEOUT_CEILING + 2 * KILL_GRACE + DRAIN_GRACE + 10,  # the handler enforces its own limit
)
