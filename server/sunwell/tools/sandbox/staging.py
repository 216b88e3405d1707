"""Whether, and where, a command's file changes can be staged in an overlay before they reach the workspace.

Asked by the orchestrator (to choose between asking after a staged run, with its effects, and asking before) and
by run_command (to run staged or not): one answer for both, from the same cached probes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sunwell.tools.base import ToolContext
from sunwell.tools.sandbox.backend import backend_for, find_sandbox
from sunwell.tools.sandbox.bwrap import bwrap_available, probe_bwrap
from sunwell.tools.sandbox.overlay import UNSAFE_IN_OPTIONS, probe_overlay


async def staging_problem(ctx: ToolContext) -> str | None:
    """Why this context's commands cannot run staged (sandbox off, no sandbox on this platform, no bwrap, no
    unprivileged overlayfs), or None. Linux stages in an overlay, macOS in a clone of the workspace."""
    commands = ctx.commands
    if commands.sandbox == "off":
        return "the sandbox is off"
    backend = backend_for(sys.platform)
    if backend == "none":
        return sandbox_missing(ctx)
    if backend == "seatbelt":  # staged in a clone (copy_stage.py); without sandbox-exec commands are refused
        return find_sandbox().problem
    bwrap = bwrap_available(commands.bwrap_path)
    if bwrap is None:
        return "bubblewrap is not installed"
    probe = await probe_bwrap(bwrap)
    if probe.problem:
        return probe.problem
    if any(c in str(ctx.jail.root) for c in UNSAFE_IN_OPTIONS):
        return "the workspace path has a character an overlay mount cannot take (, : \\ or a quote)"
    return await probe_overlay(staging_parent(ctx), ctx.jail.root, bwrap, probe.userns_flags)


def staging_parent(ctx: ToolContext) -> Path:
    folder = ctx.commands.staging_dir
    return Path(folder) if folder is not None else Path(tempfile.gettempdir()) / "sunwell-staging"


def sandbox_missing(ctx: ToolContext) -> str | None:
    """Why commands run without any sandbox although it is not turned off (Windows has none yet), else None. On
    Linux a missing bubblewrap refuses commands instead (run_command's INSTALL_HINT)."""
    if ctx.commands.sandbox == "off" or backend_for(sys.platform) != "none":
        return None
    return find_sandbox().problem
