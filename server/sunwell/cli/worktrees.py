"""`sunwell worktrees list | diff NAME | merge NAME [--into BRANCH] | drop NAME`: the worktree sessions of the
repository the workspace is in (agent/worktree_sessions.py), and `sunwell run --worktree`'s part: which worktree a
run goes to and where its session works."""

from __future__ import annotations

import argparse
import json
import sys

from sunwell.agent.worktree_sessions import WorktreeSessions
from sunwell.cli.exit_codes import EXIT_ERROR
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible
from sunwell.errors import SetupError


def cmd_worktrees(args: argparse.Namespace) -> int:
    workspace, settings = settings_for(args)
    try:
        sessions = WorktreeSessions(settings, workspace)
        return _command(sessions, args)
    except SetupError as exc:  # not git, an unknown name, a conflict, uncommitted changes: one line, nothing lost
        print(f"sunwell: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR


def _command(sessions: WorktreeSessions, args: argparse.Namespace) -> int:
    match args.worktrees_command:
        case "list":
            rows = sessions.rows()
            if args.json:
                for row in rows:
                    print(json.dumps(row.wire()))
            elif not rows:
                print("no worktree sessions (start one with `sunwell run --worktree NAME PROMPT`)")
            for row in [] if args.json else rows:
                print(f"{row.name}\t{row.state}\t{row.branch}\t(from {row.base})\t{row.path}")
        case "diff":
            sys.stdout.write(sessions.diff(args.name))
        case "merge":
            merged = sessions.merge(args.name, args.into)
            print(f"merged sunwell/{args.name} into {merged.into}: {merged.how} ({merged.commit[:12]})")
        case "drop":
            row = sessions.drop(args.name, force=args.force)
            print(f"dropped worktree {row.name}: {row.path} and branch {row.branch} removed")
    return 0
