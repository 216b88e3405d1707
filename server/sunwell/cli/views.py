"""`sunwell models`, `audit`, `lens check`, `mcp` and `undo`: what the engine has stored or knows,
printed (and, for `undo`, put back; for `mcp approve`, remembered). Every line may quote a model or a server, so it
is printed through `visible`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from sunwell.agent.engine import Engine
from sunwell.agent.exports import AuditLog, UndoError, format_entry, parse_since
from sunwell.agent.model_catalog import model_catalog
from sunwell.agent.tool_names import known_tools
from sunwell.cli.client import TerminalClient
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.mcp_sign_in import cmd_sign_in
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible
from sunwell.config import ConfigError, load_settings
from sunwell.errors import SetupError
from sunwell.lens.check import check_files
from sunwell.model_strings import parse_model_string
from sunwell.vocabulary import Trust
from sunwell.wire.client import Headless


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
    lines, had_error = check_files(args.files, known_tools=known_tools(servers))
    for line in lines:
        print(visible(line))  # diagnostics quote the lens file, which a model may have written
    return EXIT_ERROR if had_error else EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(argparse.Namespace(workspace=None))
    names = args.ids or ([settings.model] if settings.model else [])
    if not names:
        raise UsageError("no model given: sunwell models PROVIDER:MODEL ...")
    engine = Engine(settings, workspace)
    if args.forget:
        for name in names:
            gone = engine.model_facts().forget(_model_key(name))
            print(f"{name}: forgot what {gone} server(s) taught" if gone else f"{name}: nothing learned to forget")
        return EXIT_OK
    try:
        catalog = model_catalog(engine, names, ask_servers=True)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    for model in catalog.models:
        learned = engine.model_facts().all_for(model.id)
        if args.json:
            print(json.dumps({"id": model.model, "provider": model.provider, "parsed": model.parsed,
                              "capabilities": model.capabilities, "window": model.window,
                              "windowSource": model.window_source, "learned": learned}))
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
        for server, facts in learned.items():
            print(f"  learned at {visible(server)}: {_learned_line(facts)}")
    return EXIT_OK


def _model_key(name: str) -> str:
    """The key what a model taught is kept under: the model string as a turn parses it."""
    try:
        return str(parse_model_string(name))
    except ValueError:
        return name


def _learned_line(facts: dict) -> str:
    parts = []
    if facts.get("toolsRejected"):
        parts.append(f"the server refused tools, so turns start emulated ({facts.get('emulation', 'json')})")
    if repairs := facts.get("repairs"):
        parts.append("repairs " + ", ".join(f"{visible(k)} ×{n}" for k, n in repairs.items()))
    when = facts.get("updatedAt", "")
    return "; ".join(parts or ["nothing yet"]) + (f" (last {when}; `--forget` clears it)" if when else "")


def cmd_mcp(args: argparse.Namespace) -> int:
    """`sunwell mcp list [--json]`, `sunwell mcp approve NAME [--yes]`, `sunwell mcp login|logout NAME`."""
    workspace, settings = settings_for(args)
    # `login` opens the browser for the person at the terminal; the others ask no one (a server that needs a
    # sign-in fails at once, saying to run `login`)
    client = TerminalClient(answering={"openUrl"}) if args.mcp_command == "login" else Headless()
    try:
        engine = Engine(settings, workspace, client=client)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    if args.mcp_command == "approve":
        return _approve_mcp(engine, args.name, args.yes)
    if args.mcp_command in ("login", "logout"):
        return cmd_sign_in(args, engine)
    rows = asyncio.run(_started_status(engine))
    if not rows and not args.json:  # --json: no line for no server
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
        return await engine.servers.start(Trust.full, lambda level, code, message: None)
    finally:
        await engine.aclose()


def _approve_mcp(engine, name: str, yes: bool) -> int:
    proposed = engine.servers.names(proposed=True)
    if name not in proposed:
        raise UsageError(f"the workspace config proposes no MCP server '{name}' (it proposes: "
                         f"{', '.join(proposed) or 'none'})")
    row = next(row for row in engine.servers.status() if row.name == name)
    line = row.launch
    print(visible(f"{name} connects to {line}" if row.transport == "http" else
                  f"{name} runs: {line}\n  in {engine.workspace}, sandboxed (the workspace read-only, no network)"))
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("pass --yes to approve without a terminal")
        if input("Approve it? [y/N] ").strip().lower() not in ("y", "yes"):
            print("not approved")
            return EXIT_OK
    engine.servers.approve(name)
    print("approved: it starts when a turn may use its tools; a change to its command asks again")
    return EXIT_OK
