"""What an MCP server's sign-in keeps: the SDK's `TokenStorage` over the server's vault (tools/mcp/vaults.py).

Three parts, each its own secret (a keyring entry stays small): `tokens` (the access and refresh tokens, with the
moment the access token expires: the SDK keeps only `expires_in`, relative to when it was issued), `client` (what
dynamic registration gave: the client id, a secret if the server issued one, the redirect uri with its port) and
`metadata` (the authorization server's endpoints: a refresh after a restart must reach the token endpoint it came
from). Every token and client secret read or written is remembered by the redactor,
so it is masked wherever it would appear: a tool result that echoes it, an error, the logs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import ValidationError

from sunwell.tools.mcp.vaults import Vault
from sunwell.tools.policy.environment import remember_secret


class TokenVault:
    """The SDK's `TokenStorage` (mcp.client.auth), and what its provider forgets across restarts."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.expires_at: float | None = None
        """When the stored access token expires (seconds since the epoch), None when the server did not say."""
        self.had_tokens = False
        """Tokens were stored when the sign-in started: a new authorization means the old one no longer works."""
        self.discovered: Callable[[], OAuthMetadata | None] = lambda: None
        """The authorization server's metadata the provider holds now: kept beside the tokens it issued."""
        self._kept_metadata: OAuthMetadata | None = None

    async def get_tokens(self) -> OAuthToken | None:
        stored = await self._load("tokens")
        if not isinstance(stored, dict):
            return None
        try:
            tokens = OAuthToken.model_validate(stored.get("token"))
        except ValidationError:
            return None
        expires_at = stored.get("expiresAt")
        self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
        self.had_tokens = True
        _remember(tokens.access_token, tokens.refresh_token)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _remember(tokens.access_token, tokens.refresh_token)
        self.expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await self.vault.put("tokens", json.dumps({"token": tokens.model_dump(mode="json", exclude_none=True),
                                                   "expiresAt": self.expires_at}))
        if (metadata := self.discovered()) is not None and metadata != self._kept_metadata:
            await self.vault.put("metadata", metadata.model_dump_json(exclude_none=True))
            self._kept_metadata = metadata

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        stored = await self._load("client")
        try:
            client = OAuthClientInformationFull.model_validate(stored) if isinstance(stored, dict) else None
        except ValidationError:
            return None
        if client is not None:
            _remember(client.client_secret)
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _remember(client_info.client_secret)
        await self.vault.put("client", client_info.model_dump_json(exclude_none=True))

    async def forget_client(self) -> None:
        """Drop the registration (its redirect URI is of no use now): the next sign-in registers anew."""
        await self.vault.put("client", "")

    async def get_metadata(self) -> OAuthMetadata | None:
        stored = await self._load("metadata")
        try:
            self._kept_metadata = OAuthMetadata.model_validate(stored) if isinstance(stored, dict) else None
        except ValidationError:
            return None
        return self._kept_metadata

    async def _load(self, part: str) -> object:
        text = await self.vault.get(part)
        try:
            return json.loads(text) if text else None
        except ValueError:  # damaged: as if nothing were kept (a new sign-in overwrites it)
            return None


def _remember(*secrets: str | None) -> None:
    for secret in secrets:
        if secret:
            remember_secret(secret)
