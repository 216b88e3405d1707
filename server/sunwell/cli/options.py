"""What the flags of `sunwell run`, `apply` and `chat` mean (cli/arguments.py declares them): the settings they give,
the tools they allow."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.agent.tool_names import core_tool_names
from sunwell.cli.exit_codes import UsageError
from sunwell.cli.settings import settings_for

if TYPE_CHECKING:
    from sunwell.config import Settings


def turn_settings(args: argparse.Namespace) -> tuple[Path, Settings]:
    """`settings_for` with the flags of `arguments.add_turn_options` that are settings."""
    return settings_for(args, model=args.model, trust=args.trust, base_url=args.base_url,
                        max_tool_turns=args.max_tool_turns, approval=args.approve, dry_run=args.dry_run)


def tool_names(args: argparse.Namespace) -> list[str] | None:
    """`--tools` / `--no-tools`: the names to allow, [] for none, None for all the trust level and lens allow."""
    if args.no_tools:
        return []
    if args.tools is None:
        return None
    names = [name.strip() for name in args.tools.split(",") if name.strip()]
    # SERVER__TOOL and API__OPERATION (MCP and learned tools) are known only once listed: the turn checks them
    unknown = sorted(name for name in set(names) - {*core_tool_names(), "learn_api"}
                     if "__" not in name)
    if unknown and not getattr(args, "lens", None):  # a lens adds its skills' names
        raise UsageError(f"unknown tool(s) in --tools: {', '.join(unknown)}")
    return names
