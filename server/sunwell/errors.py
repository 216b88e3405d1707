"""One small error hierarchy: front ends catch `SunwellError` and show its message as one line.

A `SunwellError` is a problem the user can act on (a bad setting, a missing key, an unknown session); anything else
that escapes is a bug and keeps its traceback in the log. Tool failures are not here: they are data the model
reads (`tools.base.ToolFailure` carries a `ToolError`), never an exception through the loop.
"""

from __future__ import annotations

from pydantic import ValidationError


class SunwellError(Exception):
    """A problem the user can act on; the message is one actionable line."""


class ConfigError(SunwellError):
    """A setting is wrong; the message names the key and its source. The CLI exits 2 with it."""


class SetupError(SunwellError):
    """The turn cannot start (no model, unknown provider, missing key, bad workspace): a usage/config problem."""


class InvalidReplace(SetupError):
    """A line cannot replace the turn it names: that turn is not in its session's conversation (another session's,
    one replaced already, a made-up id), or the line is a ::command. The sidecar answers invalid params (-32602)."""


class SessionBusy(SetupError):
    """A turn runs in the session: a line that would replace one of its turns is refused, not queued behind it
    (the sidecar answers RequestFailed, -32803)."""


def first_problem(exc: ValidationError, top: str = "(top level)") -> tuple[str, str]:
    """(where, what) of a pydantic error's first problem: the dotted key path, and pydantic's message."""
    err = exc.errors()[0]
    return ".".join(str(part) for part in err["loc"]) or top, err["msg"]
