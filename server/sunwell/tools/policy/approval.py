"""Who says yes to a risky call: the policy's rules, else the person, asked through the client port (wire/client.py).

The terminal answers with a prompt, the sidecar with a `sunwell/approve` request to VS Code; `auto` and `deny`
modes, the command allowlist and allow-for-session rules answer it without asking anyone (`by: "policy"`).
Allow-for-session remembers the exact tool for writes, the exact command string for shell (never a prefix), the
host for a web request.

Rules judge what will run, never an argument's name: for shell, the preview's `command` (a lens skill's rendered
template, not the model's argument that happens to be called `command`). A call marked `always_ask` (a write to
configuration the host executes) skips the allowlist and session rules and the `auto` mode: a person answers it,
or, with no one to ask, it is denied.

The request is the wire model of `sunwell/approve` (sunwell.wire.approval), re-exported here for the policy's
users; the answer is `ApproveResult` (sunwell.wire.user_requests).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import NamedTuple

from sunwell.vocabulary import DECISIONS, ApprovalMode, DecidedBy, Decision
from sunwell.wire.approval import HOST_RULE, ApprovalRequest
from sunwell.wire.client import HEADLESS, Client
from sunwell.wire.user_requests import ApproveResult

__all__ = ["ApprovalPolicy", "ApprovalRequest", "Ruling"]
log = logging.getLogger(__name__)


class Ruling(NamedTuple):
    decision: Decision
    by: DecidedBy
    note: str | None = None
    """What the user said with a denial (the approve result's `note`: docs/sidecar.md "ApproveResult"), for the
    model to read."""


NOTE_LIMIT = 500


@dataclass
class ApprovalPolicy:
    mode: ApprovalMode = "deny"
    client: Client = HEADLESS
    """Who is asked when the rules do not answer (`ask` mode); one who answers no approvals means deny."""
    timeout: float = 600.0
    is_allowlisted: Callable[[str], bool] = lambda command: False
    _session_rules: set[tuple[str, str, str]] = field(default_factory=set)

    async def decide(self, request: ApprovalRequest, *, always_ask: bool = False) -> Ruling:
        rule = request.session_rule()
        if not always_ask:
            if rule is not None and rule in self._session_rules:
                return Ruling("allow", "policy")
            if request.command is not None and self.is_allowlisted(request.command):
                return Ruling("allow", "policy")
            if self.mode == "auto":
                return Ruling("allow", "policy")
        if self.mode == "deny" or not self.client.answers("approve"):
            return Ruling("deny", "policy")
        try:
            answer = await asyncio.wait_for(self.client.approve(request), timeout=self.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a client that errors or never answers means deny
            log.warning("approval of %s failed: %r; denying", request.name, exc)
            return Ruling("deny", "policy")
        decision, note = (answer.decision, answer.note) if isinstance(answer, ApproveResult) else (answer, None)
        if decision not in DECISIONS:
            log.warning("approval of %s got unknown decision %r; denying", request.name, decision)
            return Ruling("deny", "policy")
        if decision == "allowSession" and rule is not None:
            self._session_rules.add(rule)
        note = note.strip()[:NOTE_LIMIT] if isinstance(note, str) and decision == "deny" else None
        return Ruling(decision, "user", note or None)  # type: ignore[arg-type]

    def session_hosts(self, session: str) -> set[str]:
        """The web hosts the user allowed for `session`."""
        return {rule[2] for rule in self._session_rules if rule[0] == session and rule[1] == HOST_RULE}

    def forget(self, sessions: Collection[str] = ()) -> None:
        self._session_rules = {rule for rule in self._session_rules if rule[0] not in sessions}
