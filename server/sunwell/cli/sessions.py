"""`sunwell sessions list | show ID | export ID`: the stored sessions, read from the session store alone (no engine:
a listing piped to `head` is not kept waiting). Every line may quote a model, so it is printed through `visible`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sunwell.agent.sessions import SessionNotFound, SessionStore
from sunwell.cli.exit_codes import EXIT_OK, UsageError
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible


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
            for row in store.events(args.id):  # summaries of model text: tool names, errors, answers
                print(visible(f"{row.turn} {row.seq:>3} {row.kind:<12} {row.content}"))
    except SessionNotFound as exc:
        raise UsageError(exc.args[0]) from None
    return EXIT_OK


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))
