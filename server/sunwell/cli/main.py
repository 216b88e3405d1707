"""`sunwell`: the arguments, which module runs each command, and how a failure becomes an exit code.

The one place the CLI imports inside functions. `main` imports a command's module only once its arguments are
parsed (cli/arguments.py declares them all without importing one), so `--help`, `--version` and a usage error load
argparse and nothing else, and each command loads what it uses: `sessions list` is not kept waiting by the engine,
`version` by the MCP SDK. `sunwell serve` is the sidecar the editor starts and waits for: it imports pygls and none
of the commands' modules, and the other commands never import pygls.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable

from sunwell.cli.arguments import build_parser
from sunwell.clipping import MESSAGE_LIMIT, clip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:  # its options belong to the sidecar's own parser
        gc.disable()  # until the sidecar's first engine is built (lsp/process.py `end_of_start`)
        from sunwell.lsp.server import main as serve  # pygls: only the sidecar

        return serve([arg for arg in argv[1:] if arg != "--stdio"])  # clients may add --stdio: the default
    args = build_parser().parse_args(argv)  # `--help` and a usage error stop here
    try:
        code = _run(args)
        sys.stdout.flush()  # here, where a reader that left can still be told apart from a failure
        return code
    except BrokenPipeError:
        # the reader closed the pipe (`| head -1`): its choice, not an error. Python would flush stdout again at exit
        # and fail the same way, so stdout points at /dev/null from now on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace) -> int:
    import logging

    from sunwell.agent.logs import MaskedLogRecords
    from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_USAGE, UsageError
    from sunwell.cli.visible import visible
    from sunwell.errors import ConfigError

    command = _command(args.command)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(MaskedLogRecords())
    try:
        return command(args)
    except BrokenPipeError:
        raise
    except (UsageError, ConfigError) as exc:
        print(f"sunwell: {visible(clip(str(exc), MESSAGE_LIMIT))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        print(f"sunwell: {visible(clip(str(exc), MESSAGE_LIMIT))}", file=sys.stderr)
        return EXIT_ERROR


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs command `name`, its module imported now (and no other command's)."""
    match name:
        case "run" | "apply":
            from sunwell.cli.run import cmd_run
            return cmd_run
        case "chat":
            from sunwell.cli.chat import cmd_chat
            return cmd_chat
        case "sessions":
            from sunwell.cli.sessions import cmd_sessions
            return cmd_sessions
        case "version":
            from sunwell.cli.version import cmd_version
            return cmd_version
        case "tools":
            from sunwell.cli.learned import cmd_tools
            return cmd_tools
        case "worktrees":
            from sunwell.cli.worktrees import cmd_worktrees
            return cmd_worktrees
        case "hooks":
            from sunwell.cli.hooks import cmd_hooks
            return cmd_hooks
    from sunwell.cli import views

    return {"models": views.cmd_models, "undo": views.cmd_undo, "audit": views.cmd_audit, "lens": views.cmd_lens,
            "mcp": views.cmd_mcp}[name]
