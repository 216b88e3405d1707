"""Learned APIs as Sunwell tools: `learn_api`, and a tool `NAME__OPERATION` per operation offered.

Like an MCP server's tools (tools/mcp/remote_tools.py), they join the catalogue, so trust, a lens' `allowed_tools`,
`--tools` and dry runs apply as to any tool. An operation's tool has source `learned`, risk `network`, trust
`read_only`; its subject is its URL without credentials, judged by the network policy before anything is asked or
sent. GET and HEAD run without asking (the hosts were approved when the API was learned); any other method is
asked every time, even on a host the user allowed, unless allowed for the session (that exact tool). In a small
window, fitting leaves out the learned tools that share no word with the request before a core tool loses a word
(models/fitting.py `topical`); those the request is about are trimmed like any other.

`learn_api` is asked like a write: its `learn` preview lists the operations and the hosts; no session rule or
allowlist skips it (`--approve auto` and `deny` answer it). The document is read in the preview, so what the user
approves is what is stored (for a large API with no `tags`, the tags the user picks when asked in the preview);
from the web only from a host the user allowed (`network.allow`, or for the session by fetching the document with
web_fetch first): reading it is a request like any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import Field

from sunwell.config import Settings, user_config_path
from sunwell.config.learned_entries import remember
from sunwell.hidden_text import removed_message
from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Output, Tool, ToolContext, ToolFailure, ToolReturn, Trust
from sunwell.tools.handlers.questions import ask_person
from sunwell.tools.learned.calls import (
    Exchange,
    RateLimit,
    client_credentials,
    credentials_for,
    render,
    send,
    target,
)
from sunwell.tools.learned.credentials import Credentials
from sunwell.tools.learned.document import Operation, Scheme
from sunwell.tools.learned.learning import (
    check_name,
    is_url,
    learn,
    preview,
    read_source,
    read_workspace_file,
)
from sunwell.tools.learned.store import DEFAULT_RATE, LearnedApi, LearnedStore
from sunwell.tools.mcp.naming import server_prefix
from sunwell.tools.network.urls import UrlRefused, parse_url
from sunwell.tools.subject import Subject
from sunwell.wire.results import ApiAnswer

READS = ("GET", "HEAD")
HEADER_ROOM = 600


class LearnApiArguments(ToolArguments):
    source: str = Field(description="The URL or workspace path of an OpenAPI 3.x or Swagger 2.0 document.")
    name: str = Field(description="A short lower-case name for the API; its tools are named NAME__OPERATION.")
    tags: list[str] | None = Field(None, description="Offer only the operations with these tags (a large API).")

    def subject(self) -> Subject:
        if not is_url(self.source):
            return Subject(reads=(self.source,))
        try:
            return Subject(web=parse_url(self.source), asked=True)
        except UrlRefused as exc:
            raise ToolFailure("permission", f"learn_api refused the source URL: {exc}") from None


class LearnedApis:
    """The learned APIs of the user's data, as tools; what their calls share (credentials, rate limits)."""

    def __init__(self, data_dir: Path, rates: dict[str, int] | None = None,
                 on_learned: Callable[[LearnedApi], None] | None = None) -> None:
        self.store = LearnedStore(data_dir)
        self.credentials = Credentials(data_dir)
        self.rates = rates or {}
        """rate_per_min by API name, from the user config (`learned_apis`)."""
        self.limits = RateLimit()
        self.on_learned = on_learned
        self.taken: set[str] = set()
        """Names an API may not take (the MCP servers')."""
        self.changes = 0
        """Counts the APIs stored and forgotten: a running turn offers their tools again when it moves."""
        self._pending: dict[str, LearnedApi] = {}
        self._tokens: dict[tuple[str, str], str] = {}

    def configure(self, settings: Settings) -> LearnedApis:
        """The user's settings, new or changed: the data dir the APIs are read from (the editor's may change),
        their rates, the MCP servers' names."""
        data_dir = Path(settings.data_dir or ".")
        if self.store.folder != data_dir / "learned":
            self.store = LearnedStore(data_dir)
            self.credentials = Credentials(data_dir)
        self.rates = {name: entry.rate_per_min for name, entry in settings.learned_apis.items()}
        self.taken = set(settings.mcp_servers)
        return self

    def apis(self) -> list[LearnedApi]:
        return self.store.all()

    def tool_patterns(self) -> list[str]:
        return ["learn_api", *(server_prefix(name) + "*" for name in self.store.names())]

    def tools(self) -> list[Tool]:
        """learn_api and every offered operation's tool."""
        tools = [self.learn_tool()]
        for api in self.apis():
            if api.name in self.taken:
                continue
            tools += [self._tool(api, op) for op in api.offered()]
        return tools

    # ---- an operation as a tool --------------------------------------------------------------------------------

    def _tool(self, api: LearnedApi, op: Operation) -> Tool:
        reads = op.method in READS
        words = op.summary or op.description or f"{op.method} {op.path}"
        extra = op.description if op.summary and op.description and op.description != op.summary else ""
        description = f"{words}{'.' if not words.endswith('.') else ''} {extra}".strip()
        description += f" ({op.method} {op.path} of the learned API {api.name}"
        description += ", asks the user)" if not reads else ")"

        async def handler(args: dict[str, Any], ctx: ToolContext) -> Output:
            return await self._call(api, op, args, ctx)

        def subject(args: dict[str, Any]) -> Subject:
            return Subject(web=target(op, args), asked=not reads)

        def shown(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
            return {"kind": "tool", "server": api.name, "tool": op.tool, "arguments": args}

        return Tool.dynamic(op.schema, handler, name=op.tool, description=description, subject=subject,
                            preview=shown, min_trust=Trust.read_only, approval="auto" if reads else "ask",
                            risk="network", read_only=reads, source="learned", timeout=150.0)

    async def _call(self, api: LearnedApi, op: Operation, args: dict[str, Any], ctx: ToolContext) -> Output:
        if ctx.network is None:
            raise ToolFailure("unsupported", f"{op.tool}: no network here")
        if message := self.limits.check(api.name, self.rates.get(api.name, api.rate_per_min)):
            raise ToolFailure("rate_limit", message, suggestion="wait, or make fewer calls")
        secrets = credentials_for(op, api.schemes, lambda scheme: self.credentials.get(api.name, scheme), api.name)
        values = [value for _, value in secrets]

        def mask(text: str) -> str:
            for value in values:
                text = text.replace(value, "[REDACTED]")
            return ctx.secrets.mask(text) if ctx.secrets is not None else text

        try:
            status, kind, data, url = await send(op, args, ctx.network, secrets, self._oauth(api, ctx))
        except ToolFailure as failure:
            raise ToolFailure(failure.error.code, mask(failure.error.message), failure.error.suggestion) from None
        text = render(op, status, kind, data, url, max(ctx.max_output_bytes - HEADER_ROOM, 1_000), mask)
        return ToolReturn.text(text, ApiAnswer(api=api.name, method=op.method, url=mask(url), status=status,
                                               content_type=kind))

    def _oauth(self, api: LearnedApi, ctx: ToolContext) -> Callable[[Scheme, str, Exchange], Any]:
        async def token(scheme: Scheme, value: str, exchange: Exchange) -> str:
            kept = self._tokens.get((api.name, scheme.name))
            if kept:
                return kept
            fetched = await client_credentials(scheme, value, api.name, api.hosts, ctx.network, exchange)
            self._tokens[(api.name, scheme.name)] = fetched
            return fetched
        return token

    # ---- learn_api ---------------------------------------------------------------------------------------------

    def learn_tool(self) -> Tool[LearnApiArguments]:
        return Tool.of(
            LearnApiArguments, self._learn_call,
            name="learn_api",
            description=(
                "Learn a web API from its OpenAPI (3.x) or Swagger 2.0 document, by URL or workspace path: once the "
                "user approves, each operation becomes a tool NAME__OPERATION, offered from your next request on, "
                "in every session. The user is always asked; a document from the web is read only from a host the "
                "user allowed (fetch it with web_fetch first if you were refused). "
                'Example: {"source": "https://pokeapi.co/openapi.yml", "name": "pokeapi"}.'),
            preview=self._learn_preview, min_trust=Trust.read_only, approval="ask", risk="network", timeout=180.0)

    async def _learned(self, arguments: LearnApiArguments, ctx: ToolContext) -> LearnedApi:
        check_name(arguments.name, self.taken)
        key = _key(arguments)
        if key in self._pending:
            return self._pending[key]
        if ctx.network is None:
            raise ToolFailure("unsupported", "learn_api: no network here")
        if is_url(arguments.source) and not ctx.network.allowed(parse_url(arguments.source)):
            raise ToolFailure("permission", f"{parse_url(arguments.source).host} is not a host the user allowed, so "
                              "the document was not read",
                              suggestion="fetch the document with web_fetch first (the user is asked for its host, "
                                         "and may allow it for the session), then call learn_api again")
        text, origin = await read_source(arguments.source, ctx.network, read_workspace_file(ctx.jail))
        ask = partial(ask_person, ctx) if ctx.client.answers("ask") else None  # which tags, for a large API
        api = await learn(text, arguments.name, arguments.source, origin, ctx.network, arguments.tags,
                          self.rates.get(arguments.name, DEFAULT_RATE), ask)
        if api.hidden and ctx.turn.notify is not None:
            ctx.turn.notify("warning", "hidden_characters", removed_message(f"learned API {api.name}", api.hidden))
        self._pending[key] = api
        return api

    async def _learn_preview(self, args: LearnApiArguments, ctx: ToolContext) -> dict[str, Any]:
        self._pending.pop(_key(args), None)  # what is asked is the document as it is now
        api = await self._learned(args, ctx)
        return preview(api, self.store.get(api.name))

    async def _learn_call(self, args: LearnApiArguments, ctx: ToolContext) -> str:
        api = await self._learned(args, ctx)
        self._pending.clear()
        self.save(api)
        needed = [scheme.name for scheme in api.schemes
                  if any(scheme.name in alt for op in api.offered() for alt in op.security)
                  and not self.credentials.get(api.name, scheme.name)]
        lines = [(f"Learned {api.title} as {api.name}: {len(api.offered())} tools ({api.name}__...) calling "
                  f"{', '.join(api.hosts)}, offered from your next request on.")]
        if needed:
            lines.append(f"It needs the credential {', '.join(needed)}: ask the user to run `sunwell tools learn "
                         f"{api.source} --name {api.name}` in a terminal (or the command Sunwell: Learned APIs in "
                         "VS Code) to give it; never ask for it in the chat.")
        return "\n".join(lines)

    def save(self, api: LearnedApi) -> None:
        self.store.save(api)
        self.changes += 1
        if self.on_learned is not None:
            self.on_learned(api)

    def forget(self, name: str) -> bool:
        api = self.store.get(name)
        if api is not None:
            self.credentials.forget(name, [scheme.name for scheme in api.schemes])
        self.changes += 1
        return self.store.forget(name)


def _key(arguments: LearnApiArguments) -> str:
    """The call a preview read its document for: the same arguments in the handler find it again."""
    return json.dumps(arguments.model_dump(exclude_unset=True), sort_keys=True)


def remember_learned(api: LearnedApi) -> None:
    """Name a newly learned API in the user config (`learned_apis`), as `sunwell tools learn` does (docs/cli.md
    "sunwell tools learn"); a file that cannot be edited safely is left alone (the API is learned all the same)."""

    try:
        remember(user_config_path(), api.name, api.source, api.rate_per_min)
    except OSError:
        pass
