"""Learning an API: the document read from a URL (under web_fetch's policy) or a file, its operations, the hosts
they will call checked, what is shown before it is stored (the `learn` preview) and what changed since last time.

The hosts a learned API may call are its servers' hosts, and each is refused here, before anyone is asked, when:
it is not https and the user has not listed that exact host in `network.allow`; it is denied, or a private,
loopback, link-local or metadata address the user has not listed exactly (network policy); or, for a document
fetched from the web, it is another host than the one the document came from and the user has not allowed it (a
document on evil.example cannot make Sunwell call your bank's API with your key). At call time every request is
checked again, after DNS (tools/learned/calls.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sunwell.hidden_text import strip_hidden_in
from sunwell.tools.base import ToolFailure
from sunwell.tools.learned.document import API_NAME, NotAnApi, parse_text, read_api
from sunwell.tools.learned.store import DEFAULT_RATE, OFFER_LIMIT, LearnedApi
from sunwell.tools.network.fetch import Elsewhere, fetch
from sunwell.tools.network.urls import Target, UrlRefused, parse_url

PREVIEW_OPERATIONS = 200
TAG_OPTIONS = 8
"""Tags offered as the question's options (most operations first); the user may type any other."""
AskTags = Callable[[str, list[str]], Awaitable[str | None]]
"""(question, options) -> the user's answer, None when none came: the client port's `ask` for the call
(tools/handlers/questions.py `ask_person`)."""


def check_name(name: str, taken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    if not API_NAME.fullmatch(name):
        raise ToolFailure("validation", f"the API name {name!r} must be 1-30 lower-case letters, digits or '-', "
                          "starting with a letter (its tools are named NAME__OPERATION)")
    if name in taken:
        raise ToolFailure("validation", f"{name!r} is the name of an MCP server; choose another name")


def is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


async def read_source(source: str, network: Any, read_file: Any) -> tuple[str, Target | None]:
    """The document's text and, for a URL, where it came from. `read_file(path) -> str` reads a file source."""
    if not is_url(source):
        return await asyncio.to_thread(read_file, source), None
    try:
        where = parse_url(source)
    except UrlRefused as exc:
        raise ToolFailure("permission", f"the source URL is refused: {exc}") from None
    if refusal := network.refusal(where):
        raise ToolFailure("permission", f"the source URL is refused: {refusal}")
    fetched = await fetch(where, network)
    if isinstance(fetched, Elsewhere):
        raise ToolFailure("permission", f"{fetched.url} redirects to {fetched.location}, another host; learn from "
                          "that URL if it is the document you mean")
    return fetched.body.decode("utf-8", "replace"), parse_url(fetched.url)


async def learn(text: str, name: str, source: str, origin: Target | None, network: Any,
                tags: list[str] | None, rate: int = DEFAULT_RATE, ask: AskTags | None = None) -> LearnedApi:
    """The API the document `text` describes, its hosts checked (module docstring); ToolFailure `validation`
    for a document that is not one, `permission` for a host it may not call. With more operations than are
    offered at once and no `tags`, the user is asked which tags to offer when `ask` can reach them."""
    try:
        # what the model reads of it (summaries, descriptions, parameters) never holds words a person cannot see
        data, hidden = strip_hidden_in(parse_text(text))
        api = await asyncio.to_thread(read_api, data, name, origin.url if origin else None)
    except NotAnApi as exc:
        raise ToolFailure("validation", f"{source} cannot be learned: {exc}") from None
    if not api.operations:
        raise ToolFailure("validation", f"{source} has no operation Sunwell can call"
                          + (f" ({api.problems[0]})" if api.problems else ""))
    hosts: list[str] = []
    for server in api.servers:
        host = check_server(server, origin, network)
        if host not in hosts:
            hosts.append(host)
    learned = LearnedApi(name=name, source=source, title=api.title, version=api.version, hosts=hosts,
                         operations=api.operations, schemes=api.schemes, tags=None, rate_per_min=rate,
                         digest=hashlib.sha256(text.encode()).hexdigest(),
                         learned_at=datetime.now(UTC).isoformat(timespec="seconds"), hidden=hidden)
    if not tags and len(learned.operations) > OFFER_LIMIT and ask is not None:
        tags = await ask_tags(learned, ask)
    return choose_tags(learned, tags)


async def ask_tags(api: LearnedApi, ask: AskTags) -> list[str] | None:
    """The tags the user names for `api` (checked by choose_tags, like the model's); None for no answer. An option
    is a tag with its count, e.g. `pokemon (20)`; typed, several tags are comma-separated."""
    counts = api.tag_counts()
    shown = sorted(counts.items(), key=lambda item: -item[1])[:TAG_OPTIONS]
    labels = {f"{tag} ({count})": tag for tag, count in shown}
    question = (f"Learning the API {api.name} ({api.title}): {len(api.operations):,} operations, more than the "
                f"{OFFER_LIMIT} offered at once. The operations of which tags should be offered? Pick one, or type "
                f"several separated by commas (tags: {_listed(counts)}).")
    answer = ((await ask(question, list(labels))) or "").strip()
    if answer in labels:  # a button: the whole label, even if the tag holds a comma
        return [labels[answer]]
    chosen = [labels.get(part.strip(), _COUNTED.sub("", part.strip())) for part in answer.split(",")]
    return [tag for tag in dict.fromkeys(chosen) if tag] or None


_COUNTED = re.compile(r"\s*\(\d[\d,]*\)$")
"""The count a label adds to a tag, typed back with it (`berry (12), item`)."""


def choose_tags(api: LearnedApi, tags: list[str] | None) -> LearnedApi:
    """`api` offering the operations of `tags` (None: all, when there are at most OFFER_LIMIT)."""
    counts = api.tag_counts()
    if tags:
        unknown = [tag for tag in tags if tag not in counts]
        if unknown:
            raise ToolFailure("validation", f"no operation has the tag {', '.join(unknown)}; tags: {_listed(counts)}")
        api.tags = list(tags)
    elif len(api.operations) > OFFER_LIMIT:
        raise ToolFailure("validation", f"{api.name} has {len(api.operations):,} operations, more than "
                          f"{OFFER_LIMIT} are offered at once: choose the tags to offer ({_listed(counts)})",
                          suggestion="learn it again with `tags`: the few tags the user needs")
    return api


def _listed(counts: dict[str, int]) -> str:
    shown = sorted(counts.items(), key=lambda item: -item[1])[:40]
    more = f", and {len(counts) - 40} more" if len(counts) > 40 else ""
    return ", ".join(f"{tag} ({count})" for tag, count in shown) + more


def check_server(server: str, origin: Target | None, network: Any) -> str:
    """The host of `server` if a learned API may call it (module docstring), else ToolFailure `permission`."""
    try:
        where = parse_url(server)
    except UrlRefused as exc:
        raise ToolFailure("permission", f"the document's server {server!r} is refused: {exc}") from None
    if refusal := network.refusal(where):
        raise ToolFailure("permission", f"the document's server {where.host} is refused: {refusal}")
    listed = network.rules.listed_exactly(where)
    if origin is not None and where.host != origin.host and not (listed or network.allowed(where)):
        raise ToolFailure("permission", f"the document came from {origin.host} but its server is {where.host}, "
                          "another host; learned only when the user allows that host (network.allow), or from a "
                          "file the user chose")
    if where.scheme != "https" and not listed:
        raise ToolFailure("permission", f"the document's server {where.origin} is not https; a learned API is "
                          "called over http only when the user lists that exact host in network.allow")
    return where.host


def preview(api: LearnedApi, previous: LearnedApi | None = None) -> dict[str, Any]:
    """The `learn` approval preview (docs/sidecar.md "LearnPreview"): the operations offered and the hosts;
    `changes` when re-learning."""
    shown = {"kind": "learn", "name": api.name, "hosts": api.hosts,
             "operations": [{"tool": op.tool, "method": op.method, "path": op.path, "summary": op.summary}
                            for op in api.offered()[:PREVIEW_OPERATIONS]]}
    if previous is not None:
        shown["changes"] = changes(previous, api)
    return shown


def changes(before: LearnedApi, after: LearnedApi) -> dict[str, list[str]]:
    """What re-learning changes, by tool name: added, removed, changed (method, path, parameters or server)."""
    old = {op.tool: op for op in before.operations}
    new = {op.tool: op for op in after.operations}

    def shape(op: Any) -> tuple[Any, ...]:
        return op.method, op.path, op.server, repr(op.schema), op.security
    found = {"added": [t for t in new if t not in old], "removed": [t for t in old if t not in new],
             "changed": [t for t in new if t in old and shape(new[t]) != shape(old[t])]}
    if before.hosts != after.hosts:
        found["hosts"] = [f"{', '.join(before.hosts)} -> {', '.join(after.hosts)}"]
    return found


def read_workspace_file(jail: Any) -> Any:
    def read(path: str) -> str:
        real = jail.resolve(path)
        if real.stat().st_size > 20_000_000:
            raise ToolFailure("validation", f"{path} is larger than 20 MB")
        return Path(real).read_text(encoding="utf-8", errors="replace")
    return read
