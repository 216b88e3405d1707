"""A real web server on 127.0.0.1 for the web tools' tests: pages, redirects, oversized and endless bodies, wrong
charsets, binary, conditional requests, and search services speaking SearXNG's, Brave's and Tavily's wire formats.

    with WebServer() as web:
        web.url("/page.html")   # http://127.0.0.1:PORT/page.html
        web.requests            # [(method, path, headers)] as received

Routes are fixed below; `/redirect/N` redirects N times then lands on /page.html, `/to?u=URL` redirects to URL,
`/slow-redirect/N?s=S` does the same after S seconds a hop, `/see-other` answers 303 to `/echo`, which answers with
the request it got (method, headers, body), and `/trickle/search` is a search service that sends its answer a byte at
a time and never finishes.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

PAGE = """<!doctype html><html><head><title>Asyncio Tasks</title><style>body{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><h1>Coroutines and Tasks</h1><p>Use <code>asyncio.TaskGroup</code> to run tasks.</p>
<ul><li>create_task</li><li>gather</li></ul><a href="/other.html">other</a></body></html>"""
LATIN1_PAGE = "<html><head><title>Caf\u00e9</title></head><body><p>Caf\u00e9 cr\u00e8me \u00e0 la carte</p></body></html>"
DATED = "Wed, 21 Oct 2026 07:28:00 GMT"
SEARCH_HITS = [("Asyncio docs", "https://docs.python.org/3/library/asyncio.html", "asyncio is a library"),
               ("TaskGroup", "https://docs.python.org/3/library/asyncio-task.html", "Task groups combine")]


class WebServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.key = "brave-key-1234567890"
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append((self.command, self.path, dict(self.headers)))
                server.route(self)

            do_HEAD = do_GET

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                server.requests.append(("POST", self.path, dict(self.headers)))
                server.route(self, body)

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def route(self, h: BaseHTTPRequestHandler, body: bytes = b"") -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/page.html":
            if h.headers.get("if-none-match") == '"v1"':
                return _send(h, 304, b"", "text/html", {"ETag": '"v1"'})
            return _send(h, 200, PAGE.encode(), "text/html; charset=utf-8", {"ETag": '"v1"'})
        if path == "/dated.html":  # a date and no ETag: asked again with If-Modified-Since
            if h.headers.get("if-modified-since") == DATED:
                return _send(h, 304, b"", "text/html", {"Last-Modified": DATED})
            return _send(h, 200, PAGE.encode(), "text/html; charset=utf-8", {"Last-Modified": DATED})
        if path == "/data.json":
            return _send(h, 200, b'{"name":"pikachu","types":["electric"],"id":25}', "application/json")
        if path == "/plain.txt":
            return _send(h, 200, "just text, caf\u00e9\n".encode(), "text/plain; charset=utf-8")
        if path == "/latin1.html":  # labelled nowhere, not UTF-8: detected
            return _send(h, 200, LATIN1_PAGE.encode("latin-1"), "text/html")
        if path == "/mislabelled.html":  # says UTF-8 in the header, is Latin-1: decoded with replacement
            return _send(h, 200, LATIN1_PAGE.encode("latin-1"), "text/html; charset=utf-8")
        if path == "/doc.pdf":
            return _send(h, 200, b"%PDF-1.7\n" + bytes(range(256)) * 10, "application/pdf")
        if path == "/blob":
            return _send(h, 200, bytes(range(256)) * 10, "text/plain")  # says text, has NULs
        if path == "/long.txt":
            line = "".join(f"line {i:05d} of a long document\n" for i in range(8000))
            return _send(h, 200, line.encode(), "text/plain")
        if path == "/big":  # larger than any cap the tests set, with an honest Content-Length
            return _send(h, 200, b"x" * 3_000_000, "text/plain")
        if path == "/endless":  # no length, never ends: chunks until the client goes away
            return _endless(h)
        if path == "/slow":
            time.sleep(float(query.get("s", ["5"])[0]))
            return _send(h, 200, b"late", "text/plain")
        if path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            return _send(h, 302, b"", "text/plain", {"Location": f"/redirect/{left - 1}" if left > 1 else "/page.html"})
        if path.startswith("/slow-redirect/"):  # every hop slow, none slower than a whole deadline
            time.sleep(float(query.get("s", ["0.5"])[0]))
            left = int(path.rsplit("/", 1)[1])
            location = f"/slow-redirect/{left - 1}?s={query.get('s', ['0.5'])[0]}" if left > 1 else "/page.html"
            return _send(h, 302, b"", "text/plain", {"Location": location})
        if path == "/see-other":
            return _send(h, 303, b"", "text/plain", {"Location": "/echo"})
        if path == "/echo":
            return _json(h, {"method": h.command, "headers": dict(h.headers), "body": body.decode()})
        if path == "/trickle/search":
            return _trickle(h)
        if path == "/to":
            return _send(h, 302, b"", "text/plain", {"Location": query["u"][0]})
        if path == "/missing":
            return _send(h, 404, b"<h1>Not Found</h1>", "text/html")
        if path == "/search":  # SearXNG
            if query.get("format") != ["json"]:
                return _send(h, 403, b"Forbidden", "text/html")
            return _json(h, {"query": query["q"][0], "results": [{"title": t, "url": u, "content": c}
                                                                  for t, u, c in SEARCH_HITS]})
        if path == "/res/v1/web/search":  # Brave
            if h.headers.get("x-subscription-token") != self.key:
                return _json(h, {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID",
                                                                     "detail": "The provided subscription token is invalid.",
                                                                     "status": 401}}, 401)
            count = int(query.get("count", ["5"])[0])
            return _json(h, {"type": "search", "web": {"type": "search", "results": [
                {"title": t, "url": u, "description": c} for t, u, c in SEARCH_HITS][:count]}})
        if path == "/tavily/search" and h.command == "POST":
            if h.headers.get("authorization") != f"Bearer {self.key}":
                return _json(h, {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401)
            asked = json.loads(body)
            return _json(h, {"query": asked["query"], "results": [
                {"title": t, "url": u, "content": c, "score": 0.9} for t, u, c in SEARCH_HITS][:asked["max_results"]]})
        return _send(h, 404, b"not here", "text/plain")


def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str,
          headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        h.send_header(name, value)
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


def _json(h: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
    _send(h, status, json.dumps(value).encode(), "application/json")


def _endless(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b"y" * 65536
    try:
        while True:
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except OSError:
        return


def _trickle(h: BaseHTTPRequestHandler) -> None:
    """An answer that starts at once and never ends: a byte every 0.2 s, each read well inside any timeout."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "1000")
    h.end_headers()
    try:
        for _ in range(1000):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.2)
    except OSError:
        return


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-answer (a refused body, a timeout) is what the tests do on purpose
