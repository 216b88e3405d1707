"""The event side of one turn: ids, `seq` without gaps, the session log, and the front end's sink."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from sunwell.agent.sessions import SessionStore
from sunwell.wire.events import Event
from sunwell.wire.messages import Message

Sink = Callable[[Event], None]

# Deltas are folded into the assistant message row; logging each one would only slow the stream down.
_NOT_LOGGED = {"text", "thinking", "toolCallStart", "toolCallDelta"}


def new_turn_id() -> str:
    return "t_" + secrets.token_hex(6)


class TurnLog:
    def __init__(self, store: SessionStore, session: str, sink: Sink, turn: str | None = None,
                 secrets: Any = None, seq: int = 0) -> None:  # fmt: skip
        self.store, self.session, self.sink = store, session, sink
        self.turn = turn or new_turn_id()
        self.seq = seq
        """The next event's: 0, or where the log of a resumed turn ends."""
        self.secrets = secrets
        """A sunwell.tools.policy.environment.EnvSecrets: no event carries a value of Sunwell's environment."""
        self.done = False
        """Its `done` went out: nothing more may follow (a background process's event goes elsewhere then)."""
        self.nested_calls = 0
        self.nested_usage: Any = None
        """The tool calls and tokens of the turn's sub-agents (agent/subagent.py): its `done` counts them too."""

    def emit(self, event: Event) -> Event:
        # Written into the model's __dict__ (pydantic keeps fields there): its __setattr__ would cost more than the
        # rest of a text delta's way to the client, and these values need no validation.
        fields = event.__dict__
        if self.secrets is not None:
            for name, value in fields.items():
                if isinstance(value, str | dict | list) and (masked := self.secrets.mask(value)) is not value:
                    fields[name] = masked
        fields.update(session=self.session, turn=self.turn, seq=self.seq)
        self.seq += 1
        if event.type not in _NOT_LOGGED:
            self.store.append(self.session, self.turn, event.seq, event.type, _summary(event), event.wire())
        self.sink(event)
        self.done = self.done or event.type == "done"
        return event

    def record(self, message: Message) -> None:
        self.store.append_message(self.session, self.turn, self.seq, message)

    def step(self, call_id: str, phase: str) -> None:
        """A call is about to `run` (what it does may reach the workspace or the world) or to run `staged` (nothing
        leaves the staging copy before its review): what a resumed turn reads to know what a dead process was doing."""
        self.store.append(self.session, self.turn, self.seq, "step", f"{phase} {call_id}",
                          {"callId": call_id, "phase": phase})


def _summary(event: Any) -> str:
    match event.type:
        case "toolCall":
            return f"{event.name}({format_arguments(event.arguments)})"
        case "toolResult":
            return f"{'ok' if event.ok else 'error'} {event.name}" + ("" if event.ok else f": {event.error.message}")
        case "approval":
            return f"{event.decision} by {event.by}"
        case "notice":
            return f"{event.level}: {event.message}"
        case "done":
            return event.status + (f": {event.error}" if event.error else "")
        case "commandOutput":
            return event.command
        case _:
            return event.type


def format_arguments(arguments: dict[str, Any], width: int = 60) -> str:
    """`path="src/app.py", limit=20` — how a call reads in a transcript."""
    parts = []
    for key, value in arguments.items():
        text = json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={text if len(text) <= width else text[: width - 1] + '…'}")
    return ", ".join(parts)
