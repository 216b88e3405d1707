"""The event stream (docs/events.md): one schema for `sunwell run --json` and `sunwell/chatEvent`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from sunwell.vocabulary import NoticeCode, TurnStatus
from sunwell.wire.messages import ShortText, ToolError, Usage, WireModel
from sunwell.wire.processes import ProcessState
from sunwell.wire.results import ResultData


class _Event(WireModel):
    session: str = ""
    turn: str = ""
    seq: int = 0
    parent_call_id: str | None = Field(None, exclude_if=lambda value: value is None)
    """On the events of a `task` sub-agent: the `callId` of its `task` call; absent on every other event."""


class TextEvent(_Event):
    type: Literal["text"] = "text"
    delta: str


class ThinkingEvent(_Event):
    type: Literal["thinking"] = "thinking"
    delta: str


class ToolCallStartEvent(_Event):
    type: Literal["toolCallStart"] = "toolCallStart"
    call_id: str
    name: str


class ToolCallDeltaEvent(_Event):
    type: Literal["toolCallDelta"] = "toolCallDelta"
    call_id: str
    args_delta: str


class ToolCallEvent(_Event):
    type: Literal["toolCall"] = "toolCall"
    call_id: str
    name: str
    arguments: dict[str, Any]
    raw: str | None = None


class ApprovalEvent(_Event):
    type: Literal["approval"] = "approval"
    call_id: str
    decision: Literal["allow", "deny", "allowSession"]
    by: Literal["user", "policy"]


class ToolResultEvent(_Event):
    type: Literal["toolResult"] = "toolResult"
    call_id: str
    name: str
    ok: bool
    output: str
    error: ToolError | None
    duration_ms: int
    data: ResultData | None = Field(None, exclude_if=lambda data: data is None)
    """What the tool gave back for a front end to draw (wire/results.py: a web page, search hits, a learned API's
    answer, a sub-agent's, a background process and its output, the session's processes); absent when it gave none.
    `output` stays the text the model read."""


class NoticeEvent(_Event):
    type: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"]
    code: NoticeCode
    message: ShortText


class CommandOutputEvent(_Event):
    type: Literal["commandOutput"] = "commandOutput"
    command: ShortText
    output: str


class ContextUsageEvent(_Event):
    """How full the context window is, after each model request (and after a compaction)."""

    type: Literal["contextUsage"] = "contextUsage"
    used_tokens: int
    window_tokens: int
    estimated: bool
    """No usage from the server: `used_tokens` is Sunwell's estimate."""


class PlanItem(WireModel):
    step: str
    status: Literal["pending", "in_progress", "done"]


class PlanEvent(_Event):
    """The agent's plan as `update_plan` last set it: the whole checklist each time, not a change to it."""

    type: Literal["plan"] = "plan"
    items: list[PlanItem]
    explanation: str | None = None


class ProcessEvent(_Event):
    """A background process of the session changed: it started, its listening ports changed, it exited, was
    stopped, or was found running after Sunwell died (`orphaned`, and stopped then). Outside a turn (a process ends
    while none runs) the sidecar sends it with `turn` "" and `seq` 0."""

    type: Literal["process"] = "process"
    process_id: int
    """Its id in its session (1, 2, …), as the process tools and `::stop` take it."""
    command: ShortText
    """The command line it runs."""
    state: ProcessState
    """`running`; `exited` by itself; `stopped` by Sunwell (process_stop, `::stop`, its session's end); `orphaned`:
    found running after the Sunwell that started it died, and stopped then."""
    exit_code: int | None
    """Its exit code once it ended; null while it runs (or when it was orphaned)."""
    ports: list[int]
    """The loopback ports it listens on (in its sandbox, or on this machine), which web_fetch reaches while it runs."""


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    status: TurnStatus
    """`interrupted` only in a replay: the log never saw the turn end."""
    tool_calls: int
    usage: Usage | None
    error: ShortText | None = None
    resumable: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    """True: `sunwell/resume` takes the turn up (it is in the log and ended in a provider error, or was
    interrupted); else absent."""

    def wire(self) -> dict[str, Any]:
        data = super().wire()
        if self.error is None:
            del data["error"]  # docs/events.md "done": absent unless the status is `error`
        return data


Event = Annotated[
    TextEvent | ThinkingEvent | ToolCallStartEvent | ToolCallDeltaEvent | ToolCallEvent | ApprovalEvent
    | ToolResultEvent | NoticeEvent | CommandOutputEvent | ContextUsageEvent | PlanEvent | ProcessEvent | DoneEvent,
    Field(discriminator="type"),
]


class UserMessageEvent(WireModel):
    """The line a user sent, which starts a turn. Only a replay carries it (`SessionResult.events`): the live
    stream has no need, the client sent the line itself. Its `type` is the client's own action for a sent line."""

    session: str = ""
    turn: str = ""
    seq: int = 0
    type: Literal["userMessage"] = "userMessage"
    text: str
    mentions: list[str] = Field(default_factory=list)
    """The labels of what the line had attached (`@src/app.py`); `text` is the line without them."""
    image_count: int | None = Field(None, exclude_if=lambda count: count is None)
    """How many images the line had, when it had any (pasted, dropped, `--image`, `@shot.png`); their bytes stay
    in the log's image files, so a front end shows that they were there, not what they were."""


SessionEvent = Annotated[UserMessageEvent | Event, Field(discriminator="type")]
"""An event of a stored session, as `sunwell/session` replays it."""
