"""An OAuth authorization server and an MCP server it protects, on 127.0.0.1, for the sign-in tests.

Two origins, as in the world: the authorization server on `--as-port` (RFC 8414 metadata, RFC 7591 registration, an
authorization endpoint that approves at once and redirects to the client's registered redirect URI, a token
endpoint for the code and refresh grants) and the MCP server (the SDK's MCPServer) on `--mcp-port`, which answers
401 with its protected resource metadata until it gets a bearer token the authorization server issued.

The checks are real and strict: a redirect URI must be one the client registered, exactly; PKCE must be S256 and the
verifier must hash to the challenge; a code is used once, by the client and redirect URI it was issued to; a client
given a secret must send it; an expired or revoked token is refused. Nothing is logged. `/test/*` lets a test look
and steer: the events (`log`), every secret issued (`secrets`), expiring every access token (`expire`), refusing
every refresh token (`refuse-refresh`).

Options: `--as-host ADDRESS` (the authorization server's address, named in the resource's metadata; default
127.0.0.1), `--expires-in N` (access token lifetime), `--authorization-endpoint URL` (advertised instead of our own:
the attack of CVE-2025-6514), `--issue-secrets` (register every client as confidential, `client_secret_post`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import secrets
import time
from urllib.parse import urlencode

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

parser = argparse.ArgumentParser()
parser.add_argument("--as-port", type=int, required=True)
parser.add_argument("--mcp-port", type=int, required=True)
parser.add_argument("--expires-in", type=int, default=3600)
parser.add_argument("--authorization-endpoint", default=None)
parser.add_argument("--issue-secrets", action="store_true")
parser.add_argument("--as-host", default="127.0.0.1")
options = parser.parse_args()

ISSUER = f"http://{options.as_host}:{options.as_port}"
RESOURCE = f"http://127.0.0.1:{options.mcp_port}/mcp"
clients: dict[str, dict] = {}
codes: dict[str, dict] = {}
access: dict[str, dict] = {}
refresh: dict[str, dict] = {}
events: list[dict] = []
issued: list[str] = []


def secret() -> str:
    value = secrets.token_urlsafe(24)
    issued.append(value)
    return value


def refuse(error: str, description: str, status: int = 400) -> JSONResponse:
    events.append({"event": "refused", "error": error, "description": description})
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


async def metadata(request: Request) -> Response:
    events.append({"event": "metadata"})
    return JSONResponse({
        "issuer": ISSUER,
        "authorization_endpoint": options.authorization_endpoint or f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "registration_endpoint": f"{ISSUER}/register",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        "authorization_response_iss_parameter_supported": True,
    })


async def register(request: Request) -> Response:
    body = await request.json()
    uris = body.get("redirect_uris") or []
    if not uris or not all(u.startswith("http://127.0.0.1:") for u in uris):
        return refuse("invalid_redirect_uri", "loopback redirect URIs only")
    client = {"client_id": f"client-{len(clients) + 1}", "redirect_uris": uris,
              "grant_types": body.get("grant_types", ["authorization_code", "refresh_token"]),
              "response_types": ["code"], "client_name": body.get("client_name"),
              "token_endpoint_auth_method": "client_secret_post" if options.issue_secrets else "none"}
    if options.issue_secrets:
        client["client_secret"] = secret()
    clients[client["client_id"]] = client
    events.append({"event": "register", "client_id": client["client_id"], "redirect_uris": uris})
    return JSONResponse(client, status_code=201)


async def authorize(request: Request) -> Response:
    q = request.query_params
    client = clients.get(q.get("client_id", ""))
    events.append({"event": "authorize", "client_id": q.get("client_id"), "redirect_uri": q.get("redirect_uri"),
                   "method": q.get("code_challenge_method"), "resource": q.get("resource")})
    if client is None:
        return refuse("invalid_client", "unknown client")
    if q.get("redirect_uri") not in client["redirect_uris"]:
        return refuse("invalid_request", "redirect_uri is not one the client registered")
    if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
        return refuse("invalid_request", "the authorization code with PKCE S256 only")
    code = secret()
    codes[code] = {"client_id": client["client_id"], "redirect_uri": q["redirect_uri"],
                   "challenge": q["code_challenge"], "resource": q.get("resource")}
    answer = {"code": code, "iss": ISSUER, **({"state": q["state"]} if "state" in q else {})}
    return RedirectResponse(f"{q['redirect_uri']}?{urlencode(answer)}", status_code=302)


def tokens_for(client_id: str) -> dict:
    token, again = secret(), secret()
    access[token] = {"client_id": client_id, "expires_at": time.time() + options.expires_in}
    refresh[again] = {"client_id": client_id}
    return {"access_token": token, "token_type": "Bearer", "expires_in": options.expires_in,
            "refresh_token": again, "scope": "tools"}


async def token(request: Request) -> Response:
    form = await request.form()
    client = clients.get(str(form.get("client_id", "")))
    if client is None:
        return refuse("invalid_client", "unknown client", 401)
    if "client_secret" in client and form.get("client_secret") != client["client_secret"]:
        return refuse("invalid_client", "wrong or missing client secret", 401)
    grant = form.get("grant_type")
    events.append({"event": "token", "grant": grant, "client_id": client["client_id"]})
    if grant == "authorization_code":
        issued_for = codes.pop(str(form.get("code", "")), None)
        if issued_for is None or issued_for["client_id"] != client["client_id"]:
            return refuse("invalid_grant", "unknown or used code")
        if form.get("redirect_uri") != issued_for["redirect_uri"]:
            return refuse("invalid_grant", "redirect_uri differs from the authorization request")
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if not 43 <= len(verifier) <= 128 or digest != issued_for["challenge"]:
            return refuse("invalid_grant", "PKCE verification failed")
        return JSONResponse(tokens_for(client["client_id"]), headers={"Cache-Control": "no-store"})
    if grant == "refresh_token":
        old = refresh.pop(str(form.get("refresh_token", "")), None)
        if old is None or old["client_id"] != client["client_id"] or old.get("refused"):
            return refuse("invalid_grant", "unknown or revoked refresh token")
        return JSONResponse(tokens_for(client["client_id"]), headers={"Cache-Control": "no-store"})
    return refuse("unsupported_grant_type", str(grant))


async def test_log(request: Request) -> Response:
    return JSONResponse(events)


async def test_secrets(request: Request) -> Response:
    return JSONResponse(issued)


async def test_expire(request: Request) -> Response:
    for record in access.values():
        record["expires_at"] = 0
    return JSONResponse({"expired": len(access)})


async def test_refuse_refresh(request: Request) -> Response:
    for record in refresh.values():
        record["refused"] = True
    return JSONResponse({"refused": len(refresh)})


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        record = access.get(token)
        if record is None or record["expires_at"] < time.time():
            events.append({"event": "bearer refused"})
            return None
        return AccessToken(token=token, client_id=record["client_id"], scopes=["tools"],
                           expires_at=int(record["expires_at"]), resource=RESOURCE)


mcp = MCPServer("guarded", log_level="WARNING", token_verifier=Verifier(),
                auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=True))


@mcp.tool()
def echo(text: str) -> str:
    """Say the text back (only to a signed-in client)."""
    return text


@mcp.tool()
def whoami() -> str:
    """Which client called, and (a careless server) the token it called with."""
    token = get_access_token()
    return f"client {token.client_id} with token {token.token}" if token else "nobody"


authorization_server = Starlette(routes=[
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/register", register, methods=["POST"]),
    Route("/authorize", authorize),
    Route("/token", token, methods=["POST"]),
    Route("/test/log", test_log),
    Route("/test/secrets", test_secrets),
    Route("/test/expire", test_expire, methods=["POST"]),
    Route("/test/refuse-refresh", test_refuse_refresh, methods=["POST"]),
])


async def main() -> None:
    def server(app, host: str, port: int) -> uvicorn.Server:
        return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                             access_log=False, lifespan="on"))

    await asyncio.gather(server(authorization_server, options.as_host, options.as_port).serve(),
                         server(mcp.streamable_http_app(), "127.0.0.1", options.mcp_port).serve())


asyncio.run(main())
