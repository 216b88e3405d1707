"""The loopback redirect listener of one sign-in (RFC 8252 §7.3): `http://127.0.0.1:PORT/callback`, where the
authorization server sends the browser back with the code.

It listens only while a sign-in waits, on 127.0.0.1 only, and takes only the answer carrying the `state` that sign-in
sent: anything else (another path, a stale tab, a page that guessed the port) is answered 400 or 404 and the wait
goes on. The browser gets a short page saying it may close the tab. Nothing it receives is logged: the query carries
the authorization code. The stdlib's HTTP server parses the requests, on a thread of its own; the answer crosses to
the event loop as a future.
"""

from __future__ import annotations

import asyncio
import html
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import AuthorizationCodeResult

PATH = "/callback"


class SignInFailed(Exception):
    """The sign-in did not complete; the message says why, for the user."""


class Loopback:
    def __init__(self, port: int, server: str) -> None:
        self.port, self.server = port, server
        self._http: HTTPServer | None = None
        self._answer: asyncio.Future[AuthorizationCodeResult] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    def listen(self, state: str) -> None:
        """Bind and serve until `close`; SignInFailed when the port is taken."""
        loop = asyncio.get_running_loop()
        self._answer = answer = loop.create_future()
        server = self.server

        def settle(result: AuthorizationCodeResult | BaseException) -> None:
            if answer.done():
                return
            if isinstance(result, BaseException):
                answer.set_exception(result)
            else:
                answer.set_result(result)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path != PATH:
                    return self._page(404, "Not found", "This is not the page Sunwell waits on.")
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if query.get("state") != state:
                    return self._page(400, "Not this sign-in", "This link is not the sign-in Sunwell is waiting "
                                      "for (its state differs). Start the sign-in again from Sunwell.")
                if "error" in query:
                    why = query["error"] + (f": {query['error_description']}" if "error_description" in query else "")
                    self._page(400, "Sign-in refused", f"The authorization server said: {why}")
                    loop.call_soon_threadsafe(settle, SignInFailed(f"the authorization server refused: {why}"))
                    return None
                if not query.get("code"):
                    return self._page(400, "No code", "The answer carried no authorization code.")
                self._page(200, "Signed in", f"Sunwell is signed in to the MCP server {server}. "
                           "You can close this tab.")
                result = AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss"))
                loop.call_soon_threadsafe(settle, result)
                return None

            def _page(self, status: int, title: str, text: str) -> None:
                body = (f"<!doctype html><meta charset=utf-8><title>Sunwell: {html.escape(title)}</title>"
                        f"<p style='font:16px system-ui;margin:3em'>{html.escape(text)}</p>").encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Silent: the request line carries the authorization code."""

        try:
            self._http = HTTPServer(("127.0.0.1", self.port), Handler)
        except OSError as exc:
            raise SignInFailed(f"could not listen on 127.0.0.1:{self.port} for the browser's answer ({exc.strerror})"
                               ) from None
        threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05},
                         name=f"sign-in:{server}", daemon=True).start()

    async def answer(self, timeout: float) -> AuthorizationCodeResult:
        """The browser's answer; SignInFailed after `timeout` seconds or when the server refused."""
        assert self._answer is not None, "listen first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        except TimeoutError:
            raise SignInFailed(f"no sign-in within {timeout:g} s (the browser never came back to Sunwell); it is "
                               "asked again when the server is next needed") from None

    def close(self) -> None:
        """Stop listening. Not awaited: it must also run where a cancelled sign-in unwinds (the SDK's task groups
        cancel every await there); it waits at most one poll of the server's thread."""
        http, self._http = self._http, None
        if http is not None:
            http.shutdown()
            http.server_close()
