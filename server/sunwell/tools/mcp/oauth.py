"""Signing in to a streamable HTTP MCP server that answers 401, with the SDK's OAuth client (`mcp.client.auth`):
discovery of the protected resource and its authorization server, dynamic client registration, the authorization
code with PKCE (S256), refresh. Sunwell adds what the SDK leaves to its user:

- where the sign-in is kept (tools/mcp/token_vault.py): VS Code's secret storage or the OS keyring, never a config
  file or a log;
- the browser: the authorization URL is checked (tools/mcp/sign_in_url.py), then handed to the front end's opener
  as a URL (VS Code: `window/showDocument`, which the client opens with `env.openExternal`; the terminal: the
  notice prints it and `webbrowser` starts the browser with an argv), never to a shell; a `warning` notice (code
  `mcp_auth`) says what is happening and where to go. With no one to sign in (`sunwell run` without a terminal,
  `sunwell mcp list`) the start fails at once, saying to run `sunwell mcp login NAME`;
- the loopback redirect listener (tools/mcp/loopback.py) on the port the client was registered with, so a stored
  registration keeps working;
- what the SDK's provider forgets when it is made again (python-sdk issue #3250): when the stored access token
  expires and which token endpoint issued it. Without them a restarted Sunwell sends an expired token, gets 401 and
  asks for a browser sign-in where a refresh would do.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from sunwell import __version__
from sunwell.config.settings import McpOAuth
from sunwell.tools.mcp.loopback import PATH, Loopback, SignInFailed
from sunwell.tools.mcp.sign_in_url import UnsafeUrl, checked_authorization_url
from sunwell.tools.mcp.surroundings import Opener
from sunwell.tools.mcp.token_vault import TokenVault
from sunwell.tools.mcp.vaults import Vault

Tell = Callable[[str, str], None]
"""(level, message): a notice, now (the user must act while the start waits)."""
NOTICE = "mcp_auth"


class _Provider(OAuthClientProvider):
    """The SDK's provider, given back what its `_initialize` does not load (python-sdk #3250)."""

    def __init__(self, url: str, metadata: OAuthClientMetadata, vault: TokenVault, sign_in: SignIn) -> None:
        super().__init__(url, metadata, vault, redirect_handler=sign_in.redirect, callback_handler=sign_in.callback)
        self.vault = vault
        vault.discovered = lambda: self.context.oauth_metadata

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = self.vault.expires_at if self.context.current_tokens else None
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = await self.vault.get_metadata()


class SignIn:
    """One server's browser sign-in: the redirect and callback handlers the SDK's provider calls."""

    def __init__(self, server: str, vault: TokenVault, port: int, timeout: float, opener: Opener | None,
                 tell: Tell) -> None:
        self.server, self.vault, self.timeout, self.opener, self.tell = server, vault, timeout, opener, tell
        self.loopback = Loopback(port, server)

    async def redirect(self, url: str) -> None:
        try:
            url = checked_authorization_url(url)
        except UnsafeUrl as exc:
            raise SignInFailed(f"its authorization server gave a sign-in URL Sunwell will not open: {exc}") from None
        if self.opener is None:
            raise SignInFailed(f"it asks you to sign in (OAuth) and no one is here to: run `sunwell mcp login "
                               f"{self.server}` at a terminal, then use it again")
        try:
            self.loopback.listen(parse_qs(urlsplit(url).query).get("state", [""])[0])
        except SignInFailed as exc:  # the port the registration names is taken: register anew next time
            await self.vault.forget_client()
            raise SignInFailed(f"{exc}; it registers again with another port when next needed") from None
        try:
            shown = await self.opener(self.server, url)
        except Exception:  # noqa: BLE001 - a front end that could not open it: the notice still has the URL
            shown = False
        first = (f"MCP server {self.server}'s sign-in no longer works (expired or revoked); sign in again"
                 if self.vault.had_tokens else f"MCP server {self.server} asks you to sign in (OAuth)")
        self.tell("warning", f"{first}: {'your browser was opened at' if shown else 'open'} {url} "
                             f"(Sunwell waits {self.timeout:g} s)")

    async def callback(self) -> AuthorizationCodeResult:
        try:
            return await self.loopback.answer(self.timeout)
        finally:
            self.loopback.close()


async def oauth_auth(server: str, url: str, settings: McpOAuth, vault: Vault, opener: Opener | None,
                     tell: Tell) -> httpx2.Auth:
    """The httpx auth of `server` at `url`: its stored sign-in used and refreshed, a new one asked for when needed."""
    tokens = TokenVault(vault)
    port = _registered_port(await tokens.get_client_info()) or _free_port()
    sign_in = SignIn(server, tokens, port, settings.timeout, opener, tell)
    metadata = OAuthClientMetadata(redirect_uris=[sign_in.loopback.redirect_uri], token_endpoint_auth_method="none",
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   client_name="Sunwell", software_id="sunwell", software_version=__version__)
    return _Provider(url, metadata, tokens, sign_in)


def _registered_port(client: OAuthClientInformationFull | None) -> int | None:
    """The loopback port a stored registration names: its redirect uri must be the one the server knows."""
    uris = (client.redirect_uris or []) if client is not None else []
    parts = urlsplit(str(uris[0])) if uris else None
    if parts is None or parts.hostname != "127.0.0.1" or parts.path != PATH:
        return None
    return parts.port


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
