"""The sidecar's background-process methods (PROTOCOL.md "Added with the fourth batch"): the session's processes as
VS Code's processes strip lists them, and its Stop. Their changes arrive as `process` events (wire/events.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sunwell.wire.messages import WireModel
from sunwell.wire.options import Params
from sunwell.wire.protocol import Name

__all__ = ["ProcessInfo", "ProcessStopParams", "ProcessStopResult", "ProcessesParams", "ProcessesResult"]

PROCESSES = "sunwell/processes"
PROCESS_STOP = "sunwell/processStop"
"""Stops a background process of a session (SIGTERM, then SIGKILL after a grace) and answers once it ended."""


class ProcessesParams(Params):
    session: Name


class ProcessInfo(WireModel):
    process_id: int
    command: str
    state: Literal["running", "exited", "stopped", "orphaned"]
    exit_code: int | None
    ports: list[int]
    """The loopback ports it listens on (in its sandbox, or on this machine), which web_fetch reaches while it runs."""
    started: str
    """ISO 8601, UTC."""


class ProcessesResult(WireModel):
    processes: list[ProcessInfo]


class ProcessStopParams(Params):
    session: Name
    process_id: int = Field(ge=1)


class ProcessStopResult(WireModel):
    process: ProcessInfo
    """As it is once stopped (or as it was, when it was not running)."""


REQUESTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    PROCESSES: (ProcessesParams, ProcessesResult),
    PROCESS_STOP: (ProcessStopParams, ProcessStopResult),
}
