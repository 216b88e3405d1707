"""Where hooks run in a turn, and what their answers mean (docs/config.md "hooks").

- `pre_tool`, after a call is validated and before policy (agent/orchestrator.py): exit 0 goes on, exit 2 denies the
  call with the hook's stderr as the reason the model reads, anything else (a crash, a timeout, a program that will
  not start) is a warning and the call goes on to policy as if there were no hook. Going on is never an approval.
- `post_tool`, after the call: what an exit-0 hook prints is appended to the result as a note.
- `turn_end`, before the turn's `done`; `session_start`, before a new session's first turn: run for their effects.

Each run is one audit line (`tool` `hook:POINT`, `by` `hook`); a denial, a failure and a proposal waiting for the
user are `hook` notices. A workspace's proposal that is not approved is skipped (and said once).
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sunwell.config.settings import Settings
from sunwell.hooks.catalog import Event, HookEntry, approve, hook_entries
from sunwell.hooks.runner import Ran, run_hook
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.events import NoticeEvent
from sunwell.wire.messages import ToolCall, ToolError, ToolResultMessage

log = logging.getLogger(__name__)
Asker = Callable[[ApprovalRequest], Awaitable[str]]
DENY = 2


def how_to_approve(entry: HookEntry) -> str:
    return f"approve it with `sunwell hooks approve {entry.number}`"


class Hooks:
    """The hooks of one engine's settings, and what the user allowed while it lives."""

    def __init__(self, settings: Settings, workspace: Path) -> None:
        self.settings, self.workspace = settings, workspace
        self.entries = hook_entries(settings, workspace)
        self._for_this_run: set[str] = set()
        """Fingerprints the user allowed for as long as this engine lives (allowSession)."""
        self._refused: set[str] = set()
        self._told: set[str] = set()

    def configure(self, settings: Settings) -> None:
        """New settings, or a look at the approvals again (`sunwell hooks approve` may have run meanwhile)."""
        self.settings = settings
        self.entries = hook_entries(settings, self.workspace)

    def may_run(self, entry: HookEntry) -> bool:
        return entry.approved or entry.sha256 in self._for_this_run

    async def consent(self, ask: Asker | None, timeout: float, session: str, turn: str,
                      notify: Callable[[NoticeEvent], None]) -> None:
        """Before a turn: ask about the workspace's proposals not approved yet (when someone can answer), else say
        once how to approve them. `allow` is remembered, `allowSession` holds while this engine lives."""
        self.configure(self.settings)
        for entry in self.entries:
            if self.may_run(entry):
                continue
            if ask is not None and entry.sha256 not in self._refused:
                decision = await self._ask(entry, ask, timeout, session, turn)
                if decision == "allow":
                    approve(entry, self.workspace, Path(self.settings.data_dir or "."))
                    self._for_this_run.add(entry.sha256)
                    continue
                if decision == "allowSession":
                    self._for_this_run.add(entry.sha256)
                    continue
                self._refused.add(entry.sha256)
            if entry.sha256 not in self._told:
                self._told.add(entry.sha256)
                notify(NoticeEvent(level="warning", code="hook", message=(
                    f"the workspace config proposes a {entry.event} hook (`{entry.line}`, for {entry.config.match}); "
                    f"it does not run until you approve it: {how_to_approve(entry)}")))

    async def _ask(self, entry: HookEntry, ask: Asker, timeout: float, session: str, turn: str) -> str:
        request = ApprovalRequest(
            session=session, turn=turn, call_id=f"hook-{entry.number}",
            name=f"{entry.event} hook (proposed by the workspace config)",
            arguments={"event": entry.event, "match": entry.config.match, "command": entry.config.command},
            risk="shell", preview={"kind": "command", "command": entry.line, "cwd": "."})
        try:
            answer = await asyncio.wait_for(ask(request), timeout)
            return str(getattr(answer, "decision", answer))  # a decision, or an Answer with a note
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - no answer is no
            log.info("approval of the hook %s failed: %r", entry.line, exc)
            return "deny"

    async def start_turn(self, approval: Any, log: Any, trust: str, audit: Any,
                         before: Callable[[NoticeEvent], None]) -> TurnHooks | None:
        """The hooks a turn (its TurnLog `log`) runs: the workspace's proposals asked about first (through the
        ApprovalPolicy `approval`, when its mode is `ask`), `session_start` run for a new session (no messages yet);
        what they say goes to `before` (shown when the turn starts)."""
        if not self.entries:
            return None
        asking = approval.mode == "ask" and approval.client.answers("approve")
        ask = approval.client.approve if asking else None
        await self.consent(ask, approval.timeout, log.session, log.turn, before)
        if not log.store.messages(log.session) and (starting := self.for_turn(session=log.session, turn=log.turn, trust=trust, emit=before,
                                                      audit=audit, secrets=log.secrets)):
            await starting.at("session_start")
        return self.for_turn(session=log.session, turn=log.turn, trust=trust, emit=log.emit, audit=audit,
                             secrets=log.secrets)

    def for_turn(self, *, session: str, turn: str, trust: str, emit: Callable[[Any], Any], audit: Any = None,
                 secrets: Any = None) -> TurnHooks | None:
        """The hooks a turn runs, or None when there are none that may run."""
        runnable = [entry for entry in self.entries if self.may_run(entry)]
        if not runnable:
            return None
        return TurnHooks(self, runnable, session, turn, trust, emit, audit, secrets)


@dataclass
class TurnHooks:
    hooks: Hooks
    entries: list[HookEntry]
    session: str
    turn: str
    trust: str
    emit: Callable[[Any], Any]
    audit: Any = None
    secrets: Any = None
    _base: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._base = {"session": self.session, "turn": self.turn, "workspace": str(self.hooks.workspace),
                      "trust": self.trust}

    def _at(self, event: Event, tool: str | None = None) -> list[HookEntry]:
        return [e for e in self.entries if e.event == event
                and (tool is None or fnmatch.fnmatchcase(tool, e.config.match))]

    async def before(self, call: ToolCall) -> ToolError | None:
        """`pre_tool`: a denial (the model's error), or None to go on to policy."""
        for entry in self._at("pre_tool", call.name):
            ran = await self._run(entry, {"event": "pre_tool", "tool": call.name, "call_id": call.id,
                                          "arguments": call.arguments})
            if ran.code == DENY:
                reason = self._mask(ran.stderr.strip()) or "it gave no reason"
                self._record(entry, call, ran, "deny")
                self._notice("warning", f"the pre_tool hook `{entry.line}` denied {call.name}: {reason[:300]}")
                return ToolError(code="denied", message=f"{call.name} was denied by a hook: {reason}",
                                 suggestion="do not repeat this call; follow the reason, or tell the user")
            self._record(entry, call, ran, "continue" if ran.code == 0 else None)
            if ran.code != 0:
                self._warn(entry, ran, f"{call.name} goes on to the usual approval")
        return None

    async def after(self, call: ToolCall, result: ToolResultMessage) -> ToolResultMessage:
        """`post_tool`: the result with what each exit-0 hook printed appended as a note."""
        notes = []
        for entry in self._at("post_tool", call.name):
            outcome = {"ok": result.ok, "output": result.output,
                       "error": result.error.model_dump() if result.error else None}
            ran = await self._run(entry, {"event": "post_tool", "tool": call.name, "call_id": call.id,
                                          "arguments": call.arguments, "result": outcome})
            self._record(entry, call, ran, "note" if ran.code == 0 and ran.stdout.strip() else None)
            if ran.code != 0:
                self._warn(entry, ran, "its note was not added")
            elif ran.stdout.strip():
                notes.append(f"[note from the post_tool hook `{entry.line}`]\n{self._mask(ran.stdout.strip())}")
        if not notes:
            return result
        text = "\n\n".join(notes)
        if result.ok:
            return result.with_note(after=text)
        assert result.error is not None
        return result.model_copy(update={"error": result.error.model_copy(
            update={"message": f"{result.error.message}\n\n{text}"})})

    async def at(self, event: Event, **details: Any) -> None:
        """`turn_end` or `session_start`: run for their effects; a failure is a warning."""
        for entry in self._at(event):
            ran = await self._run(entry, {"event": event, **details})
            self._record(entry, None, ran, None)
            if ran.code != 0:
                self._warn(entry, ran, "the turn goes on" if event == "session_start" else "nothing else changes")

    async def _run(self, entry: HookEntry, payload: dict[str, Any]) -> Ran:
        settings = self.hooks.settings
        return await run_hook(entry, {**payload, **self._base}, workspace=self.hooks.workspace,
                              data_dir=Path(settings.data_dir or "."), max_bytes=settings.max_output_bytes,
                              passthrough=tuple(settings.env_passthrough), blocked=tuple(settings.blocked_paths))

    def _warn(self, entry: HookEntry, ran: Ran, then: str) -> None:
        what = ran.problem or f"exited with {ran.code}"
        said = self._mask(ran.stderr.strip())[-300:]
        self._notice("warning", f"the {entry.event} hook `{entry.line}` {what}; {then}"
                                + (f". It said: {said}" if said else ""))

    def _notice(self, level: str, message: str) -> None:
        self.emit(NoticeEvent(level=level, code="hook", message=message))

    def _mask(self, text: str) -> str:
        return self.secrets.mask(text) if self.secrets is not None else text

    def _record(self, entry: HookEntry, call: ToolCall | None, ran: Ran, decision: str | None) -> None:
        if self.audit is None:
            return
        error = (None if ran.code == 0 else f"exit {ran.code}" if ran.code is not None
                 else "timeout" if ran.timed_out else "not_started")
        self.audit.record(session=self.session, turn=self.turn, tool=f"hook:{entry.event}",
                          call_id=call.id if call else "", arguments={"command": entry.config.command,
                          "source": entry.source, **({"tool": call.name} if call else {})},
                          decision=decision, by="hook", ok=ran.code == 0, error=error,
                          duration_ms=ran.duration_ms)
