"""The small built-ins of the seeds: get_time, and kv_set/kv_get, a key-value store that lasts the session.

None of them touches the workspace or the network; the store lives in the session's scratch state
(tools/scratch.py), which the turn hands over as `ToolContext.scratch`.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.scratch import MAX_BYTES, ScratchState, StoreFull

LISTED_KEYS = 50
"""How many keys a missing key's error names."""


# ---- get_time --------------------------------------------------------------------------------------------------


class GetTimeArguments(ToolArguments):
    format: Literal["iso8601", "unix", "human"] = Field(
        "iso8601", description='"iso8601" (2025-03-14T15:09:26+01:00), "unix" (seconds) or "human".')
    timezone: str | None = Field(None, max_length=64,
                                 description='IANA time zone such as "Europe/Paris" or "UTC". Default: local time.')


async def get_time(arguments: GetTimeArguments, ctx: ToolContext) -> str:
    zone = _zone(arguments.timezone)
    now = dt.datetime.now(zone) if zone is not None else dt.datetime.now().astimezone()
    match arguments.format:
        case "unix":
            return str(int(now.timestamp()))
        case "human":
            return now.strftime("%A, %d %B %Y, %H:%M:%S %Z (UTC%z)")
    return now.isoformat(timespec="seconds")


def _zone(name: str | None) -> dt.tzinfo | None:
    """The zone `name` (None: the machine's local zone)."""
    if name is None:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # ValueError: a path such as "../x"; OSError: a folder
        raise ToolFailure("validation", f"parameter 'timezone': unknown time zone {name!r}",
                          'use an IANA name such as "Europe/Paris", "America/New_York" or "UTC"') from None


GET_TIME = Tool.of(
    GetTimeArguments, get_time,
    name="get_time",
    description=(
        "Get the current date and time. Use it whenever the answer depends on today's date or the time of day: "
        "you cannot know it otherwise. `format` is \"iso8601\" (default), \"unix\" (seconds since 1970) or "
        '"human"; `timezone` an IANA zone (default: the local time of the machine). An unknown zone is an error. '
        'Example: {"timezone": "Asia/Tokyo", "format": "human"}.'
    ),
    min_trust=Trust.discovery,
    harmless=True,
    expendable=True,
)


# ---- kv_set / kv_get -------------------------------------------------------------------------------------------


class KvSetArguments(ToolArguments):
    key: str = Field(min_length=1, max_length=256, description="Name to store the value under.")
    value: str = Field(description="Text to store; replaces what the key held.")


class KvGetArguments(ToolArguments):
    key: str = Field(min_length=1, max_length=256, description="Name the value was stored under.")


def _state(ctx: ToolContext) -> ScratchState:
    if ctx.scratch is None:
        raise ToolFailure("unsupported", "there is no session to keep values in here")
    return ctx.scratch.state


async def kv_set(arguments: KvSetArguments, ctx: ToolContext) -> str:
    state = _state(ctx)
    try:
        used = state.put(arguments.key, arguments.value)
    except StoreFull as full:
        raise ToolFailure(
            "execution",
            f"the session's store is full: storing {arguments.key!r} would take it to {full.args[0]:,} bytes, "
            f"past its {MAX_BYTES:,} (keys and values together); nothing was stored",
            "store less: shorter values, or reuse a key you no longer need with a short value") from None
    return f"Stored {arguments.key!r}. The store holds {len(state.values)} key(s), {used:,} of {MAX_BYTES:,} bytes."


async def kv_get(arguments: KvGetArguments, ctx: ToolContext) -> str:
    state = _state(ctx)
    if arguments.key in state.values:
        return state.values[arguments.key]
    keys = list(state.values)
    held = ", ".join(repr(key) for key in keys[:LISTED_KEYS]) + (
        f" and {len(keys) - LISTED_KEYS} more" if len(keys) > LISTED_KEYS else "")
    raise ToolFailure("not_found", f"no key {arguments.key!r} in this session's store; "
                      + (f"it holds: {held}" if keys else "it is empty"),
                      "use one of the keys it holds, or store the value first with kv_set")


KV_SET = Tool.of(
    KvSetArguments, kv_set,
    name="kv_set",
    description=(
        "Store a text value under a key for the rest of this session, to remember a fact, an intermediate result "
        "or a decision across turns. Storing under a key that exists replaces its value. The store holds at most "
        '64 KB (keys and values together) and is forgotten when the conversation is cleared. '
        'Example: {"key": "api_base", "value": "https://example.com/v2"}.'
    ),
    min_trust=Trust.discovery,
    read_only=False,  # two sets of one key in one response must land in order
    expendable=True,
)

KV_GET = Tool.of(
    KvGetArguments, kv_get,
    name="kv_get",
    description=(
        "Read a value stored earlier in this session with kv_set. Use it instead of asking the user again for "
        "something already noted. A key that was never set is an error that lists the keys held (at most 50). "
        'Example: {"key": "api_base"}.'
    ),
    min_trust=Trust.discovery,
    harmless=True,
    expendable=True,
)
