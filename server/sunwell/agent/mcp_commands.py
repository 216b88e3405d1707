"""MCP prompts as chat commands, `::SERVER:PROMPT [name=value ...]` (docs/cli.md "Chat commands"): what `::help` and
completion list (the prompts of the servers started so far), and the line a prompt's messages make, which the session
runs as the turn (tools/mcp/offerings.py). A server the workspace proposed runs its prompts only once approved, like
its tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sunwell.clipping import clip
from sunwell.commands_spec import CommandDoc
from sunwell.errors import SetupError
from sunwell.tools.mcp.offerings import fetch_prompt, missing_arguments, prompt_arguments, prompt_usage
from sunwell.tools.mcp.surroundings import ServerDown

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine


def prompt_docs(engine: Engine) -> list[CommandDoc]:
    """One command per prompt of every server listed so far."""
    return [CommandDoc(f"{name}:{prompt.name}", prompt_usage(name, prompt),
                       f"MCP prompt of {name}: {(prompt.description or prompt.title or prompt.name)[:200]}")
            for name, server in engine.mcp.servers.items() for prompt in server.prompts]


async def prompt_line(engine: Engine, command: str, args: str) -> str:
    """The user line `::SERVER:PROMPT args` starts the turn with; SetupError says what is wrong."""
    name, _, wanted = command.partition(":")
    server = engine.mcp.servers.get(name)
    if server is None:
        raise SetupError(f"no MCP server {clip(name)} (configured: {', '.join(engine.mcp.servers) or 'none'})")
    try:
        client = await server.connected()
    except ServerDown as exc:
        raise SetupError(f"the MCP server {name} is not available: {exc}") from None
    prompt = next((p for p in server.prompts if p.name == wanted), None)
    if prompt is None:
        known = ", ".join(f"::{name}:{p.name}" for p in server.prompts) or "none"
        raise SetupError(f"the MCP server {name} has no prompt {clip(wanted)} (its prompts: {known})")
    try:
        arguments = prompt_arguments(args)
    except ValueError as exc:
        raise SetupError(f"{exc}; use {prompt_usage(name, prompt)}") from None
    if missing := missing_arguments(prompt, arguments):
        raise SetupError(f"::{command} needs {', '.join(missing)}: {prompt_usage(name, prompt)}")
    try:
        text = (await fetch_prompt(client, wanted, arguments)).strip()
    except ValueError as exc:
        raise SetupError(f"the MCP server {name} refused the prompt: {exc}") from None
    if not text:
        raise SetupError(f"the prompt {wanted} of {name} has no text")
    return text
