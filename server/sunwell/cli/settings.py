"""The workspace and settings a command runs with: `--workspace` (default: the current directory), the config files
(the user's, then the workspace's, which may only narrow), then the flags. Light on purpose: `sunwell sessions list`
and its kind import this and the config, not the tools (cli/options.py says what the flags of a turn mean)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sunwell.config import Settings, load_settings


def settings_for(args: argparse.Namespace, **flags) -> tuple[Path, Settings]:
    """(workspace, settings): `--workspace` (default: the current directory), its config files, then `flags`."""
    workspace = (args.workspace or Path.cwd()).absolute()
    return workspace, load_settings(workspace if workspace.is_dir() else None, flags)
