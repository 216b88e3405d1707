"""`sunwell`: the arguments, which module runs each command, and how a failure becomes an exit code.

The one place the CLI imports inside functions: `sunwell serve` is the sidecar the editor starts and waits for, so
it imports pygls and none of the commands' modules (the engine, the tool registry), and the other commands never
import pygls. `main` picks the path first; the parser, then the commands' modules, follow for every other command.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from pathlib import Path

from sunwell import __version__
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_USAGE, UsageError
from sunwell.clipping import MESSAGE_LIMIT, clip
from sunwell.errors import ConfigError
from sunwell.tools.policy.audit import MaskedLogRecords


def build_parser() -> argparse.ArgumentParser:
    from sunwell.cli import learned  # the learned APIs' store: not for `serve`
    from sunwell.cli.options import add_turn_options  # the tool registry: not for `serve`

    parser = argparse.ArgumentParser(prog="sunwell", description="An agentic chat for your workspace.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--version", action="version", version=f"sunwell {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run_ = sub.add_parser("run", help="one turn, headless")
    apply = sub.add_parser("apply", help="one turn with a lens: sunwell apply LENS PROMPT")
    apply.add_argument("lens", help="lens name or path")
    apply.add_argument("prompt", nargs="?", help="the user line (else read from stdin)")
    run_.add_argument("prompt", nargs="?", help="the user line (else read from stdin)")
    run_.add_argument("--lens", help="activate a lens (name or path)")
    run_.add_argument("--resume", action="store_true",
                      help="take up the interrupted or failed last turn of --session (default: this workspace's newest)")
    run_.add_argument("--replace-turn", metavar="TURN",
                      help="send the prompt in place of TURN of --session: the conversation goes back to before it")
    add_turn_options(run_)
    add_turn_options(apply)
    sessions = sub.add_parser("sessions", help="stored sessions")
    sessions.add_argument("action", choices=["list", "show", "export"])
    sessions.add_argument("id", nargs="?")
    sessions.add_argument("--workspace", type=Path, default=None)

    chat_ = sub.add_parser("chat", help="interactive chat: ::commands, streaming, approvals at the prompt")
    chat_.add_argument("--lens", help="activate a lens (name or path); ::lens changes it")
    add_turn_options(chat_)
    serve = sub.add_parser("serve", help="the VS Code sidecar: LSP over stdio (--tcp --port N for debugging)",
                           add_help=False)
    serve.add_argument("args", nargs=argparse.REMAINDER)

    undo = sub.add_parser("undo", help="put back the files the last turn changed")
    undo.add_argument("--session", help="the session (default: the latest one in this workspace that changed files)")
    undo.add_argument("--force", action="store_true", help="also overwrite files changed since the turn")
    undo.add_argument("--workspace", type=Path, default=None)

    audit = sub.add_parser("audit", help="recent tool calls from the audit log")
    audit.add_argument("--since", help="e.g. 30m, 2h, 1d, 2026-11-22 (default: everything)")
    audit.add_argument("--limit", type=int, default=50)

    lens = sub.add_parser("lens", help="lens files")
    lens_sub = lens.add_subparsers(dest="lens_command", required=True)
    check = lens_sub.add_parser("check", help="print diagnostics; exit 1 if any error")
    check.add_argument("files", nargs="+", type=Path)

    mcp = sub.add_parser("mcp", help="MCP servers: list them and their tools, approve one a workspace proposes, "
                                      "sign in")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    mcp_list = mcp_sub.add_parser("list", help="servers, their state and tools (starts those you configured)")
    mcp_list.add_argument("--json", action="store_true", help="one JSON object per server")
    approve = mcp_sub.add_parser("approve", help="let a server the workspace config proposes start from now on")
    approve.add_argument("name")
    approve.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    login = mcp_sub.add_parser("login", help="sign in to a url server that asks for OAuth (opens your browser)")
    logout = mcp_sub.add_parser("logout", help="forget a url server's sign-in (its tokens and registration)")
    for parser_ in (login, logout):
        parser_.add_argument("name")
    for parser_ in (mcp_list, approve, login, logout):
        parser_.add_argument("--workspace", type=Path, default=None)

    learned.add_parser(sub)
    hooks = sub.add_parser("hooks", help="hooks: list them, approve those a workspace config proposes")
    hooks_sub = hooks.add_subparsers(dest="hooks_command", required=True)
    hooks_list = hooks_sub.add_parser("list", help="every hook, numbered, where it comes from, approved or not")
    hooks_list.add_argument("--json", action="store_true", help="one JSON object per hook")
    hooks_approve = hooks_sub.add_parser("approve", help="let hooks the workspace config proposes run (sandboxed)")
    hooks_approve.add_argument("numbers", nargs="+", type=int, metavar="N")
    hooks_approve.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for parser_ in (hooks_list, hooks_approve):
        parser_.add_argument("--workspace", type=Path, default=None)

    models = sub.add_parser("models", help="parsed spec and capabilities of model ids")
    models.add_argument("ids", nargs="*")
    models.add_argument("--json", action="store_true", help="one JSON object per model")
    about = sub.add_parser("version", help="versions of Sunwell, Python, the sandbox and ripgrep (for a bug report)")
    about.add_argument("--json", action="store_true", help="as one JSON object")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:  # its options belong to the sidecar's own parser
        gc.disable()  # until the sidecar's first engine is built (lsp/process.py `end_of_start`)
        from sunwell.lsp.server import main as serve  # pygls: only the sidecar

        return serve([arg for arg in argv[1:] if arg != "--stdio"])  # clients may add --stdio: the default
    args = build_parser().parse_args(argv)  # `--help` and a usage error stop here
    from sunwell.cli import (  # the engine: only once a command will run
        chat,
        hooks,
        learned,
        run,
        version,
        views,
    )
    from sunwell.cli.rendering import visible

    commands = {"run": run.cmd_run, "apply": run.cmd_run, "chat": chat.cmd_chat, "sessions": views.cmd_sessions,
                "models": views.cmd_models, "undo": views.cmd_undo, "audit": views.cmd_audit, "lens": views.cmd_lens,
                "mcp": views.cmd_mcp, "version": version.cmd_version, "tools": learned.cmd_tools,
                "hooks": hooks.cmd_hooks}
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(MaskedLogRecords())
    try:
        return commands[args.command](args)
    except (UsageError, ConfigError) as exc:
        print(f"sunwell: {visible(clip(str(exc), MESSAGE_LIMIT))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        print(f"sunwell: {visible(clip(str(exc), MESSAGE_LIMIT))}", file=sys.stderr)
        return EXIT_ERROR
