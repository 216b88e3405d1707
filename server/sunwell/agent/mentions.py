"""Context mentions: what a user attaches to a line with `@` (a workspace file, the editor's selection, the
workspace's problems, the terminal's last output), sent with it to the model within a budget.

The attachments go into the user's message itself, after the line, each in an `<attachment>` block that names it,
so that they stay in the session's history like anything else the user said, are counted by the context budget and
compacted with the rest, and `::context` can list them. A file is read here, through the jail (a blocked or outside
path is refused as the tools refuse it); what only the editor knows (a selection, its problems, a terminal) comes as
text. Together they may take at most a quarter of the context window; past that each is cut, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sunwell.agent.context import BYTES_PER_TOKEN

if TYPE_CHECKING:
    from sunwell.messages import Message
    from sunwell.tools.jail import Jail

MentionKind = Literal["file", "selection", "problems", "terminal"]
SHARE_OF_WINDOW = 0.25
"""What all of one line's attachments may take of the context window."""
MAX_FILE_BYTES = 2_000_000
"""A larger file is not read at all (the budget would cut it to a sliver anyway)."""
HEADER = "[Attached by the user with @mentions]"
_BLOCK = re.compile(r'<attachment name="([^"]*)" kind="([a-z]+)"[^>]*>\n(.*?)\n</attachment>', re.DOTALL)
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


@dataclass
class Attached:
    label: str
    kind: str
    tokens: int


def attach(text: str, mentions: Sequence[Mention], jail: Jail, window: int) -> str:
    """The line with its attachments appended, within SHARE_OF_WINDOW of `window` tokens."""
    if not mentions:
        return text
    bodies = [_body(mention, jail) for mention in mentions]
    budget = int(window * SHARE_OF_WINDOW * BYTES_PER_TOKEN)
    share = max(budget // len(bodies), 200)
    blocks = []
    for mention, body in zip(mentions, bodies, strict=True):
        size = len(body.encode("utf-8", "replace"))
        if size > share:
            cut = body.encode("utf-8", "replace")[:share].decode("utf-8", "ignore")
            body = f"{cut}\n… (cut to {share:,} of {size:,} bytes to fit the context window)"
        where = f' path="{_attr(mention.path)}"' if mention.path else ""
        blocks.append(f'<attachment name="{_attr(mention.label)}" kind="{mention.kind}"{where}>\n{body}\n</attachment>')
    return "\n\n".join([text, HEADER, *blocks])


def attachments(history: Sequence[Message]) -> list[Attached]:
    """What the users' messages of a history carry, in order (for `::context`)."""
    from sunwell.agent.context import text_tokens
    from sunwell.messages import UserMessage

    found: list[Attached] = []
    for message in history:
        if isinstance(message, UserMessage) and HEADER in message.text:
            found += [Attached(label, kind, text_tokens(body)) for label, kind, body in _BLOCK.findall(message.text)]
    return found


def without_attachments(text: str) -> str:
    """The line as the user typed it (a replay shows it so; the attachments are listed beside it)."""
    at = text.find("\n\n" + HEADER)
    return text if at < 0 else text[:at]


def labels(text: str) -> list[str]:
    return [label for label, _, _ in _BLOCK.findall(text)] if HEADER in text else []


def mentioned_paths(text: str, jail: Jail) -> list[Mention]:
    """`@path` words of a prompt (the CLI's mentions) that name a file of the workspace; others stay plain words
    (an e-mail address, `@decorator`, a path that does not exist)."""
    from sunwell.tools.base import ToolFailure

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
    from sunwell.tools.base import ToolFailure

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


def _attr(value: str | None) -> str:
    return (value or "").replace('"', "'").replace("\n", " ")
