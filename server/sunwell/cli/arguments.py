"""Every command's arguments, declared without importing a command: `sunwell --help`, `--version` and a usage error
cost argparse and nothing else (tests/bench/bench_cli_start.py). cli/main.py imports the module of the command
that runs, once its arguments are known."""

from __future__ import annotations

import argparse
from pathlib import Path

from sunwell import __version__
from sunwell.vocabulary import TRUST_NAMES

DRY_RUN_VALUES = ("all", "risky")
DRY_RUN_CHOICES = "it takes --dry-run=all (bare --dry-run: no call runs) or --dry-run=risky (only read-only calls run)"


class Parser(argparse.ArgumentParser):
    """`--dry-run` takes its value after `=` only, since a value after a space would be the prompt: a value it does
    not know, or one after a space, is a usage error that names the values it takes."""

    takes_dry_run = False
    """Set by `add_turn_options`."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self.takes_dry_run and args is not None:
            for arg, following in zip(args, [*args[1:], None], strict=True):
                if arg == "--":
                    break
                value = arg.partition("=")[2]
                if arg.startswith("--dry-run=") and value not in DRY_RUN_VALUES:
                    self.error(f"argument --dry-run: invalid value {value!r}; {DRY_RUN_CHOICES}")
                if arg == "--dry-run" and following in DRY_RUN_VALUES:
                    self.error(f"argument --dry-run: its value goes after '=', as in --dry-run={following}; "
                               f"{DRY_RUN_CHOICES}")
        return super().parse_known_args(args, namespace)


def build_parser() -> Parser:
    parser = Parser(prog="sunwell", description="An agentic chat for your workspace.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--version", action="version", version=f"sunwell {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)  # of the same class: Parser

    run_ = sub.add_parser("run", help="one turn, headless; a ::command prompt runs that command")
    apply = sub.add_parser("apply", help="one turn with a lens: sunwell apply LENS PROMPT")
    apply.add_argument("lens", help="lens name or path")
    apply.add_argument("prompt", nargs="?", help="the user line (else read from stdin)")
    run_.add_argument("prompt", nargs="?", help="the user line (else read from stdin); ::help lists the commands")
    run_.add_argument("--lens", help="activate a lens (name or path)")
    run_.add_argument("--resume", action="store_true",
                      help="take up the interrupted or failed last turn of --session (default: this workspace's newest)")
    run_.add_argument("--image", metavar="FILE", action="append", default=[],
                      help="attach an image (PNG, JPEG, GIF or WebP) to the prompt; repeat for more")
    run_.add_argument("--replace-turn", metavar="TURN",
                      help="send the prompt in place of TURN of --session: the conversation goes back to before it")
    run_.add_argument("--worktree", metavar="NAME", nargs="?", const="",
                      help="run in a git worktree of its own on branch sunwell/NAME (made when new, continued when "
                           "not; NAME from the prompt when left out); the changes are committed there")
    run_.add_argument("--base", metavar="BRANCH",
                      help="with --worktree: the branch or commit a new worktree starts from (default: the branch "
                           "checked out)")
    add_turn_options(run_)
    add_turn_options(apply)
    sessions = sub.add_parser("sessions", help="stored sessions")
    sessions.add_argument("action", choices=["list", "show", "export"])
    sessions.add_argument("id", nargs="?")
    sessions.add_argument("--workspace", type=Path, default=None)
    sessions.add_argument("--json", action="store_true", help="a JSON object per session; show: events and usage")

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

    _add_worktrees(sub)
    _add_mcp(sub)
    _add_tools(sub)
    _add_hooks(sub)
    models = sub.add_parser("models", help="parsed spec and capabilities of model ids")
    models.add_argument("ids", nargs="*")
    models.add_argument("--json", action="store_true", help="one JSON object per model")
    models.add_argument("--forget", action="store_true",
                        help="clear what earlier sessions learned of these models (emulation format, repairs)")
    about = sub.add_parser("version", help="versions of Sunwell, Python, the sandbox and ripgrep (for a bug report)")
    about.add_argument("--json", action="store_true", help="as one JSON object")
    return parser


def _add_mcp(sub: argparse._SubParsersAction) -> None:
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


def _add_worktrees(sub: argparse._SubParsersAction) -> None:
    worktrees = sub.add_parser("worktrees", help="worktree sessions (`run --worktree`): list, diff, merge, drop")
    worktrees_sub = worktrees.add_subparsers(dest="worktrees_command", required=True)
    listing = worktrees_sub.add_parser("list", help="the worktree sessions of this repository")
    listing.add_argument("--json", action="store_true", help="one JSON object per worktree session")
    diff = worktrees_sub.add_parser("diff", help="a worktree session's branch against its base")
    merge = worktrees_sub.add_parser("merge", help="merge its branch (fast-forward or a merge commit)")
    merge.add_argument("--into", metavar="BRANCH", help="the branch to merge into (default: the one checked out)")
    drop = worktrees_sub.add_parser("drop", help="remove its worktree and branch")
    drop.add_argument("--force", action="store_true", help="even with changes not in a commit")
    for parser_ in (diff, merge, drop):
        parser_.add_argument("name", help="the worktree session, as `worktrees list` names it")
    for parser_ in (listing, diff, merge, drop):
        parser_.add_argument("--workspace", type=Path, default=None)


def _add_tools(sub: argparse._SubParsersAction) -> None:
    tools = sub.add_parser("tools", help="learned APIs: learn one from its OpenAPI document, list, forget")
    tools_sub = tools.add_subparsers(dest="tools_command", required=True)
    learn = tools_sub.add_parser("learn", help="learn an API from an OpenAPI 3.x / Swagger 2.0 URL or file")
    learn.add_argument("source", help="the document's URL or path")
    learn.add_argument("--name", required=True, help="the API's name: its tools are NAME__OPERATION")
    learn.add_argument("--tags", help="offer only the operations with these tags (comma-separated)")
    learn.add_argument("--rate", type=int, default=None, help="calls a minute at most (default 30)")
    listing = tools_sub.add_parser("list", help="the learned APIs")
    listing.add_argument("--json", action="store_true", help="one JSON object per API")
    forget = tools_sub.add_parser("forget", help="forget a learned API, its tools and its credentials")
    forget.add_argument("name")
    for parser in (learn, listing, forget):
        parser.add_argument("--workspace", type=Path, default=None)


def _add_hooks(sub: argparse._SubParsersAction) -> None:
    hooks = sub.add_parser("hooks", help="hooks: list them, approve those a workspace config proposes")
    hooks_sub = hooks.add_subparsers(dest="hooks_command", required=True)
    hooks_list = hooks_sub.add_parser("list", help="every hook, numbered, where it comes from, approved or not")
    hooks_list.add_argument("--json", action="store_true", help="one JSON object per hook")
    hooks_approve = hooks_sub.add_parser("approve", help="let hooks the workspace config proposes run (sandboxed)")
    hooks_approve.add_argument("numbers", nargs="+", type=int, metavar="N")
    hooks_approve.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for parser_ in (hooks_list, hooks_approve):
        parser_.add_argument("--workspace", type=Path, default=None)


def add_turn_options(parser: Parser) -> None:
    """The options every command that runs turns takes (docs/cli.md "sunwell run"), but `--lens`."""
    parser.takes_dry_run = True
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
