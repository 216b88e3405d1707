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

from sunwell.agent.api_catalog import ApiCatalog, LearnFailed
from sunwell.agent.engine import Engine
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible
from sunwell.config import user_config_path
from sunwell.errors import SetupError
from sunwell.hidden_text import removed_message


def cmd_tools(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(args)
    try:  # the engine's learned APIs and network rules: what is learned here is what its turns offer
        apis = Engine(settings, workspace).apis
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    if args.tools_command == "list":
        return _list(apis, args.json)
    if args.tools_command == "forget":
        if not apis.forget(args.name):
            print(f"sunwell: no learned API {visible(args.name)} (see `sunwell tools list`)", file=sys.stderr)
            return EXIT_ERROR
        print(f"forgot {visible(args.name)}: its tools and credentials")
        return EXIT_OK
    return asyncio.run(_learn(args, apis))


async def _learn(args: argparse.Namespace, apis: ApiCatalog) -> int:
    tags = [tag.strip() for tag in args.tags.split(",") if tag.strip()] if args.tags else None
    try:
        learned = await apis.learn(args.source, args.name, tags, args.rate)
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    except LearnFailed as failure:
        print(f"sunwell: {visible(failure.message)}", file=sys.stderr)
        if failure.suggestion:
            print(f"  {visible(failure.suggestion)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        source = args.source if "://" in args.source else str(Path(args.source).resolve())
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
    api = learned.api
    offered = api.offered()
    print(visible(f"{api.title} {api.version}".strip() + f" as {api.name}: {len(offered)} tools"
                  + (f" of {len(api.operations)} operations (tags {', '.join(api.tags)})" if api.tags else "")))
    print(visible(f"  calls: {', '.join(api.hosts)}"))
    for op in offered:
        print(visible(f"  {op.tool}  {op.method} {op.path}" + (f"  {op.summary}" if op.summary else "")))
    if api.hidden:
        print(visible("  warning: " + removed_message(f"the document of {api.name}", api.hidden)))
    if learned.changes is not None:
        shown = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in learned.changes.items() if names)
        print(visible(f"  changed since last time: {shown or 'nothing'}"))
    if not apis.keep(api):
        print(f"  (not written to {user_config_path()}: its learned_apis is not a block of one-line entries; the API "
              "is learned all the same)")
    _ask_credentials(api, apis)
    return EXIT_OK


def _ask_credentials(api, apis: ApiCatalog) -> None:
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
            where = apis.set_credential(api.name, scheme.name, value)
            print(visible(f"  {scheme.name}: kept in {where}"))
        else:
            print(visible(f"  {scheme.name}: skipped (calls that need it will say so)"))


def _list(apis: ApiCatalog, as_json: bool) -> int:
    learned = apis.apis()
    if not learned and not as_json:
        print("no learned APIs (sunwell tools learn SOURCE --name NAME; see the README, \"Learned APIs\")")
    for api in learned:
        summary = api.summary()
        summary["credentials"] = {scheme: apis.has_credential(api.name, scheme) for scheme in summary["schemes"]}
        if as_json:
            print(json.dumps(summary, ensure_ascii=False))
            continue
        given = ", ".join(f"{name} {'set' if ok else 'missing'}" for name, ok in summary["credentials"].items())
        print(visible(f"{api.name}  {api.title} · {summary['offered']} tools of {summary['operations']} · "
                      f"{', '.join(api.hosts)} · {api.rate_per_min}/min" + (f" · {given}" if given else "")))
        print(visible(f"  from {api.source} · learned {api.learned_at}"))
    return EXIT_OK
