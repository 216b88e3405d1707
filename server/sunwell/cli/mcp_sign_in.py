"""Signing in to an OAuth-protected MCP server from the terminal (tools/mcp/oauth.py): the browser, and
`sunwell mcp login NAME` / `sunwell mcp logout NAME`.

The authorization page is opened by the standard library's `webbrowser` (the program `BROWSER` names, `xdg-open`,
`open`, `os.startfile`: an argv or the platform's own call, never a shell), run as `python -I -m webbrowser URL` in a
process of its own: what a browser prints goes nowhere (not into `--json`'s stdout, not onto the terminal), a browser
command that waits until the browser closes holds up nothing, and `-I` keeps a `webbrowser.py` in the workspace from
being imported. Only where a browser can show (a desktop session, or `BROWSER` set), so a text browser never takes
over the terminal. The URL itself is always printed: by the `mcp_auth` notice (stdout in a transcript, the event in
`--json`, stderr for `login`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading

from sunwell.agent.engine import Engine
from sunwell.cli.exit_codes import EXIT_ERROR, EXIT_OK, UsageError
from sunwell.cli.visible import visible
from sunwell.tools.mcp.surroundings import ServerDown


class TerminalOpener:
    async def __call__(self, server: str, url: str) -> bool:
        if not can_show_a_browser():
            return False
        await asyncio.to_thread(_open, url)
        return True


def _open(url: str) -> None:
    browser = subprocess.Popen([sys.executable, "-I", "-m", "webbrowser", "-t", url], cwd=tempfile.gettempdir(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    threading.Thread(target=browser.wait, daemon=True).start()  # reaped whenever it is done


def can_show_a_browser() -> bool:
    return (sys.platform in ("darwin", "win32") or bool(os.environ.get("BROWSER"))
            or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))


def cmd_sign_in(args: argparse.Namespace, engine: Engine) -> int:
    """`sunwell mcp login NAME` and `sunwell mcp logout NAME`."""
    server = engine.mcp.servers.get(args.name)
    urls = [name for name, s in engine.mcp.servers.items() if s.config.url is not None]
    if server is None or server.config.url is None:
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

    engine.mcp.sign_in.opener = TerminalOpener()
    try:
        row = await engine.mcp.restart(name, notify)
    except ServerDown as exc:
        raise UsageError(str(exc)) from None
    finally:
        await engine.aclose()
    if row.state != "running":
        print(visible(f"sunwell: MCP server {name} {row.reason or row.state}"), file=sys.stderr)
        return EXIT_ERROR
    where = engine.mcp.sign_in.vaults(name, engine.mcp.servers[name].config.url or "").where
    print(visible(f"{name} is signed in ({len(row.tools)} tools); the sign-in is kept in {where}" if asked else
                  f"{name} is running ({len(row.tools)} tools): it needed no new sign-in"))
    return EXIT_OK


async def _logout(engine: Engine, name: str) -> int:
    try:
        forgotten, where = await engine.mcp.sign_out(name)
    finally:
        await engine.aclose()
    print(visible(f"forgot the sign-in of {name} (its tokens and registration) in {where}" if forgotten else
                  f"{name} had no sign-in kept in {where}"))
    return EXIT_OK
