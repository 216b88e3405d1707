"""The authorization URL an MCP server's sign-in would open, checked before any front end sees it.

The URL is built by the SDK from the authorization server's metadata, which the MCP server's operator writes, so it
is untrusted. Sunwell never hands it to a shell (VS Code opens it with `env.openExternal`, the terminal prints it
and `webbrowser` runs the browser with an argv), but mcp-remote did (CVE-2025-6514: an `authorization_endpoint`
carrying `$(...)` ran on the user's machine), and a URL also travels on: into a notice, a terminal, another
program's command line. So one that no real authorization server needs is refused here, with a message saying why:
a scheme other than http(s) (`file:`, `javascript:`, `a:$(cmd)`), plain http to anything but this machine, user
info (`https://good.example@evil.example/`), and any character outside printable ASCII or among those a shell
reads (the query the SDK adds is percent-encoded, so only the server's own endpoint can carry them).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

SHELL_CHARACTERS = frozenset("`$;|<>\\\"'{}^")
"""Refused anywhere in the URL; `&`, `=`, `%`, `+` stay (a query needs them)."""


class UnsafeUrl(ValueError):
    """The URL is refused; the message says why, for the user."""


def checked_authorization_url(url: str) -> str:
    """`url` as it is when it may be opened; UnsafeUrl otherwise."""
    for char in url:
        if char.isspace():
            raise UnsafeUrl(f"it carries whitespace ({char!r})")
        if not " " < char < "\x7f":
            kind = "a control character" if char < " " or char == "\x7f" else "a character outside ASCII"
            raise UnsafeUrl(f"it carries {kind} ({char!r})")
        if char in SHELL_CHARACTERS:
            raise UnsafeUrl(f"it carries {char!r}, which no authorization endpoint needs and a shell would read")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise UnsafeUrl(f"its scheme is {parts.scheme or 'missing'!r}, not http or https")
    if "@" in parts.netloc:
        raise UnsafeUrl("it carries user info (`name@` before the host)")
    host = parts.hostname
    if not host:
        raise UnsafeUrl("it names no host")
    if parts.scheme.lower() == "http" and not is_loopback(host):
        raise UnsafeUrl(f"it is plain http to {host}: only this machine may be reached without https")
    return url


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
