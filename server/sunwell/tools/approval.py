"""Who says yes to a risky call: one small interface, a request in and a decision out.

The terminal answers it with a prompt, the sidecar with a `sunwell/approve` request to VS Code; `auto` and `deny`
modes, the command allowlist and allow-for-session rules answer it without asking anyone (`by: "policy"`).
Allow-for-session remembers the exact tool for writes and the exact command string for shell, never a prefix.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["allow", "deny", "allowSession"]
DECISIONS: tuple[str, ...] = ("allow", "deny", "allowSession")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApprovalRequest:
    session: str
    turn: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    risk: Literal["write", "shell", "network"]
    preview: dict[str, Any]
    """`{kind: "diff", path, before, after}` or `{kind: "command", command, cwd}`."""

    def wire(self) -> dict[str, Any]:
        return {"session": self.session, "turn": self.turn, "callId": self.call_id, "name": self.name,
                "arguments": self.arguments, "risk": self.risk, "preview": self.preview}


Asker = Callable[[ApprovalRequest], Awaitable[str]]
"""Asks a person; returns a decision string (anything unknown counts as deny)."""


@dataclass
class ApprovalPolicy:
    mode: Literal["ask", "auto", "deny"] = "deny"
    ask: Asker | None = None
    timeout: float = 600.0
    is_allowlisted: Callable[[str], bool] = lambda command: False
    _session_rules: set[tuple[str, str, str]] = field(default_factory=set)

    async def decide(self, request: ApprovalRequest) -> tuple[Decision, Literal["user", "policy"]]:
        command = request.arguments.get("command", "") if request.risk == "shell" else ""
        if (request.session, request.name, command) in self._session_rules:
            return "allow", "policy"
        if request.risk == "shell" and self.is_allowlisted(command):
            return "allow", "policy"
        if self.mode != "ask" or self.ask is None:
            return ("allow" if self.mode == "auto" else "deny"), "policy"
        try:
            answer = await asyncio.wait_for(self.ask(request), timeout=self.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a client that errors or never answers means deny
            log.warning("approval of %s failed: %r; denying", request.name, exc)
            return "deny", "policy"
        if answer not in DECISIONS:
            log.warning("approval of %s got unknown decision %r; denying", request.name, answer)
            return "deny", "policy"
        if answer == "allowSession":
            self._session_rules.add((request.session, request.name, command))
        return answer, "user"  # type: ignore[return-value]

    def forget(self, sessions: Collection[str] = ()) -> None:
        self._session_rules = {rule for rule in self._session_rules if rule[0] not in sessions}
