"""Context mentions: what a user attaches to a line with `@` (a workspace file, the editor's selection, the
workspace's problems, the terminal's last output), sent with it to the model within a budget.

What is read becomes the attachments of the user's message (sunwell.wire.messages.Attachment), so that they stay in the
session's history like anything else the user said, are counted by the context budget and compacted with the rest,
and `::context` and a replay list them without reading them back out of text; a model reads each after the line in an
`<attachment>` block that names it. A file is read here, through the jail (a blocked or outside path is refused as
the tools refuse it); what only the editor knows (a selection, its problems, a terminal) comes as text. Together
they may take at most a quarter of the context window; past that each is cut, and says so. Characters that hide
text are shown as escapes, as in a tool's result (sunwell/hidden_text.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sunwell.hidden_text import reveal
from sunwell.models.tokens import BYTES_PER_TOKEN, text_tokens
from sunwell.tools.base import ToolFailure
from sunwell.vocabulary import MentionKind
from sunwell.wire.messages import Attachment, Message, UserMessage

if TYPE_CHECKING:
    from sunwell.tools.workspace.jail import Jail

SHARE_OF_WINDOW = 0.25
"""What all of one line's attachments may take of the context window."""
MAX_FILE_BYTES = 2_000_000
"""A larger file is not read at all (the budget would cut it to a sliver anyway)."""
_AT_PATH = re.compile(r"(?<![\w@/.])@((?:[\w.-]+/)*[\w.-]+)")


@dataclass
class Mention:
    kind: MentionKind
    label: str
    """As the user saw it: `@src/app.py`, `@selection`."""
    path: str | None = None
    """A file: workspace-relative (read here). A selection: the file it is in (for the model's orientation)."""
    text: str | None = None
    """What the editor sent: the selection, the problems, the terminal's output. None for a file."""
    server: str | None = None
    uri: str | None = None
    """A resource (`@SERVER:URI`, agent/resource_mentions.py): its MCP server and URI; `text` once read."""


@dataclass
class Attached:
    label: str
    kind: str
    tokens: int


def read_mentions(mentions: Sequence[Mention], jail: Jail, window: int) -> list[Attachment]:
    """What `mentions` attach to a line, read now, within SHARE_OF_WINDOW of `window` tokens."""
    if not mentions:
        return []
    bodies = [reveal(_body(mention, jail)) for mention in mentions]  # as a tool's result shows them
    budget = int(window * SHARE_OF_WINDOW * BYTES_PER_TOKEN)
    share = max(budget // len(bodies), 200)
    attachments = []
    for mention, body in zip(mentions, bodies, strict=True):
        size = len(body.encode("utf-8", "replace"))
        if size > share:
            cut = body.encode("utf-8", "replace")[:share].decode("utf-8", "ignore")
            body = f"{cut}\n… (cut to {share:,} of {size:,} bytes to fit the context window)"
        attachments.append(Attachment(kind=mention.kind, label=mention.label, path=mention.path, body=body))
    return attachments


def attachments(history: Sequence[Message]) -> list[Attached]:
    """What the users' messages of a history carry, in order (for `::context`)."""
    return [Attached(attachment.label, attachment.kind, text_tokens(attachment.body))
            for message in history if isinstance(message, UserMessage) for attachment in message.attachments]


def mentioned_paths(text: str, jail: Jail) -> list[Mention]:
    """`@path` words of a prompt (the CLI's mentions) that name a file of the workspace; others stay plain words
    (an e-mail address, `@decorator`, a path that does not exist)."""
    found: dict[str, Mention] = {}
    for path in _AT_PATH.findall(text):
        path = path.rstrip(".")
        try:
            real = jail.resolve(path)
        except ToolFailure:
            continue
        if real.is_file():
            found.setdefault(path, Mention(kind="file", label=f"@{path}", path=path))
    return list(found.values())


def _body(mention: Mention, jail: Jail) -> str:
    if mention.kind != "file":
        return mention.text or "(empty)"

    try:
        real = jail.resolve(mention.path or "")
        if not real.is_file():
            return "(not attached: not a file)"
        if real.stat().st_size > MAX_FILE_BYTES:
            return f"(not attached: {real.stat().st_size:,} bytes is too large; read parts of it with read_file)"
        data = real.read_bytes()
    except ToolFailure as failure:
        return f"(not attached: {failure.error.message})"
    except OSError as exc:
        return f"(not attached: {exc.strerror or exc})"
    if b"\0" in data[:8192]:
        return "(not attached: a binary file)"
    return data.decode("utf-8", "replace")
