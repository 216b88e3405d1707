"""How a `sunwell` command ends (docs/cli.md "Exit codes"): its exit code, and `UsageError`, the one that means 2."""

from __future__ import annotations

from sunwell.errors import SunwellError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT, EXIT_CANCELLED = 0, 1, 2, 3, 130
STATUS_EXIT = {"completed": EXIT_OK, "error": EXIT_ERROR, "limitReached": EXIT_LIMIT, "cancelled": EXIT_CANCELLED,
               "interrupted": EXIT_ERROR}
"""A turn's `done.status` -> the exit code of `sunwell run`."""


class UsageError(SunwellError):
    """Wrong arguments, or a setup the command cannot start with: one line on stderr, exit 2."""
