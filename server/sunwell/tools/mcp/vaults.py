"""Where an MCP server's sign-in is kept (tools/mcp/token_vault.py says what): a vault of secrets per server, keyed
by its name and url, so a server moved to another url signs in anew.

In VS Code the vault is the editor's secret storage, asked through the client port (`secret`, wire/client.py: the
sidecar's `sunwell/secret`); elsewhere it is the OS
keyring (user `mcp-oauth:NAME URL:PART`), else `<data>/mcp-oauth.json`, a file only the user may read
(tools/secret_store.py). No SDK here: the hub names the vaults before any server starts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from sunwell.tools.secret_store import SecretStore
from sunwell.wire.client import Client
from sunwell.wire.user_requests import SecretParams

PARTS = ("tokens", "client", "metadata")


class Vault(Protocol):
    """One server's secrets, by part."""

    where: str
    """Where they are kept, as the user is told."""

    async def get(self, part: str) -> str | None: ...

    async def put(self, part: str, value: str) -> None: ...

    async def clear(self) -> bool:
        """Forget every part; whether anything was kept."""
        ...


def vault_key(server: str, url: str) -> str:
    return f"{server} {url}"


class KeyringVault:
    def __init__(self, data_dir: Path, server: str, url: str) -> None:
        self.store, self.group = SecretStore(data_dir / "mcp-oauth.json", "mcp-oauth"), vault_key(server, url)
        self.where = self.store.where()

    async def get(self, part: str) -> str | None:
        return await asyncio.to_thread(self.store.get, self.group, part)  # a keyring may wait on D-Bus

    async def put(self, part: str, value: str) -> None:
        await asyncio.to_thread(self.store.set, self.group, part, value)

    async def clear(self) -> bool:
        return await asyncio.to_thread(self.store.forget, self.group, list(PARTS))


class ClientVault:
    """One server's sign-in in the front end's secret storage, under `mcp-oauth:NAME URL:PART`. A secret crosses the
    wire only between the two processes of one editor window; it is never in a notice, a log or a result."""

    def __init__(self, client: Client, server: str, url: str) -> None:
        self.client, self.key, self.where = client, f"mcp-oauth:{vault_key(server, url)}", client.secret_storage

    async def get(self, part: str) -> str | None:
        return (await self.client.secret(SecretParams(action="get", key=f"{self.key}:{part}"))).value

    async def put(self, part: str, value: str) -> None:
        await self.client.secret(SecretParams(action="store", key=f"{self.key}:{part}", value=value))

    async def clear(self) -> bool:
        found = [await self.get(part) for part in PARTS]
        for part in PARTS:
            await self.client.secret(SecretParams(action="delete", key=f"{self.key}:{part}"))
        return any(found)
