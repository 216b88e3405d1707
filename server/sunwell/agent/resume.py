"""Where a logged turn stands, so that a new process can take it up at its next step (docs/events.md "Durable turns").

A turn logs each step before the next one starts (agent/loop.py, agent/orchestrator.py): the settings it ran with
(a `settings` row), the user's line, each finished model reply (its assistant message), before a call runs a `step`
row (`staged`: nothing leaves the staging copy before its review; `run`: what it does may reach the workspace or the
world), each call's result as soon as it ends, and its `done`. Read back, the last turn of a session is:

- finished (`done` last, any status but `error`): nothing to resume;
- ended by a provider error (`done` with status `error`): the request that failed is sent again, nothing else;
- interrupted (no `done`): its last reply's calls without a result are answered — a call never started (or only
  staged, or waiting for its approval) is run through the gate again, so asked again; a call that was running is
  run again only when it is read-only (`Tool.harmless`), else answered `interrupted` and the user told, with what
  its tool settled of it (`Tool.cut_off`: a command's changes recorded for undo) — then the loop goes on with
  the request that comes next. A reply the crash cut mid-stream was never logged: it is asked for again, and its
  calls, already shown, get an `interrupted` result.

The resumed turn keeps its id, and its `seq` goes on from the log's. A write killed between its temp file and its
rename left the target whole (its old content) and the temp file beside it: the resumed turn removes such files of
dead writers from the folders of the files its checkpoints name (`safe_write.remove_orphans`, called by `Session.resume`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sunwell.agent.sessions import EventRow
from sunwell.errors import SetupError
from sunwell.wire.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_NOT_EVENTS = {"message", "step", "settings", "elision", "compaction", "workspace"}
"""Log rows that are not events: they share the `seq` of the event that follows them."""


class NothingToResume(SetupError):
    """The session's last turn ended (or it has none): there is nothing to take up."""


@dataclass
class ResumePoint:
    session: str
    turn: str
    request: str
    """The user's line as the model read it (a small model's last request quotes it)."""
    next_seq: int
    tool_calls: int
    """Calls the turn made so far (`done.toolCalls` counts them all)."""
    rounds: int
    """Replies the turn logged: the loop's round goes on from there."""
    open_calls: list[ToolCall] = field(default_factory=list)
    """The last reply's calls, when some have no result yet; else empty."""
    phases: dict[str, str] = field(default_factory=dict)
    """Call id -> the last step logged for it (`staged`, `run`)."""
    broken: list[tuple[str, str]] = field(default_factory=list)
    """(call id, name) of calls shown from a reply the process died streaming: never recorded, never run."""
    answered: bool = False
    """The last reply had no calls: the turn had its answer and only its `done` is missing."""
    failed: bool = False
    """The turn ended in a provider error."""
    settings: dict[str, Any] = field(default_factory=dict)
    """What the turn ran with: model, trust, lens, tools, instructions (empty for a turn logged before them)."""


def resume_point(session: str, rows: Sequence[EventRow]) -> ResumePoint:
    """Where the last turn of `session` (its log `rows`) stands; NothingToResume when it ended."""
    last = next((row.turn for row in reversed(rows) if row.turn), None)
    turn = [row for row in rows if row.turn == last] if last else []
    line = next((m for m in _messages(turn) if isinstance(m, UserMessage)), None)
    if last is None or line is None:
        raise NothingToResume(f"session {session} has no turn to resume")
    if turn[-1].kind == "done" and (status := (turn[-1].data or {}).get("status")) != "error":
        raise NothingToResume(f"the last turn of session {session} ended ({status}): nothing to resume; "
                              "send a new line to go on")
    replies = [m for m in _messages(turn) if isinstance(m, AssistantMessage)]
    answered = {row.data.get("call_id") for row in turn if row.kind == "message" and row.data
                and row.data.get("role") == "tool_result"}
    results = answered | {row.data.get("callId") for row in turn if row.kind == "toolResult" and row.data}
    recorded = {call.id for reply in replies for call in reply.tool_calls}
    point = ResumePoint(
        session=session, turn=last, request=line.content_for_model(),
        next_seq=max(row.seq + (row.kind not in _NOT_EVENTS) for row in turn),
        tool_calls=sum(row.kind == "toolCall" for row in turn), rounds=len(replies),
        phases={row.data["callId"]: row.data["phase"] for row in turn if row.kind == "step" and row.data},
        broken=[(row.data["callId"], row.data.get("name", "")) for row in turn if row.kind == "toolCall" and row.data
                and row.data.get("callId") not in recorded | results],
        failed=turn[-1].kind == "done", settings=next((row.data for row in turn if row.kind == "settings"), {}))
    messages = _messages(turn)
    at = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    if at >= 0 and all(isinstance(m, ToolResultMessage) for m in messages[at + 1:]):
        calls = messages[at].tool_calls  # the last reply, followed by none, some or all of its calls' results
        point.open_calls = calls if any(call.id not in answered for call in calls) else []
        point.answered = not calls
    return point


def _messages(rows: Sequence[EventRow]) -> list[Message]:
    out = []
    for row in rows:
        if row.kind == "message":
            try:
                out.append(_MESSAGE.validate_python(row.data))
            except ValidationError:  # a row of a newer Sunwell: the history read by the turn skips it too
                continue
    return out
