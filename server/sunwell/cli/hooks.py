"""`sunwell hooks list [--json]` and `sunwell hooks approve N... [--yes]`: every hook, numbered, where it comes from
and whether it may run; approving the workspace's proposals by number (README "Hooks")."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sunwell.cli.exit_codes import EXIT_OK, UsageError
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible
from sunwell.hooks import hook_entries
from sunwell.hooks.catalog import approve


def cmd_hooks(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(args)
    entries = hook_entries(settings, workspace)
    if args.hooks_command == "approve":
        return _approve(entries, args.numbers, args.yes, workspace, Path(settings.data_dir or "."))
    if not entries and not args.json:
        print("no hooks configured (hooks: in your user config; see the README, \"Hooks\")")
    for entry in entries:
        if args.json:
            print(json.dumps(entry.wire()))
            continue
        state = ("runs as you" if entry.source == "user" else
                 "approved, runs sandboxed" if entry.approved else "not approved: it does not run")
        print(visible(f"{entry.number}  {entry.event}  match {entry.config.match}  timeout {entry.config.timeout:g} s"
                      f"\n   {entry.line}\n   from the {entry.source} config · {state}"))
        if not entry.approved:
            print(f"   approve it with: sunwell hooks approve {entry.number}")
    return EXIT_OK


def _approve(entries, numbers: list[int], yes: bool, workspace: Path, data_dir: Path) -> int:
    by_number = {entry.number: entry for entry in entries}
    chosen = []
    for number in numbers:
        entry = by_number.get(number)
        if entry is None or entry.source != "workspace":
            proposed = [str(e.number) for e in entries if e.source == "workspace"]
            raise UsageError(f"no hook {number} proposed by the workspace config (its proposals: "
                             f"{', '.join(proposed) or 'none'}; see `sunwell hooks list`)")
        chosen.append(entry)
    for entry in chosen:
        print(visible(f"{entry.number}  {entry.event} hook for {entry.config.match}: {entry.line}\n"
                      f"   in {workspace}, sandboxed (the workspace read-only, no network)"))
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("pass --yes to approve without a terminal")
        if input(f"Approve {'it' if len(chosen) == 1 else 'them'}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("not approved")
            return EXIT_OK
    for entry in chosen:
        if not entry.approved:
            approve(entry, workspace, data_dir)
    print("approved: a change to the command (or a script it names in the workspace) asks again")
    return EXIT_OK
