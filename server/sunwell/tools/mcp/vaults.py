"""Where an MCP server's sign-in is kept (tools/mcp/token_vault.py says what): a vault of secrets per server, keyed
by its name and url, so a server moved to another url signs in anew.

In VS Code the vault is the editor's secret storage, asked over the wire (lsp/secrets.py); elsewhere it is the OS
keyring (user `mcp-oauth:NAME URL:PART`), else `<data>/mcp-oauth.json`, a file only the user may read
(tools/secret_store.py). No SDK here: the hub names the vaults before any server starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from sunwell.tools.secret_store import SecretStore

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


Vaults = Callable[[str, str], Vault]
"""(server name, url) -> its vault."""


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
