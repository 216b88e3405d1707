"""The `sunwell` command: the engine headless (`run`), and the views on its state (`sessions`, `models`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

from sunwell.config import ConfigError, load_settings
from sunwell.errors import SunwellError
from sunwell.terminal_text import visible
from sunwell.vocabulary import TRUST_NAMES

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT, EXIT_CANCELLED = 0, 1, 2, 3, 130
STATUS_EXIT = {"completed": EXIT_OK, "error": EXIT_ERROR, "limitReached": EXIT_LIMIT, "cancelled": EXIT_CANCELLED}


class UsageError(SunwellError):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sunwell", description="An agentic chat for your workspace.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="one turn, headless")
    apply = sub.add_parser("apply", help="one turn with a lens: sunwell apply LENS PROMPT")
    apply.add_argument("lens", help="lens name or path")
    apply.add_argument("prompt", nargs="?", help="the user line (else read from stdin)")
    run.add_argument("prompt", nargs="?", help="the user line (else read from stdin)")
    run.add_argument("--lens", help="activate a lens (name or path)")
    _turn_options(run)
    _turn_options(apply)
    sessions = sub.add_parser("sessions", help="stored sessions")
    sessions.add_argument("action", choices=["list", "show", "export"])
    sessions.add_argument("id", nargs="?")
    sessions.add_argument("--workspace", type=Path, default=None)
    _more_commands(sub)
    return parser


def _turn_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--model", help="PROVIDER:MODEL")
    run.add_argument("--workspace", type=Path, default=None, help="the jail root (default: current directory)")
    run.add_argument("--trust", choices=TRUST_NAMES)
    tools = run.add_mutually_exclusive_group()
    tools.add_argument("--tools", help="comma-separated tool names to allow")
    tools.add_argument("--no-tools", action="store_true", help="offer no tools")
    approve = run.add_mutually_exclusive_group()
    approve.add_argument("--approve", choices=["ask", "auto", "deny"],
                         help="how risky calls are answered (default: ask on a terminal, else deny)")
    approve.add_argument("--yes", action="store_const", const="auto", dest="approve", help="= --approve auto")
    run.add_argument("--dry-run", action="store_true", default=None, help="show tool calls, execute none")
    run.add_argument("--max-tool-turns", type=int)
    run.add_argument("--session", help="continue a stored session")
    run.add_argument("--json", action="store_true", help="print the event stream as JSON lines")
    run.add_argument("--base-url", help="endpoint of an openai-compatible server")
    run.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)


def _more_commands(sub) -> None:
    from sunwell import chat_repl

    chat = sub.add_parser("chat", help="interactive chat: ::commands, streaming, approvals at the prompt")
    chat_repl.add_arguments(chat)
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

    models = sub.add_parser("models", help="parsed spec and capabilities of model ids")
    models.add_argument("ids", nargs="*")
    models.add_argument("--json", action="store_true", help="one JSON object per model")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:  # its options belong to the sidecar's own parser
        from sunwell.lsp.server import main as serve

        return serve([arg for arg in argv[1:] if arg != "--stdio"])  # clients may add --stdio: the default
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        commands = {"run": cmd_run, "apply": cmd_run, "sessions": cmd_sessions, "models": cmd_models, "undo": cmd_undo,
                    "audit": cmd_audit, "lens": cmd_lens, "chat": cmd_chat}
        return commands[args.command](args)
    except (UsageError, ConfigError) as exc:
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR


def _settings(args: argparse.Namespace, **flags):
    workspace = (args.workspace or Path.cwd()).absolute()
    return workspace, load_settings(workspace if workspace.is_dir() else None, flags)


def cmd_run(args: argparse.Namespace) -> int:
    from sunwell.agent.engine import Engine, SetupError
    from sunwell.agent.sessions import SessionStoreError
    from sunwell.prompt_approval import TerminalAsker
    from sunwell.transcript import JsonLines, Transcript

    workspace, settings = _settings(args, model=args.model, trust=args.trust, base_url=args.base_url,
                                    max_tool_turns=args.max_tool_turns, approval=args.approve,
                                    dry_run=args.dry_run)
    prompt = args.prompt if args.prompt is not None else _read_stdin()
    if not prompt or not prompt.strip():
        raise UsageError("no prompt: pass it as an argument or on stdin")
    tool_names = _tool_names(args)
    sink = JsonLines() if args.json else Transcript(color=sys.stdout.isatty())
    if settings.approval is None:
        settings.approval = "ask" if sys.stdin is not None and sys.stdin.isatty() else "deny"
    # answers are read from stdin, so there is no one to ask when the prompt itself came from there
    can_ask = settings.approval == "ask" and args.prompt is not None and sys.stdin is not None
    asker = TerminalAsker(color=sys.stderr.isatty()) if can_ask else None
    try:
        engine = Engine(settings, workspace, asker=asker)
        done = _run_cancellable(engine.run_turn(prompt, sink, session=args.session, tool_names=tool_names,
                                                lens=args.lens))
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    except SessionStoreError as exc:
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    if done.status == "error":  # the provider's message, which may quote the model
        print(f"sunwell: {visible(done.error or '')}", file=sys.stderr)
    elif done.status == "cancelled" and not args.json:
        print("sunwell: cancelled", file=sys.stderr)
    return STATUS_EXIT[done.status]


def _tool_names(args: argparse.Namespace) -> list[str] | None:
    from sunwell.tools.registry import CORE_TOOLS

    if args.no_tools:
        return []
    if args.tools is None:
        return None
    names = [name.strip() for name in args.tools.split(",") if name.strip()]
    unknown = sorted(set(names) - {tool.name for tool in CORE_TOOLS})
    if unknown and not getattr(args, "lens", None):  # a lens adds its skills' names
        raise UsageError(f"unknown tool(s) in --tools: {', '.join(unknown)}")
    return names


def _run_cancellable(coro):
    """Run a turn; Ctrl-C (or SIGTERM) cancels it cleanly and the turn still ends with its `done` event."""

    async def runner():
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        return await task

    return asyncio.run(runner())


def _read_stdin() -> str | None:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read()


def cmd_sessions(args: argparse.Namespace) -> int:
    from sunwell.agent.sessions import SessionNotFound, SessionStore

    _, settings = _settings(args)
    store = SessionStore(Path(settings.data_dir) / "sessions.db")
    if args.action == "list":
        for info in store.list():
            print(visible(f"{info.id}  {_when(info.updated_at)}  {info.turns:>3} turn(s)  {info.title or ''}"))
        return EXIT_OK
    if not args.id:
        raise UsageError(f"sessions {args.action} needs a session id")
    try:
        if args.action == "export":
            text = json.dumps(store.export(args.id), ensure_ascii=False, indent=2)
            # JSON escapes C0 controls but not C1 or bidi ones; `visible` writes those as \uXXXX, still JSON.
            # Piped, the export is data and stays exact.
            print(visible(text) if sys.stdout.isatty() else text)
        else:
            for row in store.events(args.id):  # summaries of model text: tool names, errors, answers
                print(visible(f"{row.turn} {row.seq:>3} {row.kind:<12} {row.content}"))
    except SessionNotFound as exc:
        raise UsageError(exc.args[0]) from None
    return EXIT_OK


def _when(epoch: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def cmd_chat(args: argparse.Namespace) -> int:
    from sunwell import chat_repl

    return chat_repl.main(args)


def cmd_undo(args: argparse.Namespace) -> int:
    from sunwell.agent.engine import Engine, SetupError
    from sunwell.tools.checkpoints import UndoError

    workspace, settings = _settings(args)
    try:
        result = Engine(settings, workspace).undo(args.session, force=args.force)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    except UndoError as exc:
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    if result.turn is None:
        print("nothing to undo")
    # the paths are names the model chose
    for path in result.restored:
        print(f"restored {visible(str(path))}")
    for path in result.deleted:
        print(f"deleted {visible(str(path))} (created by the turn)")
    for path in result.conflicts:
        print(f"overwrote {visible(str(path))} (it had changed since; --force)")
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    from sunwell.tools.audit import AuditLog, format_entry, parse_since

    _, settings = _settings(argparse.Namespace(workspace=None))
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for entry in AuditLog(Path(settings.data_dir)).recent(since, limit=args.limit):
        print(visible(format_entry(entry)))  # the model's calls: names and arguments
    return EXIT_OK


def cmd_lens(args: argparse.Namespace) -> int:
    from sunwell.lens.check import check_files
    from sunwell.tools.registry import CORE_TOOLS

    lines, had_error = check_files(args.files, known_tools=[tool.name for tool in CORE_TOOLS])
    for line in lines:
        print(visible(line))  # diagnostics quote the lens file, which a model may have written
    return EXIT_ERROR if had_error else EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    from sunwell.models.capabilities import describe
    from sunwell.models.spec import PROVIDERS

    _, settings = _settings(argparse.Namespace(workspace=None))
    ids = args.ids or ([settings.model] if settings.model else [])
    if not ids:
        raise UsageError("no model given: sunwell models PROVIDER:MODEL ...")
    overrides = {key: value.model_dump(exclude_none=True) for key, value in settings.models.items()}
    for model in ids:
        provider, _, bare = model.partition(":")
        if provider not in PROVIDERS or not bare:
            provider, bare = None, model
        info = describe(bare, provider, overrides)
        if args.json:
            print(json.dumps(info))
            continue
        caps = info["capabilities"]
        mode = "native" if caps["nativeTools"] else f"emulated ({caps['emulation']})"
        size = info["parsed"]["size"]
        temperature = "server default" if caps["temperature"] is None else caps["temperature"]
        print(f"{model}\n  provider {info['provider']} · family {info['parsed']['family']} "
              f"· version {info['parsed']['version'] or '-'} · size {f'{size}B' if size else '-'}"
              f"\n  tools {mode} · parallel {caps['parallelCalls']} · context {caps['contextWindow']}"
              f" · reasoning {caps['reasoning']} · small {caps['small']} · temperature {temperature}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
