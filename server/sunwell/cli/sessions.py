"""`sunwell sessions list | show ID | export ID`: the stored sessions, read from the session store alone (no engine:
a listing piped to `head` is not kept waiting); `--json`: a JSON object per session, or the shown session as one.
Every line may quote a model, so it is printed through `visible`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.agent.sessions import EventRow, SessionNotFound, SessionStore
from sunwell.agent.usage import session_usage, usage_line
from sunwell.cli.exit_codes import EXIT_OK, UsageError
from sunwell.cli.settings import settings_for
from sunwell.cli.visible import visible

if TYPE_CHECKING:
    from sunwell.config import Price


def cmd_sessions(args: argparse.Namespace) -> int:
    _, settings = settings_for(args)
    store = SessionStore(Path(settings.data_dir) / "sessions.db")
    if args.action == "list":
        for info in store.list():
            ended = "" if info.status in (None, "completed") else f"[{info.status}]  "  # `run --resume` takes it up
            if args.json:
                _print(json.dumps({"id": info.id, "title": info.title, "updatedAt": info.updated_at,
                                   "turns": info.turns, "status": info.status}, ensure_ascii=False))
                continue
            print(visible(f"{info.id}  {_when(info.updated_at)}  {info.turns:>3} turn(s)  {ended}{info.title or ''}"))
        return EXIT_OK
    if not args.id:
        raise UsageError(f"sessions {args.action} needs a session id")
    try:
        if args.action == "export":
            text = json.dumps(store.export(args.id), ensure_ascii=False, indent=2)
            _print(text)
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
        _print(json.dumps({"session": session, "events": events, "usage": usage.wire()}, ensure_ascii=False))
        return
    for row in rows:  # summaries of model text: tool names, errors, answers
        print(visible(f"{row.turn} {row.seq:>3} {row.kind:<12} {row.content}"))
    if usage.turns:
        print(f"usage: {usage_line(usage)}")


def _print(text: str) -> None:
    """JSON escapes C0 controls but not C1 or bidi ones; `visible` writes those as \\uXXXX, still JSON. Piped, the
    text is data and stays exact."""
    print(visible(text) if sys.stdout.isatty() else text)


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))
