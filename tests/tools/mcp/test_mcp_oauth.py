"""Signing in to an OAuth-protected streamable HTTP MCP server (tools/mcp/oauth.py) against a real authorization
server and a real MCP server on 127.0.0.1 (tests/mcp_servers/oauth_box.py), the browser a real HTTP client that
follows the authorization URL. Attacks first: an authorization endpoint carrying shell syntax, a forged callback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
import stat
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from mcp_support import Browser, OAuthBox
from person import Person
from sunwell.config import McpServerConfig
from sunwell.tools.base import Limits, ToolContext, Trust, TurnServices
from sunwell.tools.executor import execute
from sunwell.tools.mcp import McpHub, Surroundings
from sunwell.tools.mcp.sign_in_url import UnsafeUrl, checked_authorization_url
from sunwell.tools.network.hosts import HostRules
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.messages import ToolCall


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch):
    """Never the machine's keyring: the sign-in goes to the data dir's 0600 file."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


class Sunwell:
    """One run of Sunwell's MCP hub over the data dir `data`: a new one is a restart."""

    def __init__(self, tmp: Path, url: str, opener=None, allow: tuple[str, ...] = (), **config) -> None:
        (tmp / "ws").mkdir(exist_ok=True)
        self.data = tmp / "data"
        # the person opens the page when an `opener(server, url)` is given; else no one is there to sign in
        person = Person(open_url=lambda request: opener(request.server, request.url)) if opener else Person()
        self.hub = McpHub(Surroundings(tmp / "ws", self.data, network=HostRules(allow)), person)
        self.hub.configure({"guarded": McpServerConfig.model_validate({"url": url, "timeout": 10, **config})}, {})
        self.notices: list[tuple[str, str, str]] = []
        self.ctx = ToolContext(jail=Jail(tmp / "ws"), limits=Limits(max_output_bytes=100_000), turn=TurnServices(notify=self.note))

    def note(self, level: str, code: str, message: str) -> None:
        self.notices.append((level, code, message))

    @property
    def server(self):
        return self.hub.servers["guarded"]

    async def start(self) -> None:
        await self.hub.start(Trust.full, None, self.note)

    async def call(self, tool: str, **arguments):
        found = next(t for t in self.hub.tools() if t.name == f"guarded__{tool}")
        return await execute(found, ToolCall(id="c1", name=found.name, arguments=arguments), arguments, self.ctx)


@pytest.fixture
async def sunwells(tmp_path: Path):
    made: list[Sunwell] = []

    def make(url: str, opener=None, allow: tuple[str, ...] = (), **config) -> Sunwell:
        made.append(Sunwell(tmp_path, url, opener, allow, **config))
        return made[-1]

    yield make
    for one in made:
        await one.hub.close()


def nobody() -> None:
    raise AssertionError("a browser was opened where the stored sign-in should have done")


# ---- attacks ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "https://auth.example/authorize/$(touch /tmp/pwned)?client_id=a",
    "https://auth.example/a;b?state=s",
    "https://auth.example/`id`",
    "https://auth.example/x|sh",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "a:$(calc.exe)",
    "http://auth.example/authorize",
    "https://good.example@evil.example/authorize",
    "https://auth.example/authorize\n/etc",
    "https://auth.example/authorize\x00",
    "https://auth.exämple/authorize",
    "https://auth.example/authorize?next=<script>",
])
def test_an_authorization_url_no_real_server_needs_is_refused(url):
    with pytest.raises(UnsafeUrl):
        checked_authorization_url(url)


@pytest.mark.parametrize("url", [
    "https://auth.example/authorize?response_type=code&client_id=a&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback",
    "http://127.0.0.1:8080/authorize?state=x", "http://localhost/authorize", "http://[::1]:9/authorize",
])
def test_an_ordinary_authorization_url_passes_as_it_is(url):
    assert checked_authorization_url(url) == url


async def test_an_authorization_endpoint_carrying_shell_syntax_never_reaches_the_browser(sunwells, tmp_path):
    marker = tmp_path / "pwned"
    with OAuthBox("--authorization-endpoint", f"https://auth.example/authorize$(touch${{IFS}}{marker})") as box:
        browser = Browser()
        one = sunwells(box.url, browser)
        await one.start()
        assert browser.opened == [] and not marker.exists()
        assert one.server.state == "failed"
        assert "gave a sign-in URL Sunwell will not open: it carries '$'" in one.server.reason
        assert box.events("authorize") == []
        assert any("will not open" in message for _, _, message in one.notices)


async def test_discovery_never_reaches_an_address_the_network_policy_refuses(sunwells):
    """The resource's metadata names an authorization server at 127.0.0.2, an address the user never named: its
    metadata is never asked for, nothing registers, no browser opens (issue 40, item 6)."""
    with OAuthBox(as_host="127.0.0.2") as box:
        browser = Browser()
        one = sunwells(box.url, browser)
        await one.start()
        assert box.events("metadata") == [] and box.events("register") == []
        assert browser.opened == []
        assert one.server.state == "failed"
        assert "127.0.0.2" in one.server.reason and "network.allow" in one.server.reason, one.server.reason


async def test_an_authorization_server_the_user_lists_by_address_is_reached(sunwells):
    with OAuthBox(as_host="127.0.0.2") as box:
        one = sunwells(box.url, Browser(), allow=("127.0.0.2",))
        await one.start()
        assert one.server.state == "running", one.server.reason
        assert len(box.events("metadata")) >= 1 and len(box.events("register")) == 1


async def test_the_listener_takes_only_the_answer_to_the_sign_in_it_started(sunwells):
    with OAuthBox() as box:
        browser = Browser()
        forged: list[tuple[int, str]] = []

        async def opener(server: str, url: str) -> bool:
            redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
            async with httpx2.AsyncClient() as http:
                for attempt in (f"{redirect}?code=forged&state=wrong", f"{redirect}?code=forged",
                                redirect.replace("/callback", "/other") + "?code=forged&state=x"):
                    answer = await http.get(attempt)
                    forged.append((answer.status_code, answer.text))
            return await browser(server, url)

        one = sunwells(box.url, opener)
        await one.start()
        assert one.server.state == "running"
        assert [status for status, _ in forged] == [400, 400, 404]
        assert "not the sign-in Sunwell is waiting for" in forged[0][1]
        assert [e["grant"] for e in box.events("token")] == ["authorization_code"]  # the forged code never went


# ---- the flow ---------------------------------------------------------------------------------------------------


async def test_the_first_connection_signs_in_with_discovery_registration_and_pkce(sunwells):
    with OAuthBox() as box:
        browser = Browser()
        one = sunwells(box.url, browser)
        await one.start()
        assert one.server.state == "running", one.server.reason
        assert (await one.call("echo", text="hi")).output == "hi"
        [register] = box.events("register")
        [authorize] = box.events("authorize")
        assert register["redirect_uris"] == [authorize["redirect_uri"]]
        assert authorize["redirect_uri"].startswith("http://127.0.0.1:") and authorize["method"] == "S256"
        assert authorize["resource"] == box.url
        assert [e["grant"] for e in box.events("token")] == ["authorization_code"]
        assert len(browser.opened) == 1 and browser.opened[0].startswith(f"{box.issuer}/authorize?")
        assert browser.pages[0][0] == 200 and "You can close this tab" in browser.pages[0][1]
        [asked] = [n for n in one.notices if n[1] == "mcp_auth"]
        assert asked[0] == "warning" and "asks you to sign in" in asked[2] and browser.opened[0] in asked[2]
        stored = one.data / "mcp-oauth.json"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        with pytest.raises(httpx2.ConnectError):  # the listener is gone
            httpx2.get(authorize["redirect_uri"], timeout=2)


async def test_a_restarted_sunwell_uses_the_stored_sign_in_without_a_browser(sunwells):
    with OAuthBox() as box:
        first = sunwells(box.url, Browser())
        await first.start()
        await first.hub.close()
        again = sunwells(box.url, nobody)
        await again.start()
        assert again.server.state == "running", again.server.reason
        assert (await again.call("echo", text="still me")).output == "still me"
        assert len(box.events("authorize")) == 1 and len(box.events("register")) == 1
        assert len(box.events("token")) == 1
        assert [n for n in again.notices if n[1] == "mcp_auth"] == []


async def test_an_expired_access_token_is_refreshed_after_a_restart(sunwells):
    """The SDK forgets when a stored token expires and which endpoint issued it (python-sdk #3250): without what
    Sunwell keeps beside the tokens, the restart would send the dead token and need the browser."""
    with OAuthBox("--expires-in", "2") as box:
        first = sunwells(box.url, Browser())
        await first.start()
        await first.hub.close()
        await asyncio.sleep(2.5)
        again = sunwells(box.url, None)  # no one to sign in: only a refresh can start it
        await again.start()
        assert again.server.state == "running", again.server.reason
        assert (await again.call("echo", text="refreshed")).output == "refreshed"
        assert [e["grant"] for e in box.events("token")] == ["authorization_code", "refresh_token"]
        assert len(box.events("authorize")) == 1 and box.events("bearer refused") == []


async def test_a_refresh_token_the_server_refuses_leads_to_a_new_sign_in_with_a_notice(sunwells):
    with OAuthBox("--expires-in", "2") as box:
        first = sunwells(box.url, Browser())
        await first.start()
        await first.hub.close()
        await asyncio.sleep(2.5)
        box.refuse_refresh()
        browser = Browser()
        again = sunwells(box.url, browser)
        await again.start()
        assert again.server.state == "running", again.server.reason
        assert [e["grant"] for e in box.events("token")] == ["authorization_code", "refresh_token",
                                                              "authorization_code"]
        assert len(box.events("authorize")) == 2 and len(box.events("register")) == 1  # the registration holds
        [asked] = [n for n in again.notices if n[1] == "mcp_auth"]
        assert "sign-in no longer works (expired or revoked); sign in again" in asked[2]


async def test_with_no_one_to_sign_in_the_start_fails_at_once_saying_how(sunwells):
    with OAuthBox() as box:
        one = sunwells(box.url, None)
        started = time.monotonic()
        await one.start()
        assert time.monotonic() - started < 10
        assert one.server.state == "failed"
        assert "no one is here to: run `sunwell mcp login guarded`" in one.server.reason
        assert box.events("authorize") == []


async def test_a_sign_in_nobody_finishes_times_out_with_a_clear_message(sunwells):
    with OAuthBox() as box:
        opened: list[str] = []

        async def forgetful(server: str, url: str) -> bool:
            opened.append(url)
            return True

        one = sunwells(box.url, forgetful, oauth={"timeout": 1})
        await one.start()
        assert one.server.state == "failed" and "no sign-in within 1 s" in one.server.reason
        redirect = parse_qs(urlsplit(opened[0]).query)["redirect_uri"][0]
        with pytest.raises(httpx2.ConnectError):
            httpx2.get(redirect, timeout=2)


async def test_oauth_off_or_an_authorization_header_of_your_own_never_signs_in(sunwells):
    with OAuthBox() as box:
        browser = Browser()
        for config in ({"oauth": False}, {"headers": {"Authorization": "Bearer my-own-token"}}):
            one = sunwells(box.url, browser, **config)
            await one.start()
            assert one.server.state == "failed"
            await one.hub.close()
        assert browser.opened == [] and box.events("register") == []


async def test_sign_out_forgets_the_sign_in(sunwells):
    with OAuthBox() as box:
        one = sunwells(box.url, Browser())
        await one.start()
        assert await one.hub.sign_out("guarded") == (True, str(one.data / "mcp-oauth.json"))
        assert one.server.state == "stopped"
        assert await one.hub.sign_out("guarded") == (False, str(one.data / "mcp-oauth.json"))
        again = sunwells(box.url, None)
        await again.start()
        assert again.server.state == "failed" and "sunwell mcp login" in again.server.reason


def test_the_test_server_checks_pkce_s256_and_the_redirect_uri():
    """The authorization server the tests sign in to refuses what a sloppy one would let through."""
    with OAuthBox() as box:
        redirect = "http://127.0.0.1:9/callback"
        client = httpx2.post(f"{box.issuer}/register", json={"redirect_uris": [redirect]}).json()
        verifier = "v" * 64
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        ask = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
               "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"}
        assert httpx2.get(f"{box.issuer}/authorize", params={**ask, "redirect_uri": redirect + "x"}).status_code == 400
        assert httpx2.get(f"{box.issuer}/authorize", params={**ask, "code_challenge_method": "plain"}).status_code \
            == 400

        def code() -> str:
            answer = httpx2.get(f"{box.issuer}/authorize", params=ask)
            assert answer.status_code == 302
            return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]

        exchange = {"grant_type": "authorization_code", "client_id": client["client_id"], "redirect_uri": redirect}
        wrong = httpx2.post(f"{box.issuer}/token", data={**exchange, "code": code(), "code_verifier": "w" * 64})
        assert wrong.status_code == 400 and "PKCE" in wrong.text
        right = httpx2.post(f"{box.issuer}/token", data={**exchange, "code": (c := code()), "code_verifier": verifier})
        assert right.status_code == 200 and right.json()["refresh_token"]
        replay = httpx2.post(f"{box.issuer}/token", data={**exchange, "code": c, "code_verifier": verifier})
        assert replay.status_code == 400
        assert httpx2.post(box.url, json={}).status_code == 401


async def test_a_registration_whose_port_another_program_took_registers_anew(sunwells):
    with OAuthBox() as box:
        first = sunwells(box.url, Browser())
        await first.start()
        await first.hub.close()
        port = urlsplit(box.events("register")[0]["redirect_uris"][0]).port
        box.expire()  # the server forgets the token: the next start must sign in again
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the browser's TIME_WAIT
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            again = sunwells(box.url, Browser())
            await again.start()
            assert again.server.state == "failed"
            assert f"could not listen on 127.0.0.1:{port}" in again.server.reason
            assert "it registers again with another port when next needed" in again.server.reason
            await again.start()  # the next use: restarted once
            assert again.server.state == "running", again.server.reason
        [_, second] = box.events("register")
        assert urlsplit(second["redirect_uris"][0]).port != port
