"""Two real APIs on 127.0.0.1 for the learned-API tests, each serving its own OpenAPI document.

A PokeAPI-shaped one (`/openapi.json`, OpenAPI 3.0 with `$ref`s, path and query parameters, pagination with
`limit`, `offset` and a `next` link), and a second one that needs an API key in the `X-Api-Key` header
(`/keyed/openapi.yaml`): its `/keyed/echo` answers with the request's headers and query (a server that echoes a
credential back), `/keyed/private` answers 401 with the key it got in its message, `/keyed/moved` redirects to
another host (`localhost`), `POST /keyed/notes` stores a note. `/auth/token` hands out an OAuth2 token for the
client credentials `client-1:client-secret-99`; `/auth/whoami` answers with the Authorization header it got. A third,
`/limits/openapi.json` (limits_document), tries a caller's limits: `/limits/big` declares a body of 2 MB (and stalls),
`/limits/endless` sends one without a length that ends only when the caller hangs up, `/limits/slow` answers after
`api.slow_seconds` (or when the server stops), `/limits/long` is a long JSON list, `HEAD /limits/status` answers with
headers only.

    with ApiServer() as api:
        api.url("/openapi.json")
        api.requests      # [(method, path, headers, body)] as received
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from web_server import SHOT_PNG

POKEMON = ["bulbasaur", "ivysaur", "venusaur", "charmander", "charmeleon", "charizard", "squirtle", "wartortle",
           "blastoise", "caterpie", "metapod", "butterfree", "weedle", "kakuna", "beedrill", "pidgey", "pidgeotto",
           "pidgeot", "rattata", "raticate", "spearow", "fearow", "ekans", "arbok", "pikachu"]
TYPES = {"pikachu": ["electric"], "bulbasaur": ["grass", "poison"], "charmander": ["fire"], "squirtle": ["water"]}
API_KEY = "kq-7d1e5b29c4a84f0e9b"
TOKEN = "at-4c9e2f7a1b3d5e6f"
QUERY_SECRET = "qs-9b2f61d7e04a3c58"


def pokeapi_document(base: str) -> dict[str, Any]:
    """PokeAPI's shape, small: `base` is the server URL (`http://127.0.0.1:PORT/api/v2`)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "PokeAPI", "version": "2.7.0", "description": "All the Pokémon data you'll ever need."},
        "servers": [{"url": base}],
        "paths": {
            "/pokemon/": {"get": {
                "operationId": "pokemon_list", "summary": "List Pokémon", "tags": ["pokemon"],
                "description": "A page of Pokémon names and URLs. Use `limit` and `offset` to page.",
                "parameters": [{"$ref": "#/components/parameters/Limit"}, {"$ref": "#/components/parameters/Offset"}],
                "responses": {"200": {"description": "A page", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/PaginatedList"}}}}}}},
            "/pokemon/{id}/": {
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "get": {"operationId": "pokemon_retrieve", "summary": "Get a Pokémon", "tags": ["pokemon"],
                        "description": "One Pokémon by name or national dex number: its types, height, weight.",
                        "responses": {"200": {"description": "The Pokémon", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Pokemon"}}}},
                            "404": {"description": "Not found"}}}},
            "/type/{id}/": {"get": {
                "operationId": "type_retrieve", "summary": "Get a type", "tags": ["types"],
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "responses": {"200": {"description": "The type"}}}},
        },
        "components": {
            "parameters": {
                "Id": {"name": "id", "in": "path", "required": True, "description": "Name or number.",
                       "schema": {"type": "string"}},
                "Limit": {"name": "limit", "in": "query", "description": "Results per page.",
                          "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                "Offset": {"name": "offset", "in": "query", "description": "Where the page starts.",
                           "schema": {"type": "integer", "minimum": 0}},
            },
            "schemas": {
                "NamedResource": {"type": "object", "properties": {"name": {"type": "string"},
                                                                   "url": {"type": "string"}}},
                "PaginatedList": {"type": "object", "properties": {
                    "count": {"type": "integer"}, "next": {"type": "string", "nullable": True},
                    "results": {"type": "array", "items": {"$ref": "#/components/schemas/NamedResource"}}}},
                "Pokemon": {"type": "object", "properties": {
                    "id": {"type": "integer"}, "name": {"type": "string"},
                    "evolves_to": {"$ref": "#/components/schemas/Pokemon"}}},  # recursive
            },
        },
    }


def keyed_document(base: str) -> str:
    """The second API, as YAML, with an API key scheme and a POST."""
    return f"""openapi: 3.0.3
info: {{title: Notes, version: "1"}}
servers: [{{url: "{base}"}}]
components:
  securitySchemes:
    key: {{type: apiKey, in: header, name: X-Api-Key}}
security: [{{key: []}}]
paths:
  /echo:
    get:
      operationId: echo
      summary: Echo the request
      parameters:
        - {{name: say, in: query, schema: {{type: string}}}}
        - {{name: X-Api-Key, in: header, schema: {{type: string}}}}
      responses: {{"200": {{description: ok}}}}
  /private:
    get: {{operationId: private, summary: A page the key does not open, responses: {{"401": {{description: refused}}}}}}
  /moved:
    get: {{operationId: moved, summary: Moved elsewhere, responses: {{"302": {{description: moved}}}}}}
  /notes:
    post:
      operationId: add_note
      summary: Store a note
      requestBody:
        required: true
        content:
          application/json:
            schema: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
      responses: {{"201": {{description: stored}}}}
"""


def limits_document(base: str) -> dict[str, Any]:
    """An API whose answers are too big, too slow or long; `base` is `http://127.0.0.1:PORT/limits`."""
    ok = {"200": {"description": "ok"}}
    return {"openapi": "3.0.3", "info": {"title": "Limits", "version": "1"}, "servers": [{"url": base}],
            "paths": {"/big": {"get": {"operationId": "big", "summary": "A 2 MB answer", "responses": ok}},
                      "/endless": {"get": {"operationId": "endless", "summary": "Never ends", "responses": ok}},
                      "/slow": {"get": {"operationId": "slow", "summary": "Answers late", "responses": ok}},
                      "/long": {"get": {"operationId": "long", "summary": "A long list", "responses": ok}},
                      "/status": {"head": {"operationId": "status", "summary": "Is it up", "responses": ok}},
                      "/chart": {"get": {"operationId": "chart", "summary": "A chart, as a PNG", "responses": ok}}}}


def two_keys_document(base: str) -> dict[str, Any]:
    """The keyed API's `/echo` (`base` is `http://127.0.0.1:PORT/keyed`) with two keys sent together: the header
    X-Api-Key and a query parameter `k` (named so that only its value, not its name, says it is a secret)."""
    return {"openapi": "3.0.3", "info": {"title": "Keyed", "version": "1"}, "servers": [{"url": base}],
            "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                                               "q": {"type": "apiKey", "in": "query", "name": "k"}}},
            "security": [{"key": [], "q": []}],
            "paths": {"/echo": {"get": {"operationId": "echo", "responses": {"200": {"description": "ok"}},
                                        "parameters": [{"name": "say", "in": "query", "schema": {"type": "string"}}]}}}}


class ApiServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.notes: list[Any] = []
        self.document_override: str | None = None
        self.slow_seconds = 30.0
        self.stopping = threading.Event()
        self.endless_sent = 0
        """Bytes /limits/endless wrote before the caller hung up."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append((self.command, self.path, dict(self.headers), body))
                server.route(self, body)

            do_GET = do_POST = do_HEAD = do_DELETE = _handle

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def route(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        if path == "/openapi.json":
            text = self.document_override or json.dumps(pokeapi_document(self.url("/api/v2")))
            return _send(h, 200, text.encode(), "application/json")
        if path == "/keyed/openapi.yaml":
            return _send(h, 200, keyed_document(self.url("/keyed")).encode(), "application/yaml")
        if path == "/api/v2/pokemon/":
            limit, offset = int(query.get("limit", 20)), int(query.get("offset", 0))
            page = POKEMON[offset:offset + limit]
            nxt = self.url(f"/api/v2/pokemon/?offset={offset + limit}&limit={limit}") \
                if offset + limit < len(POKEMON) else None
            return _json(h, {"count": len(POKEMON), "next": nxt, "previous": None, "results": [
                {"name": name, "url": self.url(f"/api/v2/pokemon/{POKEMON.index(name) + 1}/")} for name in page]})
        if path.startswith("/api/v2/pokemon/"):
            key = path.split("/")[4]
            name = POKEMON[int(key) - 1] if key.isdigit() and 0 < int(key) <= len(POKEMON) else key
            if name not in POKEMON:
                return _json(h, {"detail": "Not found."}, 404)
            return _json(h, {"id": POKEMON.index(name) + 1, "name": name, "height": 4, "weight": 60,
                             "types": [{"slot": i + 1, "type": {"name": t}} for i, t in enumerate(TYPES.get(name, ["normal"]))]})
        if path == "/auth/token" and h.command == "POST":  # OAuth2 client credentials, the client in basic auth
            if h.headers.get("authorization") != "Basic " + base64.b64encode(b"client-1:client-secret-99").decode():
                return _json(h, {"error": "invalid_client"}, 401)
            return _json(h, {"access_token": TOKEN, "token_type": "bearer", "expires_in": 3600})
        if path.startswith("/auth/whoami"):  # answers with the Authorization header it got
            return _json(h, {"authorization": h.headers.get("authorization")})
        if path.startswith("/limits/"):
            return self._limits(h, path)
        if path.startswith("/keyed/"):
            given = h.headers.get("x-api-key")
            if path == "/keyed/private":
                return _json(h, {"message": f"the key {given} does not open this page"}, 401)
            if given != API_KEY:
                return _json(h, {"message": "missing or wrong API key"}, 401)
            if path == "/keyed/echo":
                return _json(h, {"headers": dict(h.headers), "query": query})
            if path == "/keyed/moved":
                return _send(h, 302, b"", "text/plain", {"Location": f"http://localhost:{self.port}/keyed/echo"})
            if path == "/keyed/notes" and h.command == "POST":
                self.notes.append(json.loads(body))
                return _json(h, {"stored": len(self.notes)}, 201)
        return _json(h, {"detail": "Not found."}, 404)

    def _limits(self, h: BaseHTTPRequestHandler, path: str) -> None:
        if path == "/limits/openapi.json":
            return _json(h, limits_document(self.url("/limits")))
        if path == "/limits/big":  # declares 2 MB, sends a little, then stalls: only its length says it is big
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.send_header("Content-Length", "2000000")
            h.end_headers()
            h.wfile.write(b"x" * 1_000)
            h.wfile.flush()
            self.stopping.wait(30)
            return None
        if path == "/limits/chart":  # an image answer
            return _send(h, 200, SHOT_PNG, "image/png")
        if path == "/limits/endless":  # no length: the body ends when the connection does
            h.close_connection = True
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.end_headers()
            chunk = b"[" + b"1," * 32_768
            try:
                while self.endless_sent < 100_000_000 and not self.stopping.is_set():
                    h.wfile.write(chunk)
                    self.endless_sent += len(chunk)
            except OSError:
                pass
            return None
        if path == "/limits/slow":
            self.stopping.wait(self.slow_seconds)
            return _json(h, {"late": True})
        if path == "/limits/long":
            return _json(h, [{"id": i, "name": f"item {i:05}"} for i in range(5_000)])
        if path == "/limits/status":
            return _send(h, 200, b"", "text/plain", {"X-Status": "up"})
        return _json(h, {"detail": "Not found."}, 404)


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a caller that hung up mid-answer (a refused body, a timeout) is what the tests do on purpose


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
