"""`sunwell tools learn SOURCE --name NAME`, `sunwell tools list [--json]`, `sunwell tools forget NAME`.

Learning here is the user's own decision: what was learned is printed (operations, hosts, and what changed when
re-learning) and stored, no question asked. The document's credentials are asked at the terminal, or read from
stdin when it is not one, one line per security scheme in the document's order (an empty line skips one).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from pathlib import Path

from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible
from sunwell.config import user_config_path
from sunwell.config.learned_entries import drop, remember
from sunwell.hidden_text import removed_message
from sunwell.tools.base import ToolFailure
from sunwell.tools.learned.learning import changes, check_name, learn, read_source
from sunwell.tools.learned.registry import LearnedApis
from sunwell.tools.learned.store import DEFAULT_RATE
from sunwell.tools.network.cache import PageCache
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.network.policy import network_for


def cmd_tools(args: argparse.Namespace) -> int:
    _, settings = settings_for(args)
    learned = LearnedApis(Path(settings.data_dir or "."))
    if args.tools_command == "list":
        return _list(learned, args.json)
    if args.tools_command == "forget":
        if not learned.forget(args.name):
            print(f"sunwell: no learned API {visible(args.name)} (see `sunwell tools list`)", file=sys.stderr)
            return EXIT_ERROR
        drop(user_config_path(), args.name)
        print(f"forgot {visible(args.name)}: its tools and credentials")
        return EXIT_OK
    return asyncio.run(_learn(args, settings, learned))


async def _learn(args: argparse.Namespace, settings, learned) -> int:
    try:
        check_name(args.name, set(settings.mcp_servers))
        rules = HostRules(settings.network.allow, settings.network.deny)
    except (ToolFailure, ValueError) as exc:
        raise UsageError(str(exc)) from None
    network = network_for(settings, rules, set, PageCache())
    previous = learned.store.get(args.name)
    entry = settings.learned_apis.get(args.name)
    rate = args.rate or (entry.rate_per_min if entry else previous.rate_per_min if previous else DEFAULT_RATE)
    source = args.source if "://" in args.source else str(Path(args.source).resolve())  # no `..` in what is kept
    tags = [tag.strip() for tag in args.tags.split(",") if tag.strip()] if args.tags else None
    try:
        text, origin = await read_source(source, network, lambda path: Path(path).read_text(encoding="utf-8"))
        api = await learn(text, args.name, source, origin, network, tags, rate)
    except ToolFailure as failure:
        print(f"sunwell: {visible(failure.error.message)}", file=sys.stderr)
        if failure.error.suggestion:
            print(f"  {visible(failure.error.suggestion)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
    offered = api.offered()
    print(visible(f"{api.title} {api.version}".strip() + f" as {api.name}: {len(offered)} tools"
                  + (f" of {len(api.operations)} operations (tags {', '.join(api.tags)})" if api.tags else "")))
    print(visible(f"  calls: {', '.join(api.hosts)}"))
    for op in offered:
        print(visible(f"  {op.tool}  {op.method} {op.path}" + (f"  {op.summary}" if op.summary else "")))
    if api.hidden:
        print(visible("  warning: " + removed_message(f"the document of {api.name}", api.hidden)))
    if previous is not None:
        found = changes(previous, api)
        shown = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in found.items() if names)
        print(visible(f"  changed since last time: {shown or 'nothing'}"))
    learned.save(api)
    _remember(api)
    _ask_credentials(api, learned)
    return EXIT_OK


def _remember(api) -> None:
    path = user_config_path()
    if not remember(path, api.name, api.source, api.rate_per_min):
        print(f"  (not written to {path}: its learned_apis is not a block of one-line entries; the API is learned "
              "all the same)")


def _ask_credentials(api, learned) -> None:
    used = [scheme for scheme in api.schemes
            if any(scheme.name in alternative for op in api.operations for alternative in op.security)]
    if not used:
        return
    terminal = sys.stdin.isatty()
    for scheme in used:
        what = {"apiKey": f"API key ({scheme.location} {scheme.param})", "oauth2": "client_id:client_secret"}.get(
            scheme.kind, "user:password" if scheme.location == "basic" else "token")
        prompt = f"credential {scheme.name}, {what} (empty: skip): "
        if terminal:
            value = getpass.getpass(visible(prompt))
        else:
            line = sys.stdin.readline()
            value = line.rstrip("\r\n")
        if value:
            learned.credentials.set(api.name, scheme.name, value)
            print(visible(f"  {scheme.name}: kept in {learned.credentials.where()}"))
        else:
            print(visible(f"  {scheme.name}: skipped (calls that need it will say so)"))


def _list(learned, as_json: bool) -> int:
    apis = learned.apis()
    if not apis and not as_json:
        print("no learned APIs (sunwell tools learn SOURCE --name NAME; see the README, \"Learned APIs\")")
    for api in apis:
        summary = api.summary()
        summary["credentials"] = {scheme: bool(learned.credentials.get(api.name, scheme))
                                  for scheme in summary["schemes"]}
        if as_json:
            print(json.dumps(summary, ensure_ascii=False))
            continue
        given = ", ".join(f"{name} {'set' if ok else 'missing'}" for name, ok in summary["credentials"].items())
        print(visible(f"{api.name}  {api.title} · {summary['offered']} tools of {summary['operations']} · "
                      f"{', '.join(api.hosts)} · {api.rate_per_min}/min" + (f" · {given}" if given else "")))
        print(visible(f"  from {api.source} · learned {api.learned_at}"))
    return EXIT_OK
