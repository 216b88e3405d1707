"""`sunwell sessions`, `models`, `audit`, `lens check`, `mcp` and `undo`: what the engine has stored or knows,
printed (and, for `undo`, put back; for `mcp approve`, remembered). Every line may quote a model or a server, so it
is printed through `visible`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from sunwell.agent.engine import Engine
from sunwell.agent.model_catalog import model_catalog
from sunwell.agent.sessions import EventRow, SessionNotFound, SessionStore
from sunwell.agent.usage import session_usage, usage_line
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.mcp_sign_in import cmd_sign_in
from sunwell.cli.options import settings_for
from sunwell.cli.rendering import visible
from sunwell.config import ConfigError, Price, load_settings
from sunwell.errors import SetupError
from sunwell.lens.check import check_files
from sunwell.tools.base import Trust
from sunwell.tools.mcp.naming import server_prefix
from sunwell.tools.policy.audit import AuditLog, format_entry, parse_since
from sunwell.tools.registry import CORE_TOOLS
from sunwell.tools.workspace.checkpoints import UndoError


def cmd_sessions(args: argparse.Namespace) -> int:
    _, settings = settings_for(args)
    store = SessionStore(Path(settings.data_dir) / "sessions.db")
    if args.action == "list":
        for info in store.list():
            ended = "" if info.status in (None, "completed") else f"[{info.status}]  "  # `run --resume` takes it up
            print(visible(f"{info.id}  {_when(info.updated_at)}  {info.turns:>3} turn(s)  {ended}{info.title or ''}"))
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
            _show(store.events(args.id), args.id, settings.prices, args.json)
    except SessionNotFound as exc:
        raise UsageError(exc.args[0]) from None
    return EXIT_OK


def _show(rows: list[EventRow], session: str, prices: dict[str, Price], as_json: bool) -> None:
    """The session's log, a row a line, then its tokens and their cost at the model it last ran (`--json`: one
    object, `events` and `usage`)."""
    model = next((row.data.get("model") for row in reversed(rows) if row.kind == "settings"
                  and isinstance(row.data, dict)), None)
    usage = session_usage(rows, model, prices)
    if as_json:
        events = [{"turn": row.turn, "seq": row.seq, "kind": row.kind, "content": row.content, "data": row.data}
                  for row in rows]
        text = json.dumps({"session": session, "events": events, "usage": usage.wire()}, ensure_ascii=False)
        print(visible(text) if sys.stdout.isatty() else text)
        return
    for row in rows:  # summaries of model text: tool names, errors, answers
        print(visible(f"{row.turn} {row.seq:>3} {row.kind:<12} {row.content}"))
    if usage.turns:
        print(f"usage: {usage_line(usage)}")


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def cmd_undo(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(args)
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
    _, settings = settings_for(argparse.Namespace(workspace=None))
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for entry in AuditLog(Path(settings.data_dir)).recent(since, limit=args.limit):
        print(visible(format_entry(entry)))  # the model's calls: names and arguments
    return EXIT_OK


def cmd_lens(args: argparse.Namespace) -> int:
    try:  # the user's MCP servers: a lens may name their tools (`docs__*`)
        servers = list(load_settings(None).mcp_servers)
    except ConfigError:
        servers = []
    lines, had_error = check_files(args.files, known_tools=[*(tool.name for tool in CORE_TOOLS),
                                                             *(server_prefix(name) + "*" for name in servers)])
    for line in lines:
        print(visible(line))  # diagnostics quote the lens file, which a model may have written
    return EXIT_ERROR if had_error else EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(argparse.Namespace(workspace=None))
    names = args.ids or ([settings.model] if settings.model else [])
    if not names:
        raise UsageError("no model given: sunwell models PROVIDER:MODEL ...")
    try:
        catalog = model_catalog(Engine(settings, workspace), names, ask_servers=True)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    for model in catalog.models:
        if args.json:
            print(json.dumps({"id": model.model, "provider": model.provider, "parsed": model.parsed,
                              "capabilities": model.capabilities, "window": model.window,
                              "windowSource": model.window_source}))
            continue
        caps, parsed = model.capabilities, model.parsed
        mode = "native" if caps["nativeTools"] else f"emulated ({caps['emulation']})"
        size = parsed["size"]
        temperature = "server default" if caps["temperature"] is None else caps["temperature"]
        print(f"{model.name}\n  provider {model.provider} · family {parsed['family']} "
              f"· version {parsed['version'] or '-'} · size {f'{size}B' if size else '-'}"
              f"\n  tools {mode} · parallel {caps['parallelCalls']} · reasoning {caps['reasoning']}"
              f" · small {caps['small']} · temperature {temperature}"
              f"\n  context window {model.window:,} tokens, from {visible(model.window_source)}")
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    """`sunwell mcp list [--json]`, `sunwell mcp approve NAME [--yes]`, `sunwell mcp login|logout NAME`."""
    workspace, settings = settings_for(args)
    try:
        engine = Engine(settings, workspace)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    if args.mcp_command == "approve":
        return _approve_mcp(engine, args.name, args.yes)
    if args.mcp_command in ("login", "logout"):
        return cmd_sign_in(args, engine)
    rows = asyncio.run(_started_status(engine))
    if not rows:
        print("no MCP servers configured (mcp_servers in your user config; see the README, \"Tools from outside\")")
    for row in rows:
        if args.json:
            print(json.dumps(row.wire()))
            continue
        print(visible(f"{row.name}  {row.state}\n  {row.launch}\n  from the {row.source} config · trust "
                      f"{row.trust} · approval {row.approval} · sandbox {row.sandbox}"))
        if row.warning:
            print(f"  {row.warning}")
        if row.state == "awaiting approval":
            print(f"  approve it with: sunwell mcp approve {visible(row.name)}")
        if row.tools:
            print(visible(f"  tools: {', '.join(row.tools)}"))
    return EXIT_OK


async def _started_status(engine):
    """Start every server that may start (to list its tools), note their state, stop them."""
    try:
        await engine.mcp.start(Trust.full, None, lambda level, code, message: None)
        return engine.mcp.status()
    finally:
        await engine.aclose()


def _approve_mcp(engine, name: str, yes: bool) -> int:
    server = engine.mcp.servers.get(name)
    if server is None or not server.proposed:
        proposed = [s.name for s in engine.mcp.servers.values() if s.proposed]
        raise UsageError(f"the workspace config proposes no MCP server '{name}' (it proposes: "
                         f"{', '.join(proposed) or 'none'})")
    line = next(row.launch for row in engine.mcp.status() if row.name == name)
    print(visible(f"{name} connects to {line}" if server.config.url else
                  f"{name} runs: {line}\n  in {engine.workspace}, sandboxed (the workspace read-only, no network)"))
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("pass --yes to approve without a terminal")
        if input("Approve it? [y/N] ").strip().lower() not in ("y", "yes"):
            print("not approved")
            return EXIT_OK
    engine.mcp.approve(name)
    print("approved: it starts when a turn may use its tools; a change to its command asks again")
    return EXIT_OK
