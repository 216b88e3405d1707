"""What the engine asks the person on the other side, and their answers (docs/sidecar.md `sunwell/approve`, `sunwell/ask`,
`sunwell/elicit`, `sunwell/codeIntel`, `sunwell/secret`): the requests of the client port (wire/client.py) as they
travel. The approval request itself is wire/approval.py. The extension's TypeScript types are generated from these
models (scripts/gen-protocol-types.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sunwell.vocabulary import Decision
from sunwell.wire.messages import WireModel


class ApproveResult(WireModel):
    decision: Decision
    note: str | None = None
    """With `deny`: a few words from the user for the model (why, or what to do instead). Optional: a client that
    sends none, or a sidecar that reads none, still agree on the decision."""


class AskParams(WireModel):
    """`sunwell/ask`: a question of the model's `ask_user` call, for the person."""

    session: str
    turn: str
    call_id: str
    question: str
    options: list[str] = Field(default_factory=list)
    """Answers to offer as buttons; the person may always type another."""


class AskResult(WireModel):
    answer: str | None
    """The person's answer; null: they declined to answer."""


class SecretParams(WireModel):
    """`sunwell/secret`: one secret of the sidecar's own in the client's secret storage. The client keeps it under a
    prefix of its own, so no key the sidecar names reaches another secret (an API key)."""

    action: Literal["get", "store", "delete"]
    key: str = Field(min_length=1, max_length=2000)
    value: str | None = None
    """`store` only."""


class SecretResult(WireModel):
    value: str | None
    """`get`: the value, null when none is kept; `store`, `delete`: null."""


CodeIntelKind = Literal["diagnostics", "symbols", "definition", "references"]


class CodeIntelParams(WireModel):
    """`sunwell/codeIntel`: what the code intelligence tools ask the editor."""

    kind: CodeIntelKind
    path: str | None = None
    """Workspace-relative: the file (diagnostics; where `symbol` is, for definition and references)."""
    symbol: str | None = None
    query: str | None = None
    """Workspace symbols: the name or part of it."""


class CodeLocation(WireModel):
    path: str
    """As the client gives it: absolute, a `file:` URI, or workspace-relative; the sidecar puts it through the jail."""
    line: int
    """1-based."""
    column: int = 1
    """1-based."""
    text: str = ""
    """A diagnostic's message, a symbol's name and kind; the sidecar replaces it by the line's text."""


class CodeIntelResult(WireModel):
    items: list[CodeLocation]


class ElicitParams(WireModel):
    """`sunwell/elicit`: an MCP server's question to the person during a call (tools/mcp/elicitation.py)."""

    session: str
    server: str
    """The server that asks: what the person sees names it, its question is its own words, never Sunwell's."""
    message: str
    """The server's question, shown as its words."""
    schema_: dict[str, Any] = Field(alias="schema")
    """The server's form (MCP `requestedSchema`): a flat object of strings, numbers, booleans and enums."""

    def fields(self) -> list[tuple[str, dict[str, Any], bool]]:
        """(name, property, required) of the form's fields, in the schema's order."""
        required = set(self.schema_.get("required") or [])
        properties = self.schema_.get("properties") or {}
        return [(name, prop if isinstance(prop, dict) else {}, name in required) for name, prop in properties.items()]


class ElicitResult(WireModel):
    action: Literal["accept", "decline", "cancel"]
    """`accept` (the person filled the form in), `decline` (said no), `cancel` (dismissed it, or no answer came)."""
    content: dict[str, Any] | None = None
    """With `accept`: the form's values, checked against the server's schema before the server sees them."""
