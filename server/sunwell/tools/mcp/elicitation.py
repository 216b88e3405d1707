"""An MCP server asking the user for input during a call (elicitation): the SDK's callback, answered by whoever can
ask the user — `sunwell/elicit` to a client that announced `elicit`, prompts at the terminal — else declined.

What the person sees names the server (a sandboxed server may ask for anything, a token included: the question is
its own words, never Sunwell's), and no field is filled in for them (a server's `default` is not offered). Only a
form (a flat object of strings, numbers, booleans, enums) is asked; a URL request is declined. An answer the
server's schema does not accept is not sent: the request is declined instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp import types

from sunwell.wire.user_requests import ElicitResult

log = logging.getLogger(__name__)
Elicit = Callable[[str, str, dict[str, Any]], Awaitable[ElicitResult]]
"""(server, message, schema) -> the person's answer (docs/sidecar.md `sunwell/elicit`)."""


def elicitation_callback(server: str, asker: Callable[[], Elicit | None]) -> Any:
    """The SDK's `elicitation_callback` for `server`; `asker()` is who answers now (None: no one)."""

    async def callback(context: Any, params: Any) -> types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        elicit = asker()
        if not isinstance(schema, dict) or elicit is None:
            log.info("MCP server %s asked the user (%s); declined: %s", server, getattr(params, "message", ""),
                     "no one to ask" if elicit is None else "not a form")
            return types.ElicitResult(action="decline")
        try:
            answer = await elicit(server, str(params.message), schema)
        except Exception as exc:  # noqa: BLE001 - a front end that fails has not answered
            log.info("asking the user for MCP server %s failed: %r", server, exc)
            return types.ElicitResult(action="cancel")
        return result_of(answer, schema, server)

    return callback


def result_of(answer: ElicitResult, schema: dict[str, Any], server: str) -> types.ElicitResult:
    if answer.action != "accept":
        return types.ElicitResult(action=answer.action)
    content = answer.content
    if not isinstance(content, dict) or (problem := _problem(content, schema)):
        log.info("the answer for MCP server %s does not fit its form (%s); declined", server,
                 "no content" if not isinstance(content, dict) else problem)
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="accept", content=content)


def _problem(content: dict[str, Any], schema: dict[str, Any]) -> str | None:
    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(content)), None)
    except SchemaError as exc:
        return f"its schema is invalid: {exc.message}"
    return error.message if error is not None else None
