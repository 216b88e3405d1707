"""The client port: the one door through which the engine asks the person on the other side of a front end.

Every request to the user is a typed request with an answer (STYLE.md 16, after codex's Op/Event protocol): approve a
call, answer a question (`ask_user`), fill in an MCP server's form, look up code intelligence in the editor, open a
page in the browser, keep a secret. Each front end implements the port once — the terminal (cli/client.py), the
sidecar (lsp/client.py, over `sunwell/approve`, `sunwell/ask`, …) — and hands it to the Engine's constructor; a
front end with no one to ask is `Headless`. A new kind of request adds a method and a `Request` name here, never a
callback field on the engine or a tool's context.

A front end says what it can answer in one way: `answers(request)`. The engine asks only what is answered (an
approval with no one to answer is denied by policy, a question fails at once, a form is declined, the code
intelligence tools are not offered, a sign-in names the command that does it, secrets go to the OS keyring); a
method called anyway raises `NoOneToAsk`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.messages import WireModel
from sunwell.wire.user_requests import (
    ApproveResult,
    AskParams,
    AskResult,
    CodeIntelParams,
    ElicitParams,
    ElicitResult,
    SecretParams,
    SecretResult,
)

Request = Literal["approve", "ask", "elicit", "codeIntel", "openUrl", "secrets"]


class OpenUrl(WireModel):
    """A page to show the person in their browser: an MCP server's sign-in (checked before it gets here,
    tools/mcp/sign_in_url.py)."""

    url: str
    server: str
    """Who wants it opened, for the front end's log."""


class NoOneToAsk(Exception):
    """Raised by a request the front end does not answer (`answers` says which it does)."""

    def __init__(self, request: Request) -> None:
        super().__init__(f"no one here answers {request}")
        self.request = request


class Client(Protocol):
    """The person on the other side, as the engine sees them."""

    secret_storage: str
    """Where `secret` keeps what it is given, as the user is told ("VS Code's secret storage")."""

    def answers(self, request: Request) -> bool:
        """Whether someone here answers `request`; asked each time (a client may announce more later)."""
        ...

    async def approve(self, request: ApprovalRequest) -> ApproveResult:
        """A risky call, or a server the workspace proposes: allow, deny (with a note) or allow for the session."""
        ...

    async def ask(self, request: AskParams) -> AskResult:
        """`ask_user`'s question; the answer is None when the person declined."""
        ...

    async def elicit(self, request: ElicitParams) -> ElicitResult:
        """An MCP server's form (checked against its schema afterwards, tools/mcp/elicitation.py)."""
        ...

    async def code_intel(self, request: CodeIntelParams) -> Any:
        """The editor's raw answer (`CodeIntelResult` when it behaves): the tools check each location themselves."""
        ...

    async def open_url(self, request: OpenUrl) -> bool:
        """Open a page for the person; whether it was shown (else the notice carries the URL)."""
        ...

    async def secret(self, request: SecretParams) -> SecretResult:
        """Get, store or delete one secret of Sunwell's in the front end's secret storage."""
        ...


class Headless:
    """A front end with no one to ask (a pipe, a script, a test): it answers nothing. Front ends derive from it and
    answer what they can."""

    secret_storage = "nowhere"

    def answers(self, request: Request) -> bool:
        return False

    async def approve(self, request: ApprovalRequest) -> ApproveResult:
        raise NoOneToAsk("approve")

    async def ask(self, request: AskParams) -> AskResult:
        raise NoOneToAsk("ask")

    async def elicit(self, request: ElicitParams) -> ElicitResult:
        raise NoOneToAsk("elicit")

    async def code_intel(self, request: CodeIntelParams) -> Any:
        raise NoOneToAsk("codeIntel")

    async def open_url(self, request: OpenUrl) -> bool:
        raise NoOneToAsk("openUrl")

    async def secret(self, request: SecretParams) -> SecretResult:
        raise NoOneToAsk("secrets")


HEADLESS: Client = Headless()
