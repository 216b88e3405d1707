"""Policy on what a call declares it touches (its Subject, tools/subject.py): dry run, rate limits, protected
paths, approval. The gate reads the subject and the tool's preview, never the call's arguments: a new kind of tool
states its subject and needs no case here.

A write to configuration the host runs programs from (`Jail.is_protected`: `.vscode/`, `*.code-workspace`, `.envrc`...)
is always asked, whatever the tool's approval, the mode, the allowlist or a session rule say: it is decided here, on
the path the write will really reach (resolved through the jail, symlinks followed), before anything that could wave
the call through.

A call to the web is judged on its host (tools/network/policy.py): refused before anyone is asked when the host is
denied, a private address not listed exactly, or the URL carries a secret; run unasked when the user allowed the host
(`network.allow`, or for this session) unless its subject is `asked` (a learned API's POST, learn_api); else asked.

A call that can run staged, where commands can be staged and have no network, is not asked before it runs: its
verdict says `stage_first`, the orchestrator runs it staged and comes back to `review` with what it changed.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sunwell.errors import first_problem
from sunwell.tools.base import Tool, ToolContext, ToolFailure
from sunwell.tools.policy.approval import ApprovalPolicy, ApprovalRequest
from sunwell.tools.policy.ratelimit import RateLimiter
from sunwell.tools.sandbox.staging import sandbox_missing, staging_problem
from sunwell.vocabulary import DryRun
from sunwell.wire.events import ApprovalEvent, NoticeEvent
from sunwell.wire.messages import ToolCall, ToolError

Emit = Callable[[Any], Any]


@dataclass
class Verdict:
    error: ToolError | None = None
    decision: str | None = None
    by: str | None = None
    stage_first: bool = False
    """Run it staged; nothing is applied before `Gate.review` of its effects allows it."""


@dataclass
class Gate:
    approval: ApprovalPolicy
    dry_run: DryRun = False
    """True: no call runs; "risky": only the tools that declare themselves harmless run (`--dry-run=risky`)."""
    limiter: RateLimiter | None = None
    """The session's, kept across its turns."""
    _told: bool = False
    """Whether the turn was told that commands cannot be staged here."""

    def dry_run_refusal(self, tool: Tool, but: str | None = None) -> ToolError | None:
        """The `dry_run` answer when the dry run holds `tool` back, else None; `but`: why the call could not have run
        anyway (a tool above the trust level): a dry run says what would have run, whatever the trust."""
        if self.dry_run is True or (self.dry_run == "risky" and not tool.harmless):
            return ToolError(code="dry_run", message=f"dry run: {tool.name} was not executed"
                                                     + (f" (nor could it run in this session: {but})" if but else ""))
        return None

    async def admit(self, tool: Tool, call: ToolCall, arguments: Any, ctx: ToolContext, session: str, turn: str,
                    emit: Emit) -> Verdict:
        """The verdict on a valid `call`, whose `arguments` are as its tool took them (`Tool.bind`)."""
        if refusal := self.dry_run_refusal(tool):
            return Verdict(refusal)
        try:
            subject = tool.declared(arguments)
        except ToolFailure as failure:
            return Verdict(failure.error)
        if self.limiter is not None:
            message = self.limiter.check(tool.risk, size=subject.bytes_written)
            if message:
                return Verdict(ToolError(code="rate_limit", message=message,
                                         suggestion="make fewer calls, or wait and try again"))
        protected = any(_protected(write.path, ctx) for write in subject.writes)
        if subject.web is not None:
            if ctx.network is None:
                return Verdict(ToolError(code="unsupported", message=f"{tool.name}: no network here"))
            if refusal := ctx.network.refusal(subject.web):  # the URL is not repeated: it may carry a secret
                return Verdict(ToolError(code="permission", message=f"{tool.name} refused the URL: {refusal}",
                                         suggestion="do not try this URL again; tell the user what you wanted"))
            if ctx.network.allowed(subject.web) and not subject.asked:
                emit(ApprovalEvent(call_id=call.id, decision="allow", by="policy"))
                return Verdict(decision="allow", by="policy")
        if subject.command is not None and not self._told and (missing := sandbox_missing(ctx)):
            self._told = True
            emit(NoticeEvent(level="warning", code="sandbox_unavailable", message=(
                f"{missing}: commands run with your user's rights, each asked before it runs; undo puts back what "
                "they change in the workspace")))
        if tool.approval != "ask" and not protected:
            return Verdict()
        # a staged call with no network can do nothing but change files: ask about those, once it ran
        if subject.staged and tool.stage is not None and not ctx.commands.network:
            problem = await staging_problem(ctx)
            if problem is None:
                return Verdict(stage_first=True)
            if not self._told:
                self._told = True
                emit(NoticeEvent(level="info", code="effects_unavailable", message=(
                    f"commands are asked before they run: their effects cannot be previewed here ({problem}); "
                    "undo still puts back what they change")))
        try:
            own = ctx.calling(call.id)  # a question the preview asks (learn_api's tags) names the call
            preview = tool.preview(arguments, own) if tool.preview else _tool_preview(tool, call)
            if inspect.isawaitable(preview):  # learn_api reads the document it shows
                preview = await preview
        except ToolFailure as failure:  # the call would fail anyway: answer it without bothering the user
            return Verdict(failure.error)
        if preview.get("kind") == "diff" and preview.get("before") == preview.get("after") and not protected:
            return Verdict()  # a write that changes nothing needs no one's yes (the tool says it is unchanged)
        return await self._ask(tool, call, preview, tool.risk or "write", session, turn, emit, protected)

    async def review(self, tool: Tool, call: ToolCall, effects: dict[str, Any], session: str, turn: str,
                     emit: Emit) -> Verdict:
        """The question a `stage_first` call waits for, asked with its `effects` preview once it ran staged."""
        return await self._ask(tool, call, effects, tool.risk or "shell", session, turn, emit, protected=False)

    async def _ask(self, tool: Tool, call: ToolCall, preview: dict[str, Any], risk: str, session: str, turn: str,
                   emit: Emit, protected: bool) -> Verdict:
        try:  # the tool's dict becomes the wire model here, at the approval boundary
            request = ApprovalRequest(session=session, turn=turn, call_id=call.id, name=tool.name,
                                      arguments=call.arguments, risk=risk, preview=preview)
        except ValidationError as exc:  # a tool's bug: nobody can be asked about what cannot be shown
            return Verdict(ToolError(code="execution", message=f"{tool.name} could not show what it would do, so "
                                     f"it was not run ({_problem_line(exc)})"))
        decision, by, note = await self.approval.decide(request, always_ask=protected)
        emit(ApprovalEvent(call_id=call.id, decision=decision, by=by))
        return Verdict(_denied(tool, by, protected, note) if decision == "deny" else None, decision, by)


def _denied(tool: Tool, by: str, protected: bool, note: str | None = None) -> ToolError:
    if note:  # the user's own words: quoted, so they read as what was said, not as Sunwell's instructions
        return ToolError(code="denied", message=f"{tool.name} was denied by the user, who said: {json.dumps(note)}",
                         suggestion="do not repeat this call; follow the user's note")
    who = ("the user" if by == "user" else
           "policy: a change to configuration an editor or tool runs programs from (.vscode/, *.code-workspace, "
           ".idea/, devcontainer.json, .envrc...) is always asked, and no one could be asked" if protected else
           "policy (approval mode deny, or no answer in time)")
    return ToolError(code="denied", message=f"{tool.name} was denied by {who}",
                     suggestion="do not repeat this call; explain what you wanted to do, or find another way")


def _problem_line(exc: ValidationError) -> str:
    where, problem = first_problem(exc)
    return f"{where}: {problem}"


def _tool_preview(tool: Tool, call: ToolCall) -> dict[str, Any]:
    """For a tool with no preview of its own: the call itself."""
    return {"kind": "tool", "server": "", "tool": tool.name, "arguments": call.arguments}


def _protected(path: str, ctx: ToolContext) -> bool:
    """Whether the file a write reaches is protected: judged on the resolved path, so `src/../.vscode/x` or a
    symlink to `.vscode/` counts, and a path the model merely spells oddly does not slip past."""
    try:
        real = ctx.jail.resolve(path, must_exist=False)
    except ToolFailure:
        return False  # outside the workspace or blocked: the tool refuses it itself
    return ctx.jail.is_protected(ctx.jail.relative(real))
