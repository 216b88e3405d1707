"""Running one hook: its argv (never a shell line), the call as JSON on stdin, in the workspace, under its timeout,
its output capped while it is read (tools/sandbox/process.py: its own process group, stopped whole when it ends or
times out). The user's hooks run as the user, with the user's environment; a workspace's approved hook runs in the
sandbox a workspace-proposed MCP server gets (tools/mcp/launch.py: the workspace read-only, no network, the
environment commands get), or not at all where there is none.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sunwell.config import McpServerConfig
from sunwell.hooks.catalog import HookEntry
from sunwell.tools.base import ToolFailure
from sunwell.tools.sandbox.process import run_process
from sunwell.tools.workspace.jail import Jail


@dataclass(frozen=True)
class Ran:
    code: int | None
    """The exit code; None when it did not finish (timed out) or never started."""
    stdout: str
    stderr: str
    problem: str | None
    """Why it did not run or finish (`timed out after 30 s`, `could not start: ...`), else None."""
    duration_ms: int
    timed_out: bool = False


async def run_hook(entry: HookEntry, payload: dict[str, Any], *, workspace: Path, data_dir: Path, max_bytes: int,
                   passthrough: tuple[str, ...] = (), blocked: tuple[str, ...] = ()) -> Ran:
    started = time.monotonic()
    try:
        argv, env, cwd = await _how(entry, workspace, data_dir, passthrough, blocked)
    except _CannotRun as exc:
        return Ran(None, "", "", str(exc), _ms(started))
    with tempfile.TemporaryFile() as data:
        data.write(json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        data.flush()
        data.seek(0)
        try:
            code, out, err = await run_process(argv, cwd, env, entry.config.timeout, max_bytes, stdin=data.fileno())
        except ToolFailure as failure:
            return Ran(None, "", "", failure.error.message, _ms(started))
    problem = None if code is not None else f"timed out after {entry.config.timeout:g} s (it was stopped)"
    return Ran(code, out.text(max_bytes), err.text(max_bytes), problem, _ms(started), timed_out=code is None)


class _CannotRun(Exception):
    pass


async def _how(entry: HookEntry, workspace: Path, data_dir: Path, passthrough: tuple[str, ...],
               blocked: tuple[str, ...]) -> tuple[list[str], dict[str, str], str]:
    argv = list(entry.config.command)
    if entry.source == "user":
        return argv, dict(os.environ), str(workspace)
    from sunwell.tools.mcp.launch import (  # the MCP SDK (~0.5 s): for workspace hooks only
        LaunchError,
        stdio_launch,
    )

    try:
        launch = await stdio_launch(McpServerConfig(command=argv[0], args=argv[1:]), jail=Jail(workspace, blocked),
                                    data_dir=data_dir, passthrough=passthrough)
    except LaunchError as exc:
        raise _CannotRun(f"cannot run sandboxed: {exc}") from None
    params = launch.params
    return [params.command, *params.args], dict(params.env or {}), str(params.cwd or workspace)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
