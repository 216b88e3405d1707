"""What a call touches, as each tool declares it, and the one orchestrator that judges and runs it on that alone.

The core tools' schemas are generated from their arguments models; tool_schemas.json holds what they sent before
(key for key, in order), so the tool list on the wire cannot drift. The orchestrator tests use a real jail, a real
session store, the real gate and, for staging, the real run_command in a real overlay; only the person who answers
the approval is a function.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Annotated

import pytest
from mcp import types
from pydantic import Field, field_validator

from person import Person
from sunwell.agent.gate import Gate
from sunwell.agent.orchestrator import Orchestrator
from sunwell.agent.sessions import SessionStore
from sunwell.agent.skills import skill_tools
from sunwell.agent.turn import TurnLog
from sunwell.config import McpServerConfig, RateLimits
from sunwell.lens.schema import Lens
from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import CommandSettings, Limits, Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.handlers.shell import RUN_COMMAND
from sunwell.tools.mcp.remote_tools import sunwell_tools
from sunwell.tools.network.urls import parse_url
from sunwell.tools.policy.approval import ApprovalPolicy
from sunwell.tools.policy.audit import AuditLog
from sunwell.tools.policy.ratelimit import RateLimiter
from sunwell.tools.registry import CORE_TOOLS
from sunwell.tools.sandbox.staging import staging_problem
from sunwell.tools.subject import CONTENT, NOTHING, Command, McpCall, Subject, Write
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.approval import ApprovalRequest, EffectsPreview
from sunwell.wire.messages import ToolCall

CORE = {tool.name: tool for tool in CORE_TOOLS}


def test_the_generated_schemas_are_the_ones_the_tools_always_sent():
    published = json.loads((Path(__file__).parents[1] / "tool_schemas.json").read_text(encoding="utf-8"))
    assert list(CORE) == list(published)
    for name, tool in CORE.items():  # compared as text: the order of keys reaches prompts and caches too
        assert json.dumps(tool.parameters) == json.dumps(published[name]), name


@pytest.mark.parametrize(("name", "arguments", "subject"), [
    ("list_files", {}, Subject(reads=(".",))),
    ("list_files", {"path": "src", "pattern": "**"}, Subject(reads=("src",))),
    ("read_file", {"path": "a.py", "offset": 3}, Subject(reads=("a.py",))),
    ("search_files", {"pattern": "x"}, Subject(reads=(".",))),
    ("write_file", {"path": "a.txt", "content": "héllo"}, Subject(writes=(Write("a.txt", "héllo".encode()),))),
    ("edit_file", {"path": "a.txt", "old_text": "long old text", "new_text": "new"},
     Subject(writes=(Write("a.txt", b"new"),))),
    ("run_command", {"command": "make", "cwd": "src"}, Subject(command=Command("make", "src"), staged=True)),
    ("run_command", {"command": "ls"}, Subject(command=Command("ls", "."), staged=True)),
    ("web_fetch", {"url": "HTTPS://Docs.Python.org./3/?q=1#x"},
     Subject(web=parse_url("https://docs.python.org/3/?q=1"))),
])
def test_each_core_tool_declares_what_a_call_touches(name, arguments, subject):
    assert CORE[name].declared(CORE[name].bind(arguments)) == subject


def declared(name: str, arguments: dict) -> Subject:
    return CORE[name].declared(CORE[name].bind(arguments))


def test_a_write_declares_the_bytes_it_brings_for_the_budget():
    assert declared("write_file", {"path": "a", "content": "€" * 10}).bytes_written == 30
    assert declared("edit_file", {"path": "a", "old_text": "x" * 99, "new_text": "yz"}).bytes_written == 2


def test_arguments_the_model_cannot_have_sent_are_refused_by_the_one_validation():
    with pytest.raises(ToolFailure) as info:
        CORE["write_file"].bind({"path": "a"})
    assert info.value.error.code == "validation" and "content" in info.value.error.message
    with pytest.raises(ToolFailure) as info:  # what a schema cannot say: the model refuses it, worded the same way
        CORE["update_plan"].bind({"items": [{"step": "a", "status": "in_progress"}, {"step": "b",
                                                                                      "status": "in_progress"}]})
    assert info.value.error.message.startswith("parameter 'items': at most one step may be in_progress")


def test_a_bound_call_is_an_instance_of_the_tools_model_and_a_dynamic_tools_dict():
    bound = CORE["read_file"].bind({"path": "a.py", "limit": 3})
    assert isinstance(bound, CORE["read_file"].arguments)
    assert (bound.path, bound.offset, bound.limit) == ("a.py", None, 3)
    remote = types.Tool(name="echo", description="d", inputSchema={"type": "object"})
    [tool] = sunwell_tools("srv", McpServerConfig(command="x"), [remote], call=None)
    assert tool.arguments is None and tool.bind({"anything": 1}) == {"anything": 1}


def test_mcp_and_lens_tools_declare_their_server_and_their_rendered_command():
    remote = types.Tool(name="echo", description="d", inputSchema={"type": "object"})
    [tool] = sunwell_tools("srv", McpServerConfig(command="x"), [remote], call=None)
    assert tool.declared({"anything": 1}) == Subject(mcp=McpCall("srv", "echo"))
    lens = Lens(name="l", description="d", skills=[
        {"name": "test", "description": "d", "command": "pytest {target}",
         "parameters": {"type": "object", "properties": {"target": {"type": "string"}}}},
        {"name": "think", "description": "d", "instructions": "think",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    ])
    command, nested = skill_tools(lens, set())
    assert command.declared({"target": "a b.py"}) == Subject(command=Command("pytest 'a b.py'"), staged=True)
    assert command.stage is not None and nested.stage is None
    assert nested.declared({"path": ".vscode/x"}) == NOTHING  # a nested model call touches no file



def test_a_skill_named_like_a_taken_tool_gets_its_lens_prefix():
    lens = Lens(name="my lens!", description="d", skills=[
        {"name": name, "description": "d", "instructions": "i", "parameters": {"type": "object", "properties": {}}}
        for name in ("read_file", "outline")])
    assert [tool.name for tool in skill_tools(lens, {"read_file"})] == ["my_lens___read_file", "outline"]
    assert [tool.name for tool in skill_tools(lens, set())] == ["read_file", "outline"]
    long = Lens(name="x" * 50, description="d", skills=[
        {"name": "s" * 60, "description": "d", "instructions": "i", "parameters": {"type": "object", "properties": {}}}])
    assert [tool.name for tool in skill_tools(long, {"s" * 60})] == [("x" * 30 + "__" + "s" * 60)[:64]]  # the limit

class Room:
    """One orchestrator over a real workspace, session store and gate; `answers` are the person's decisions."""

    def __init__(self, tmp_path: Path, tools: list[Tool], answers: list[str], mode="ask", limiter=None) -> None:
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        self.asked: list[ApprovalRequest] = []
        self.events: list = []

        async def ask(request: ApprovalRequest) -> str:
            self.asked.append(request)
            return answers.pop(0)

        store = SessionStore(tmp_path / "data" / "sessions.db")
        log = TurnLog(store, store.create("t"), self.events.append)
        self.ctx = ToolContext(jail=Jail(self.ws), limits=Limits(commands=CommandSettings(staging_dir=tmp_path / "data" / "staging")))
        gate = Gate(ApprovalPolicy(mode=mode, client=Person(approve=ask)), limiter=limiter)
        self.orchestrator = Orchestrator(tools, tools, Trust.shell, self.ctx, log, gate)

    def run(self, name: str, arguments: dict):
        return asyncio.run(self.orchestrator.run(ToolCall(id="c1", name=name, arguments=arguments)))


def _renamed_writer(ran: list) -> Tool:
    """A write tool whose arguments have names the gate never heard of: only its subject says what it writes."""

    async def handler(args, ctx):
        ran.append(args)
        return "written"

    return Tool.dynamic({"type": "object", "properties": {"target": {"type": "string"}, "body": {"type": "string"}}},
                        handler, name="save", description="d", approval="auto", risk="write", read_only=False,
                        subject=lambda args: Subject(writes=(Write(args["target"], args["body"].encode()),)))


class NoteArguments(ToolArguments):
    title: str = Field(max_length=20)
    body: Annotated[str, CONTENT]

    @field_validator("title")
    @classmethod
    def _no_slash(cls, title: str) -> str:
        if "/" in title:
            raise ValueError("a title has no slash")
        return title

    def subject(self) -> Subject:
        return Subject(writes=(Write(f"notes/{self.title}.md", self.body.encode()),))


def _note_taker(ran: list) -> Tool:
    async def take(args: NoteArguments, ctx: ToolContext) -> str:
        ran.append(args)
        return f"noted {args.title}"

    return Tool.of(NoteArguments, take, name="note", description="d", approval="auto", risk="write", read_only=False)


def test_a_typed_tool_gets_its_model_validated_once_and_its_subject_from_it(tmp_path):
    ran: list = []
    room = Room(tmp_path, [_note_taker(ran)], answers=["allow"], mode="auto")
    assert room.run("note", {"title": "plan", "body": "x"}).ok
    [given] = ran
    assert isinstance(given, NoteArguments) and (given.title, given.body) == ("plan", "x")
    refused = room.run("note", {"title": "a/b", "body": "x"})  # what the schema cannot say: the model refuses it
    assert refused.error.code == "validation" and refused.error.message == "parameter 'title': a title has no slash"
    assert refused.error.suggestion.startswith("expected arguments: {title: string, body: string}")
    assert room.run("note", {"title": "t" * 21, "body": "x"}).error.code == "validation"  # the schema's own word
    assert len(ran) == 1 and room.asked == []


def test_the_audit_hashes_what_the_tools_model_marks_as_file_text(tmp_path):
    room = Room(tmp_path, [_note_taker([]), _renamed_writer([])], answers=[], mode="auto")
    room.orchestrator.audit = audit = AuditLog(tmp_path / "data", environ={})
    room.run("note", {"title": "t", "body": "secret plan"})
    room.run("note", {"title": 5, "body": "refused, hashed all the same"})
    room.run("save", {"target": "a.txt", "body": "not marked by its tool"})
    note, invalid, save = (entry["arguments"] for entry in audit.recent())
    assert note == {"title": "t", "body": {"bytes": 11, "sha256": hashlib.sha256(b"secret plan").hexdigest()}}
    assert set(invalid["body"]) == {"bytes", "sha256"}
    assert save == {"target": "a.txt", "body": "not marked by its tool"}


def test_a_protected_path_is_asked_by_what_the_tool_declares_not_by_its_argument_names(tmp_path):
    ran: list = []
    room = Room(tmp_path, [_renamed_writer(ran)], answers=["deny"], mode="auto")
    result = room.run("save", {"target": "src/../.vscode/tasks.json", "body": "{}"})
    assert [r.name for r in room.asked] == ["save"]  # auto mode and an `auto` tool, and still asked
    assert not result.ok and result.error.code == "denied" and ran == []
    result = room.run("save", {"target": "notes.txt", "body": "{}"})
    assert result.ok and len(room.asked) == 1 and ran == [{"target": "notes.txt", "body": "{}"}]


def test_the_write_budget_is_charged_the_declared_bytes(tmp_path):
    ran: list = []
    limiter = RateLimiter(RateLimits(bytes_written=10))
    room = Room(tmp_path, [_renamed_writer(ran)], answers=[], mode="auto", limiter=limiter)
    assert room.run("save", {"target": "a.txt", "body": "12345"}).ok
    result = room.run("save", {"target": "b.txt", "body": "123456"})
    assert result.error.code == "rate_limit" and "this write is 6 bytes" in result.error.message
    assert limiter.bytes_written == 5 and len(ran) == 1


needs_overlay = pytest.mark.skipif(
    shutil.which("bwrap") is None
    or asyncio.run(staging_problem(ToolContext(jail=Jail(Path(__file__).parent)))) is not None,
    reason="no overlay can be staged here")


@needs_overlay
@pytest.mark.parametrize("answer", ["deny", "allow"])
def test_a_staged_command_is_asked_about_by_the_orchestrator_with_its_effects(tmp_path, answer):
    room = Room(tmp_path, [RUN_COMMAND], answers=[answer])
    (room.ws / "a.txt").write_text("one\n")
    result = room.run("run_command", {"command": "echo two >> a.txt; echo new > b.txt; echo said"})
    [request] = room.asked
    assert isinstance(request.preview, EffectsPreview) and "said" in request.preview.output
    assert sorted(change.path for change in request.preview.changes) == ["a.txt", "b.txt"]
    assert [e.decision for e in room.events if e.type == "approval"] == [answer]
    if answer == "deny":
        assert not result.ok and result.error.code == "denied"
        assert result.error.message.endswith("; nothing it changed was applied")
        assert (room.ws / "a.txt").read_text() == "one\n" and not (room.ws / "b.txt").exists()
    else:
        assert result.ok and "said" in result.output
        assert (room.ws / "a.txt").read_text() == "one\ntwo\n" and (room.ws / "b.txt").read_text() == "new\n"
    assert not list((tmp_path / "data" / "staging").iterdir())  # the staged copy is gone either way
