"""The words every floor shares, declared once: trust levels, approval modes and decisions, risks, turn statuses,
and how a tool name a model misspelt is read. Nothing here imports anything of Sunwell's (see
tests/test_architecture.py); the TypeScript copies are generated from the wire models that use these types.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Literal, get_args

TrustName = Literal["discovery", "read_only", "workspace", "shell", "full"]


class Trust(enum.IntEnum):
    """How much the user lets the model do; each level adds to the one below."""

    discovery = 0  # list and search
    read_only = 1  # + read files
    workspace = 2  # + write and edit files
    shell = 3  # + run commands
    full = 4  # + commands may use the network


TRUST_NAMES: tuple[str, ...] = get_args(TrustName)
assert TRUST_NAMES == tuple(level.name for level in Trust), "TrustName and Trust disagree"

ApprovalMode = Literal["ask", "auto", "deny"]
DryRun = bool | Literal["risky"]
"""`--dry-run`: False runs every call, True none (`--dry-run`, `--dry-run=all`), "risky" only the harmless ones:
reads, listings, searches, the plan, the time, arithmetic, kv_get (docs/cli.md "sunwell run")."""
Decision = Literal["allow", "deny", "allowSession"]
DECISIONS: tuple[str, ...] = get_args(Decision)
DecidedBy = Literal["user", "policy"]
Risk = Literal["write", "shell", "network", "mcp"]
TurnStatus = Literal["completed", "cancelled", "limitReached", "error", "interrupted"]
"""`interrupted`: the process ended while the turn ran; only ever read back from the log (agent/replay.py)."""
NoticeLevel = Literal["info", "warning", "error"]
MentionKind = Literal["file", "selection", "problems", "terminal", "resource"]
"""What a user attaches to a line with `@`: a workspace file, the editor's selection, its problems, a terminal, an MCP
server's resource."""
ErrorCode = Literal["validation", "unknown_tool", "permission", "not_found", "unsupported", "denied", "dry_run",
                    "timeout", "rate_limit", "execution", "network", "interrupted"]
"""A failed tool call's `error.code` (docs/codes.md "Error codes"): what the model and a client may branch on."""
NoticeCode = Literal[
    "provider_retry", "context_overflow", "compacted", "workspace_config_ignored", "mcp_server",  # fixed meanings
    "result_cut", "tools_fitted", "sandbox_off", "sandbox_unavailable", "effects_unavailable", "loop_guard",
    "empty_answer", "answer_from_results", "repeated_call", "repaired_arguments", "repaired_tool_name", "coerced_arguments",
    "emulation_fallback", "constrained_decoding_refused", "tool_call_from_text", "tool_call_repaired",
    "tool_call_cut_off", "tool_call_unreadable", "tool_call_unknown", "resumed", "call_interrupted", "hook", "mcp_auth",
    "hidden_characters",
]
"""A `notice` event's `code`: the first five have fixed meanings (docs/codes.md "Notice codes"); the others say what the
engine repaired, retried or fell back on, so a client may style or count them."""


def canonical_tool_name(name: str, names: Sequence[str]) -> str | None:
    """The offered name `name` was meant to be, when only spelling differs: case, spaces, dots or hyphens for
    underscores, a `functions.` prefix (`Travel itinerary Generator` -> `travel_itinerary_generator`)."""

    def key(text: str) -> str:
        return re.sub(r"[\s.\-_]+", "_", text.strip().removeprefix("functions.")).strip("_").lower()

    matches = [candidate for candidate in names if key(candidate) == key(name)]
    return matches[0] if len(matches) == 1 and matches[0] != name else None
