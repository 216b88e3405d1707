"""A session's background processes on the wire: a row of VS Code's processes strip, the tools' results (as
`toolResult.data`, wire/results.py) and the sidecar's `sunwell/processes` and `sunwell/processStop` (declared in
wire/protocol.py). Their changes arrive as `process` events (wire/events.py)."""

from __future__ import annotations

from typing import Literal

from sunwell.wire.base import WireModel

__all__ = ["ProcessInfo", "ProcessRow", "ProcessState"]

ProcessState = Literal["running", "exited", "stopped", "orphaned"]


class ProcessInfo(WireModel):
    """One background process of a session, as it is now."""

    process_id: int
    """Its id in its session (1, 2, …), as the process tools and `::stop` take it."""
    command: str
    """The command line it runs."""
    state: ProcessState
    """`running`; `exited` by itself; `stopped` by process_stop, `::stop`, its session's end; `orphaned`: found
    running after the Sunwell that started it died, and stopped then."""
    exit_code: int | None
    """Its exit code once it ended; null while it runs (or when it was orphaned)."""
    ports: list[int]
    """The loopback ports it listens on (in its sandbox, or on this machine), which web_fetch reaches while it runs."""
    started: str
    """When it started: ISO 8601, UTC."""


class ProcessRow(ProcessInfo):
    """A process as `sunwell/processes` lists it for the strip: what the tools see, and what a front end needs besides."""

    tail: str | None = None
    """Its latest output, whole lines, at most the `tail` bytes asked for; null when none were asked for."""
    isolated: bool = False
    """Sandboxed without network: its ports are in a network namespace of its own, which web_fetch reaches through a
    relay and nothing else on this machine can (a browser here cannot open them)."""
