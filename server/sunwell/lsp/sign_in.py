"""An MCP server's OAuth sign-in (tools/mcp/oauth.py) with an editor as the front end.

The browser: LSP's own `window/showDocument` with `external: true`, which vscode-languageclient answers with
`env.openExternal` (the extension checks the URL once more in its middleware, extension/src/signIn.ts). A client that
does not announce `window.showDocument` gets the URL in the `mcp_auth` notice only, and the sign-in waits for it all
the same: a person is there to open it.

Where the sign-in is kept: the client's secret storage through `sunwell/secret`, when it announced
`clientCapabilities.secrets`; else the hub's default, the OS keyring. A secret crosses the wire only between the two
processes of one editor window; it is never in a notice, a log or a result (the vault remembers it for the redactor).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sunwell.lsp.client_requests import send
from sunwell.tools.mcp.vaults import PARTS
from sunwell.wire.protocol import SECRET

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)


class ClientVault:
    """One server's sign-in in the client's secret storage, under `mcp-oauth:NAME URL:PART`."""

    where = "VS Code's secret storage"

    def __init__(self, ls: SunwellServer, server: str, url: str) -> None:
        self.ls, self.key = ls, f"mcp-oauth:{server} {url}"

    async def get(self, part: str) -> str | None:
        answer = await send(self.ls, SECRET, {"action": "get", "key": f"{self.key}:{part}"})
        value = answer.get("value") if isinstance(answer, dict) else None
        return value if isinstance(value, str) else None

    async def put(self, part: str, value: str) -> None:
        await send(self.ls, SECRET, {"action": "store", "key": f"{self.key}:{part}", "value": value})

    async def clear(self) -> bool:
        found = [await self.get(part) for part in PARTS]
        for part in PARTS:
            await send(self.ls, SECRET, {"action": "delete", "key": f"{self.key}:{part}"})
        return any(found)


class ClientOpener:
    def __init__(self, ls: SunwellServer, can_show: bool) -> None:
        self.ls, self.can_show = ls, can_show

    async def __call__(self, server: str, url: str) -> bool:
        if not self.can_show:
            return False
        try:
            shown = await self.ls.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        except Exception as exc:  # noqa: BLE001 - the notice still carries the URL
            log.info("the client did not open the sign-in page of %s: %r", server, exc)
            return False
        return bool(getattr(shown, "success", False))


def wire_sign_in(ls: SunwellServer, hub: Any) -> None:
    """Give the hub the client's browser and, when announced, its secret storage."""
    window = ls.client_capabilities.window
    show = window is not None and window.show_document is not None and window.show_document.support
    hub.sign_in.opener = ClientOpener(ls, bool(show))
    announced = ls.options.client_capabilities
    if announced is not None and announced.secrets:
        hub.sign_in.vaults = lambda server, url: ClientVault(ls, server, url)
