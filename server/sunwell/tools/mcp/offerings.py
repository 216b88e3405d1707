"""What an MCP server offers besides tools: its prompts, started as chat commands `::SERVER:PROMPT [name=value ...]`
(docs/cli.md "Chat commands"), and its resources, attached as `@SERVER:URI` mentions. Both are listed when the
server starts (when its capabilities say it has them); a listing that fails leaves them empty and the server
running: its tools matter more. A prompt's messages become the turn's line; a resource's text is attached like a
file's, a binary one is named with its type and size (the model cannot read its bytes). Their text, written by the
server, shows the characters that hide text as escapes; a prompt's description loses them (sunwell/hidden_text.py).

Nothing here imports the SDK (the chat commands read it, and importing `mcp` takes half a second): its models are
read by their fields."""

from __future__ import annotations

import base64
import logging
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sunwell.hidden_text import removed_message, reveal, strip_hidden_in

if TYPE_CHECKING:
    from mcp import Client, types

log = logging.getLogger(__name__)
MAX_LIST_PAGES = 20


async def list_offerings(client: Client, server: str, heard: Callable[[str], None] | None = None
                         ) -> tuple[list[types.Prompt], list[types.Resource]]:
    """Its prompts (their descriptions without characters that hide text: `heard` is told when some were removed)
    and its resources."""
    capabilities = client.server_capabilities
    prompts: list[types.Prompt] = []
    resources: list[types.Resource] = []
    try:
        if capabilities is not None and capabilities.prompts is not None:
            prompts = await _pages(client.list_prompts, "prompts")
        if capabilities is not None and capabilities.resources is not None:
            resources = await _pages(client.list_resources, "resources")
    except Exception as exc:  # noqa: BLE001 - its tools still work
        log.info("MCP server %s: listing its prompts or resources failed: %r", server, exc)
    prompts, hidden = _visible_prompts(prompts)
    if hidden and heard is not None:
        heard(removed_message(f"MCP server {server} (the descriptions of its prompts)", hidden))
    return prompts, resources


async def _pages(fetch: Any, field: str) -> list[Any]:
    found: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await fetch(cursor=cursor)
        found += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _visible_prompts(prompts: list[types.Prompt]) -> tuple[list[types.Prompt], str]:
    """The prompts without the characters that hide text in their titles and descriptions (the model reads them in
    `::help`'s answer), and those removed."""
    shown, removed = [], []
    for prompt in prompts:
        arguments = [_stripped(argument, "description") for argument in prompt.arguments or []]
        prompt, hidden = _stripped(prompt, "title", "description")
        if any(said for _, said in arguments):
            prompt = prompt.model_copy(update={"arguments": [argument for argument, _ in arguments]})
        shown.append(prompt)
        removed += [hidden, *(said for _, said in arguments)]
    return shown, "".join(removed)


def _stripped(model: Any, *fields: str) -> tuple[Any, str]:
    values, hidden = strip_hidden_in([getattr(model, name) for name in fields])
    return (model.model_copy(update=dict(zip(fields, values, strict=True))) if hidden else model), hidden


def prompt_arguments(text: str) -> dict[str, str]:
    """`name=value ...` (a value with spaces in double quotes) as a dict; ValueError says what is wrong."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot read the arguments: {exc}") from None
    arguments = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not name:
            raise ValueError(f"`{word}` is not name=value")
        arguments[name] = value
    return arguments


def prompt_usage(server: str, prompt: types.Prompt) -> str:
    names = [f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in prompt.arguments or []]
    return " ".join([f"::{server}:{prompt.name}", *names])


def missing_arguments(prompt: types.Prompt, arguments: dict[str, str]) -> list[str]:
    return [a.name for a in prompt.arguments or [] if a.required and a.name not in arguments]


def prompt_text(result: types.GetPromptResult) -> str:
    """The prompt's messages as one user line: the text of a single speaker as it is, several labelled by role."""
    parts = [(message.role, _content_text(message.content)) for message in result.messages]
    if all(role == "user" for role, _ in parts):
        return "\n\n".join(text for _, text in parts)
    return "\n\n".join(f"[{role}]\n{text}" for role, text in parts)


async def fetch_prompt(client: Client, name: str, arguments: dict[str, str]) -> str:
    """The prompt's messages as one line; ValueError with the server's words when it refuses."""
    try:
        result = await client.get_prompt(name, arguments)
    except Exception as exc:  # noqa: BLE001 - MCPError and the transport's: the server's answer is the message
        raise ValueError(getattr(exc, "message", None) or str(exc) or type(exc).__name__) from None
    return prompt_text(result)


def _content_text(content: Any) -> str:
    if getattr(content, "type", None) == "text":
        return reveal(content.text)
    if getattr(content, "type", None) == "resource":
        return resource_text(content.resource)
    kind = getattr(content, "mime_type", None) or getattr(content, "type", "content")
    return f"[{kind} omitted]"


def resource_text(contents: Any) -> str:
    """One piece of a resource: its text (characters that hide text shown as escapes, as in a tool's result), or for
    bytes a line naming their type and size."""
    if isinstance(getattr(contents, "text", None), str):
        return reveal(contents.text)
    blob = getattr(contents, "blob", "") or ""
    try:
        size = len(base64.b64decode(blob, validate=False))
    except ValueError:
        size = len(blob)
    return f"[binary resource {contents.uri}: {contents.mime_type or 'unknown type'}, {size:,} bytes, not shown]"
