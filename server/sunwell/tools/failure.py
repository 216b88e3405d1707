"""A tool's failure: raised by a handler, it becomes an error result the model reads."""

from __future__ import annotations

from sunwell.wire.messages import ToolError


class ToolFailure(Exception):
    """Raised by a handler; becomes an error result the model reads (never an exception through the loop)."""

    def __init__(self, code: str, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.error = ToolError(code=code, message=message, suggestion=suggestion)
