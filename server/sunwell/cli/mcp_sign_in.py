"""`sunwell mcp login NAME` and `sunwell mcp logout NAME`: signing in to an OAuth-protected MCP server from the
terminal (tools/mcp/oauth.py), the browser opened by the terminal's client (cli/client.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from sunwell.agent.engine import Engine
from sunwell.agent.mcp_servers import ServerDown
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.visible import visible


def cmd_sign_in(args: argparse.Namespace, engine: Engine) -> int:
    """`sunwell mcp login NAME` (`engine`'s client opens the browser) and `sunwell mcp logout NAME`."""
    urls = engine.servers.names(with_url=True)
    if args.name not in urls:
        raise UsageError(f"no MCP server '{args.name}' with a url is configured (with a url: "
                         f"{', '.join(urls) or 'none'}): only a streamable HTTP server signs in")
    return asyncio.run(_login(engine, args.name) if args.mcp_command == "login" else _logout(engine, args.name))


async def _login(engine: Engine, name: str) -> int:
    """Start the server, signing in when it asks (a stored sign-in that still works is simply used)."""
    asked: list[str] = []

    def notify(level: str, code: str, message: str) -> None:
        if code == "mcp_auth":
            asked.append(message)
        if code == "mcp_server" and level != "info":  # a failure: said once, by the last line, without "next time"
            return
        print(visible(message), file=sys.stderr, flush=True)

    try:
        row = await engine.servers.restart(name, notify)
    except ServerDown as exc:
        raise UsageError(str(exc)) from None
    finally:
        await engine.aclose()
    if row.state != "running":
        print(visible(f"sunwell: MCP server {name} {row.reason or row.state}"), file=sys.stderr)
        return EXIT_ERROR
    where = engine.servers.signed_in_where(name)
    print(visible(f"{name} is signed in ({len(row.tools)} tools); the sign-in is kept in {where}" if asked else
                  f"{name} is running ({len(row.tools)} tools): it needed no new sign-in"))
    return EXIT_OK


async def _logout(engine: Engine, name: str) -> int:
    try:
        forgotten, where = await engine.servers.sign_out(name)
    finally:
        await engine.aclose()
    print(visible(f"forgot the sign-in of {name} (its tokens and registration) in {where}" if forgotten else
                  f"{name} had no sign-in kept in {where}"))
    return EXIT_OK
