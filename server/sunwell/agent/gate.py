"""What stands between a valid call and its execution: dry run, rate limits, and approval.

A write to configuration the host executes (`Jail.is_protected`: `.vscode/`, `.envrc`...) is always asked, whatever
the tool's approval, the mode, the allowlist or a session rule say: it is decided here, on the path the write will
really reach (resolved through the jail, symlinks followed), before anything that could wave the call through.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sunwell.agent.events import ApprovalEvent, NoticeEvent
from sunwell.errors import first_problem
from sunwell.messages import ToolCall, ToolError
from sunwell.tools.approval import ApprovalPolicy, ApprovalRequest
from sunwell.tools.base import Tool, ToolContext, ToolFailure
from sunwell.tools.shell import staging_problem


@dataclass
class Verdict:
    error: ToolError | None = None
    decision: str | None = None
    by: str | None = None
    review: Callable[[dict[str, Any]], Awaitable[ToolError | None]] | None = None
    """For a command that runs staged first: asks about its effects, and fills in decision and by."""


@dataclass
class Gate:
    approval: ApprovalPolicy
    dry_run: bool = False
    limiter: Any = None
    """A sunwell.tools.ratelimit.RateLimiter kept per session, or None."""
    _told: bool = False
    """Whether the turn was told that commands cannot be staged here."""

    async def admit(self, tool: Tool, call: ToolCall, ctx: ToolContext, session: str, turn: str,
                    emit: Callable[[Any], Any]) -> Verdict:
        if self.dry_run:
            return Verdict(ToolError(code="dry_run", message=f"dry run: {tool.name} was not executed"))
        if self.limiter is not None:
            message = self.limiter.check(tool.risk, size=_write_size(call.arguments) if tool.risk == "write" else 0)
            if message:
                return Verdict(ToolError(code="rate_limit", message=message,
                                         suggestion="make fewer calls, or wait and try again"))
        protected = tool.risk == "write" and _protected(call.arguments, ctx)
        if tool.approval != "ask" and not protected:
            return Verdict()
        if tool.staged and not ctx.network:  # no network: all it can do is change files, so ask about those
            problem = await staging_problem(ctx)
            if problem is None:
                return self._after(tool, call, session, turn, emit)
            if not self._told:
                self._told = True
                emit(NoticeEvent(level="info", code="effects_unavailable", message=(
                    f"commands are asked before they run: their effects cannot be previewed here ({problem}); "
                    "undo still puts back what they change")))
        try:
            preview = tool.preview(call.arguments, ctx) if tool.preview else _tool_preview(tool, call)
        except ToolFailure as failure:  # the call would fail anyway: answer it without bothering the user
            return Verdict(failure.error)
        if preview.get("kind") == "diff" and preview.get("before") == preview.get("after") and not protected:
            return Verdict()  # a write that changes nothing needs no one's yes (the tool says it is unchanged)
        try:  # the tool's dict becomes the wire model here, at the approval boundary
            request = ApprovalRequest(session=session, turn=turn, call_id=call.id, name=tool.name,
                                      arguments=call.arguments, risk=tool.risk or "write", preview=preview)
        except ValidationError as exc:  # a tool's bug: nobody can be asked about what cannot be shown
            return Verdict(ToolError(code="execution", message=f"{tool.name} could not show what it would do, so "
                                     f"it was not run ({_problem_line(exc)})"))
        decision, by, note = await self.approval.decide(request, always_ask=protected)
        emit(ApprovalEvent(call_id=call.id, decision=decision, by=by))
        return Verdict(_denied(tool, by, protected, note) if decision == "deny" else None, decision, by)

    def _after(self, tool: Tool, call: ToolCall, session: str, turn: str,
               emit: Callable[[Any], Any]) -> Verdict:
        """A verdict whose question comes once the command ran in its staging overlay, with what it changed."""
        verdict = Verdict()

        async def review(preview: dict[str, Any]) -> ToolError | None:
            request = ApprovalRequest(session=session, turn=turn, call_id=call.id, name=tool.name,
                                      arguments=call.arguments, risk=tool.risk or "shell", preview=preview)
            verdict.decision, verdict.by, note = await self.approval.decide(request)
            emit(ApprovalEvent(call_id=call.id, decision=verdict.decision, by=verdict.by))
            return _denied(tool, verdict.by, False, note) if verdict.decision == "deny" else None

        verdict.review = review
        return verdict


def _denied(tool: Tool, by: str, protected: bool, note: str | None = None) -> ToolError:
    if note:  # the user's own words: quoted, so they read as what was said, not as Sunwell's instructions
        return ToolError(code="denied", message=f"{tool.name} was denied by the user, who said: {json.dumps(note)}",
                         suggestion="do not repeat this call; follow the user's note")
    who = ("the user" if by == "user" else
           "policy: a change to configuration the editor or shell runs (.vscode/, .idea/, .devcontainer/, "
           ".envrc) is always asked, and no one could be asked" if protected else
           "policy (approval mode deny, or no answer in time)")
    return ToolError(code="denied", message=f"{tool.name} was denied by {who}",
                     suggestion="do not repeat this call; explain what you wanted to do, or find another way")


def _problem_line(exc: ValidationError) -> str:
    where, problem = first_problem(exc)
    return f"{where}: {problem}"


def _tool_preview(tool: Tool, call: ToolCall) -> dict[str, Any]:
    """For a tool with no preview of its own: the call itself."""
    return {"kind": "tool", "server": "", "tool": tool.name, "arguments": call.arguments}


def _protected(arguments: dict[str, Any], ctx: ToolContext) -> bool:
    """Whether the file a write reaches is protected: judged on the resolved path, so `src/../.vscode/x` or a
    symlink to `.vscode/` counts, and a path the model merely spells oddly does not slip past."""
    path = arguments.get("path")
    if not isinstance(path, str):
        return False
    try:
        real = ctx.jail.resolve(path, must_exist=False)
    except ToolFailure:
        return False  # outside the workspace or blocked: the tool refuses it itself
    return ctx.jail.is_protected(ctx.jail.relative(real))


def _write_size(arguments: dict[str, Any]) -> int:
    text = arguments.get("content", arguments.get("new_text", ""))
    return len(text.encode("utf-8", "replace")) if isinstance(text, str) else 0
