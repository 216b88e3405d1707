"""What the flags of `sunwell run`, `apply` and `chat` mean: the options, the settings they give, the tools they allow."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.cli.exit_codes import UsageError
from sunwell.config import load_settings
from sunwell.tools.registry import CORE_TOOLS
from sunwell.vocabulary import TRUST_NAMES

if TYPE_CHECKING:
    from sunwell.config import Settings


def add_turn_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that runs turns takes (PROTOCOL.md "Options of run/apply/chat"), but `--lens`."""
    parser.add_argument("--model", help="PROVIDER:MODEL")
    parser.add_argument("--workspace", type=Path, default=None, help="the jail root (default: current directory)")
    parser.add_argument("--trust", choices=TRUST_NAMES)
    tools = parser.add_mutually_exclusive_group()
    tools.add_argument("--tools", help="comma-separated tool names to allow")
    tools.add_argument("--no-tools", action="store_true", help="offer no tools")
    approve = parser.add_mutually_exclusive_group()
    approve.add_argument("--approve", choices=["ask", "auto", "deny"],
                         help="how risky calls are answered (default: ask on a terminal, else deny)")
    approve.add_argument("--yes", action="store_const", const="auto", dest="approve", help="= --approve auto")
    # `--dry-run=risky` is an option of its own: `--dry-run` taking an optional value would swallow a prompt after it
    parser.add_argument("--dry-run", "--dry-run=all", action="store_const", const=True, default=None,
                        help="show tool calls, execute none")
    parser.add_argument("--dry-run=risky", action="store_const", const="risky", dest="dry_run",
                        help="run the read-only tools (read, list, search, the plan, the time, arithmetic, kv_get); "
                             "every other call is shown, not executed")
    parser.add_argument("--max-tool-turns", type=int)
    parser.add_argument("--session", help="continue a stored session")
    parser.add_argument("--json", action="store_true", help="print the event stream as JSON lines")
    parser.add_argument("--base-url", help="endpoint of an openai-compatible server")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)


def settings_for(args: argparse.Namespace, **flags) -> tuple[Path, Settings]:
    """(workspace, settings): `--workspace` (default: the current directory), its config files, then `flags`."""
    workspace = (args.workspace or Path.cwd()).absolute()
    return workspace, load_settings(workspace if workspace.is_dir() else None, flags)


def turn_settings(args: argparse.Namespace) -> tuple[Path, Settings]:
    """`settings_for` with the flags of `add_turn_options` that are settings."""
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
    unknown = sorted(name for name in set(names) - {*(tool.name for tool in CORE_TOOLS), "learn_api"}
                     if "__" not in name)
    if unknown and not getattr(args, "lens", None):  # a lens adds its skills' names
        raise UsageError(f"unknown tool(s) in --tools: {', '.join(unknown)}")
    return names
