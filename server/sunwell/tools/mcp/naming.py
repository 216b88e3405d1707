"""MCP tool names as Sunwell offers them: `SERVER__TOOL`, reduced to what every provider accepts.

OpenAI and Anthropic both take `^[a-zA-Z0-9_-]{1,64}$`; anything else in a server's or a tool's name becomes `_`.
A name cut to 64 characters ends with a short hash of the whole, so two long names that share a prefix stay apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection

MAX_NAME = 64
SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def reduce(name: str) -> str:
    """`name` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (never empty)."""
    return _NOT_ALLOWED.sub("_", name) or "_"


def server_prefix(server: str) -> str:
    """What every tool name of `server` starts with."""
    return reduce(server) + SEPARATOR


def tool_name(server: str, tool: str, taken: Collection[str] = ()) -> str:
    """The Sunwell name of `tool` on `server`, at most 64 characters and not in `taken`."""
    name = server_prefix(server) + reduce(tool)
    if len(name) > MAX_NAME or name in taken:
        digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
        for size in range(6, len(digest) + 1):
            candidate = f"{name[: MAX_NAME - size - 1]}_{digest[:size]}"
            if candidate not in taken:
                return candidate
    return name
