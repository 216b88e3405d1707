"""OAuth sign-in with an editor as the front end (lsp/client.py), through the real sidecar over stdio: the page
opened with `window/showDocument` (external), the sign-in kept in the client's secret storage over `sunwell/secret`
(never the keyring or a file of the sidecar's), `sunwell/mcpSignOut` forgetting it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types

from fake_provider import Call, Reply
from mcp_support import Browser, OAuthBox, write_user_config
from sunwell.wire import protocol
from test_sidecar_support import OPENAI, check_turn

pytest_plugins = ["test_sidecar_support"]


class EditorSecrets:
    """The client's secret storage, as the extension keeps it (extension/src/signIn.ts): a map, under a prefix."""

    def __init__(self) -> None:
        self.kept: dict[str, str] = {}
        self.asked: list[tuple[str, str]] = []

    def __call__(self, params: dict) -> dict:
        self.asked.append((params["action"], params["key"]))
        key = "sunwell.secret." + params["key"]
        if params["action"] == "store":
            self.kept[key] = params["value"]
        elif params["action"] == "delete":
            self.kept.pop(key, None)
        return {"value": self.kept.get(key) if params["action"] == "get" else None}


@pytest.fixture
def no_keyring(env):
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"


async def test_vs_code_opens_the_page_and_keeps_the_sign_in_in_its_secret_storage(sidecar_factory, fake, env,
                                                                                    tmp_path, no_keyring):
    with OAuthBox() as box:
        write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={"guarded": {"url": box.url, "timeout": 10,
                                                                                    "oauth": {"timeout": 30}}})
        data = tmp_path / "data"
        sidecar = await sidecar_factory({"dataDir": str(data), "model": OPENAI,
                                         "clientCapabilities": {"secrets": True}})
        secrets, browser = EditorSecrets(), Browser()
        sidecar.client.feature(protocol.SECRET)(secrets)
        shown: list[types.ShowDocumentParams] = sidecar.client.shown_documents  # pytest-lsp answers success

        async def the_person() -> None:  # reads the notice, then opens what the editor was asked to open
            await sidecar.wait_for(lambda: shown and any(e.get("code") == "mcp_auth" for e in sidecar.events))
            await browser("guarded", shown[0].uri)

        person = asyncio.create_task(the_person())
        fake.script(Reply(tool_calls=[Call("guarded__whoami", "{}")]), Reply(text="Signed in."))
        sidecar.answer = lambda params: {"decision": "allow"}
        result, events = await sidecar.chat("who am I there?", trust="full")
        await person
        check_turn(events, result)
        [page] = shown
        assert page.external is True and page.uri.startswith(f"{box.issuer}/authorize?")
        [asked] = [e for e in events if e["type"] == "notice" and e["code"] == "mcp_auth"]
        assert asked["level"] == "warning" and f"your browser was opened at {page.uri}" in asked["message"]
        answer = next(e for e in events if e["type"] == "toolResult")
        assert answer["ok"] and answer["output"] == "client client-1 with token [REDACTED]"

        key = f"sunwell.secret.mcp-oauth:guarded {box.url}"
        assert set(secrets.kept) == {f"{key}:tokens", f"{key}:client", f"{key}:metadata"}
        tokens = json.loads(secrets.kept[f"{key}:tokens"])["token"]
        assert tokens["access_token"] in box.secrets() and tokens["refresh_token"] in box.secrets()
        assert not (data / "mcp-oauth.json").exists()
        on_disk = "".join(p.read_bytes().decode("utf-8", "replace") for p in data.rglob("*") if p.is_file())
        assert not any(secret in on_disk for secret in box.secrets())

        assert await sidecar.request(protocol.MCP_SIGN_OUT, {"name": "guarded"}) == {"forgotten": True}
        assert secrets.kept == {}
        assert await sidecar.request(protocol.MCP_SIGN_OUT, {"name": "guarded"}) == {"forgotten": False}
