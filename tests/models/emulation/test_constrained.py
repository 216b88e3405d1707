"""Constrained decoding for emulated tool calls (issue 16 item 4), through the real engine against real HTTP servers on
127.0.0.1 that speak Chat Completions (`fake_provider.py`): the request carries the reply schema in a form the
server takes, a server that refuses it is asked again without and not asked again, the reply streams, its call is
run and its answer shown as text, never as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from conftest import check_stream_rules
from fake_provider import Fail, FakeProvider, Reply
from sunwell.agent.engine import Engine
from sunwell.config import load_settings
from sunwell.models.base import TextDelta, ToolCallDone
from sunwell.models.capabilities import capabilities_for
from sunwell.models.emulation.constrained import UNROLL_LIMIT, ConstrainedReply, answer_tool, reply_schema
from sunwell.models.emulation.prompt import constrained_prompt
from sunwell.tools.registry import CORE_TOOLS
from sunwell.wire.messages import ToolSpec

MODEL = "openai-compatible:qwen2.5-coder-0.5b"  # no native tools: emulated, as the registry says


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def answer(text: str) -> str:
    return call("final_answer", text=text)


def called(text: str, **kw: object) -> list[Reply]:
    """A call as a model that gives one prompt one reply makes it: opened in the free request, which is closed
    there, then made whole under the schema (`choice.py`)."""
    return [Reply(text=text, **kw), Reply(text=text, **kw)]


def constraint(body: dict) -> dict | None:
    return body.get("response_format")


def kind(body: dict) -> str | None:
    """The form of the request's constraint; None for a free request."""
    return constraint(body) and constraint(body)["type"]


def branches(body: dict) -> dict[str, dict]:
    """The schema's branches by function name."""
    fmt = constraint(body)
    schema = fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]
    return {b["properties"]["name"]["const"]: b for b in schema["anyOf"]}


def engine(tmp_path: Path, workspace: Path, fake: FakeProvider, **config: object) -> Engine:
    settings = load_settings(workspace, {"model": MODEL, "base_url": f"{fake.url}/v1", "approval": "auto",
                                         "data_dir": str(tmp_path / "data"), **config})  # fmt: skip
    return Engine(settings, workspace)


def run_turn(eng: Engine, text: str, session: str | None = None) -> list:
    events: list = []
    done = asyncio.run(eng.run_turn(text, events.append, session=session))
    assert done.status == "completed", done.error
    return events


def as_json(events: list) -> list[dict]:
    return [e.model_dump(by_alias=True, mode="json") for e in events]


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_the_schema_goes_out_and_a_constrained_reply_reads_then_writes_then_answers(
    tmp_path, workspace, fake
):
    fake.script(
        Reply(text=call("read_file", path="a.txt"), chunk=4),
        *called(call("write_file", path="b.txt", content="HELLO FROM A\nSECOND LINE\n"), chunk=5),
        Reply(text=answer('b.txt now holds "HELLO FROM A" and a second line.\nDone.'), chunk=3),
    )
    events = run_turn(
        engine(tmp_path, workspace, fake), "Read a.txt and write its content in upper case to b.txt"
    )

    assert (workspace / "b.txt").read_text() == "HELLO FROM A\nSECOND LINE\n"
    # the request names a.txt: the first reply is held to a call (plan.read_first); then the write opened free and
    # made under the schema; the answer given free
    assert [kind(r.body) for r in fake.requests] == ["json_schema", None, "json_schema", None]
    assert "final_answer" not in branches(fake.requests[0].body)
    body = fake.requests[2].body
    assert constraint(body)["type"] == "json_schema" and "tools" not in body
    offered = branches(body)
    assert {"read_file", "write_file", "final_answer"} <= set(offered)
    assert offered["write_file"]["properties"]["arguments"]["required"] == ["path", "content"]
    assert offered["final_answer"]["properties"]["arguments"]["properties"] == {"text": {"type": "string"}}
    system = body["messages"][0]["content"]
    assert '"name": "final_answer"' in system and "call final_answer with your reply" in system  # one more function
    wire = as_json(events)
    check_stream_rules(wire)
    assert [(e["name"], e["arguments"]) for e in wire if e["type"] == "toolCall"] == [
        ("read_file", {"path": "a.txt"}),
        ("write_file", {"path": "b.txt", "content": "HELLO FROM A\nSECOND LINE\n"}),
    ]
    texts = [e["delta"] for e in wire if e["type"] == "text"]
    assert "".join(texts) == 'b.txt now holds "HELLO FROM A" and a second line.\nDone.'
    assert len(texts) > 5  # streamed as it came, not in one piece at the end


def test_after_a_result_the_request_is_restated_last(tmp_path, workspace, fake):
    # A 0.5B model reading "Result of read_file…" last re-reads the file; told the request again right there it
    # goes on to the write (BENCHMARKS.md, "Agentic read→write tasks").
    request = "Read a.txt and write its content in upper case to b.txt"
    fake.script(Reply(text=call("read_file", path="a.txt")), Reply(text=answer("Done.")))
    run_turn(engine(tmp_path, workspace, fake), request)

    first, second = (r.body["messages"] for r in fake.requests)
    assert first[-1]["content"].startswith(f"{request}\n\nThe user's request names the file a.txt")  # no result yet
    assert "The request was" not in first[-1]["content"]
    last = second[-1]["content"]
    assert last.startswith("Result of read_file(") and "hello from a" in last
    assert last.endswith(f"The request was: {request}\nCall the tool for its next step, or final_answer if it is "
                         "done.")


def test_the_prompt_lists_required_parameters_first_with_their_descriptions_and_no_example_values():
    # The grammar lets required properties come first only; the prompt shows the same order, keeps each
    # parameter's description (where its default is said) and shows the call's shape without values to copy.
    tool = ToolSpec(name="distance", description="Driving distance. Long explanation.", parameters={
        "type": "object", "required": ["origin", "destination"], "properties": {
            "origin": {"type": "string"}, "unit": {"type": "string", "description": "Default is km."},
            "destination": {"type": "string"}}})
    prompt = constrained_prompt([tool, answer_tool([tool])], "final_answer", compact=True)
    listed = json.loads(next(line for line in prompt.splitlines() if '"distance"' in line))["function"]
    assert list(listed["parameters"]["properties"]) == ["origin", "destination", "unit"]
    assert listed["parameters"]["properties"]["unit"]["description"] == "Default is km."
    assert listed["description"] == "Driving distance."  # compact: the first sentence
    assert '"..."' not in prompt and '{"name": <tool-name>, "arguments": <args-json-object>}' in prompt
    assert list(reply_schema([tool])["anyOf"][0]["properties"]["arguments"]["properties"]) == [
        "origin", "unit", "destination"]  # the grammar's compiler orders them itself


def test_a_refusal_is_retried_without_and_remembered_for_the_endpoint(tmp_path, workspace, fake):
    """A server that takes no schema in any form: each form once, then the request without it; the next turn
    (another session, same endpoint) sends none."""

    def strict(reply: Reply):
        def answer_or_refuse(body: dict) -> Reply | Fail:
            if constraint(body) is not None:
                return Fail(
                    400, f"Unsupported parameter: 'response_format.type' {constraint(body)['type']!r}"
                )
            return reply

        return answer_or_refuse

    fake.script(*(strict(r) for r in [Reply(text=f"<tool_call>\n{call('read_file', path='a.txt')}\n</tool_call>")]
                  * 3), strict(Reply(text="It says hello from a.")), strict(Reply(text="Hi there.")))  # fmt: skip
    eng = engine(tmp_path, workspace, fake)
    first = as_json(run_turn(eng, "What does a.txt say?"))
    sent = [kind(r.body) for r in fake.requests]
    # the call (the request names a.txt: held from its first reply), each form refused, then without (the call
    # found in free text); then the answer in one request
    assert sent == ["json_schema", "json_object", None, None]
    assert [e["name"] for e in first if e["type"] == "toolCall"] == ["read_file"]
    assert "".join(e["delta"] for e in first if e["type"] == "text") == "It says hello from a."
    [notice] = [e for e in first if e["type"] == "notice" and e["code"] == "constrained_decoding_refused"]
    assert "response_format" in notice["message"]

    second = as_json(run_turn(eng, "Say hi"))
    assert [constraint(r.body) for r in fake.requests[4:]] == [None]
    assert "".join(e["delta"] for e in second if e["type"] == "text") == "Hi there."
    assert not [e for e in second if e["type"] == "notice" and e["code"] == "constrained_decoding_refused"]


def test_llama_cpp_pythons_own_form_is_found_and_kept(tmp_path, workspace, fake):
    """llama-cpp-python knows only `json_object` with a `schema`, and answers the standard form with a 500."""

    replies = [call("read_file", path="a.txt")] * 3 + [answer("One.")] + [call("read_file", path="a.txt")] * 2 + [
        answer("Two.")]  # fmt: skip

    def llama_cpp_python(body: dict) -> Reply | Fail:
        if (constraint(body) or {}).get("type") == "json_schema":
            replies.pop(0)
            return Fail(500, "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
                             "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}")  # fmt: skip
        assert constraint(body) is None or "read_file" in branches(body)
        return Reply(text=replies.pop(0))

    fake.script(*[llama_cpp_python] * 7)
    eng = engine(tmp_path, workspace, fake)
    assert "".join(e.delta for e in run_turn(eng, "Count") if e.type == "text") == "One."
    assert "".join(e.delta for e in run_turn(eng, "Again") if e.type == "text") == "Two."
    assert [kind(r.body) for r in fake.requests] == [
        None, "json_schema", "json_object", None,  # the call opened free; its form found; the answer free
        None, "json_object", None,  # the form kept
    ]  # fmt: skip
    assert fake.remaining == 0


def test_the_answer_branch_is_shown_as_text_through_sunwell_run(sunwell, fake, workspace):
    said = 'Nothing to do: été \\o/ "quoted"'
    fake.script(Reply(text=answer(said), chunk=2))  # JSON escapes (\u00e9, \\, \") split across chunks
    run = sunwell("run", "Hello", "--model", MODEL, "--base-url", f"{fake.url}/v1", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    texts = [e["delta"] for e in run.events if e["type"] == "text"]
    assert "".join(texts) == said and len(texts) > 3
    assert [kind(r.body) for r in fake.requests] == [None]  # answered free: one request


def test_a_workspace_may_turn_it_off_but_never_on(tmp_path, workspace):
    user = tmp_path / "config" / "sunwell" / "config.yaml"
    user.parent.mkdir(parents=True)
    (workspace / ".sunwell").mkdir()
    local = workspace / ".sunwell" / "config.yaml"

    def constrained(user_models: dict, workspace_models: dict) -> tuple[bool, list[str]]:
        user.write_text(yaml.safe_dump({"models": user_models}))
        local.write_text(yaml.safe_dump({"models": workspace_models}))
        settings = load_settings(workspace, env={"XDG_CONFIG_HOME": str(tmp_path / "config")})
        overrides = {key: value.model_dump(exclude_none=True) for key, value in settings.models.items()}
        return capabilities_for("qwen2.5-coder-0.5b", "openai-compatible", overrides).constrained, \
            settings.ignored_workspace_keys  # fmt: skip

    assert constrained({}, {}) == (True, [])
    assert constrained({MODEL: {"constrained": False}}, {}) == (False, [])
    assert constrained({}, {MODEL: {"constrained": False}}) == (False, [])
    assert constrained({MODEL: {"constrained": True}}, {MODEL: {"constrained": False}}) == (False, [])
    assert constrained({MODEL: {"constrained": False}}, {MODEL: {"constrained": True}}) == (
        False,
        [f"models.{MODEL}.constrained"],
    )
    assert constrained({MODEL: {"context_window": 4096}}, {MODEL: {"constrained": True}}) == (
        True,
        [f"models.{MODEL}.constrained"],
    )


def test_config_turns_it_off_per_model(tmp_path, workspace, fake):
    fake.script(Reply(text="Hello."))
    eng = engine(tmp_path, workspace, fake, models={MODEL: {"constrained": False}})
    assert "".join(e.delta for e in run_turn(eng, "Hi") if e.type == "text") == "Hello."
    assert constraint(fake.requests[0].body) is None
    assert "final_answer" not in fake.requests[0].body["messages"][0]["content"]


# --- the reader alone: any chunking gives the same events ------------------------------------------------------

TOOLS = [ToolSpec(name="write_file", description="Write.", parameters={
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"], "additionalProperties": False})]  # fmt: skip


def read(reply: str, size: int) -> list:
    reader = ConstrainedReply(TOOLS, answer="final_answer")
    events = []
    for i in range(0, len(reply), size):
        events += reader.feed(reply[i : i + size])
    return events + reader.finish()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_an_answer_streams_its_text_whatever_the_chunks(size):
    text = 'Line one\nline "two" \\ é 😀 {"answer": no}'
    for reply in (answer(text), json.dumps({"answer": text}), f"<tool_call>\n{answer(text)}\n</tool_call>"):
        events = read(" " + reply + "\n", size)
        assert all(isinstance(e, TextDelta) for e in events), events
        assert "".join(e.text for e in events).rstrip("\n") == text  # free text keeps what follows its call


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_call_is_one_call_whatever_the_chunks(size):
    arguments = {"path": "b.txt", "content": 'x = "}"\n'}
    events = read(json.dumps({"name": "write_file", "arguments": arguments}), size)
    [done] = [e for e in events if isinstance(e, ToolCallDone)]
    assert (done.name, done.parsed) == ("write_file", arguments)
    assert not [e for e in events if isinstance(e, TextDelta)]


def test_a_reply_that_ignored_the_schema_is_read_as_free_text():
    hermes = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a", "content": "b"}}\n</tool_call>'
    assert [e.name for e in read(hermes, 5) if isinstance(e, ToolCallDone)] == ["write_file"]
    assert "".join(e.text for e in read("Just prose.", 3) if isinstance(e, TextDelta)) == "Just prose."


def test_the_schema_follows_tool_choice():
    names = [b["properties"]["name"]["const"] for b in reply_schema(TOOLS)["anyOf"]]
    assert names == ["write_file", "final_answer"]
    assert len(reply_schema(TOOLS, "required")["anyOf"]) == 1
    schema = reply_schema([*TOOLS, ToolSpec(name="x", description="", parameters={"type": "object"})], "x")
    assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == ["x"]


def test_an_optional_bounded_number_is_left_out_of_the_constraint():
    """llama-cpp-python compiles no bounds: an optional `offset` the grammar allows as -1 was filled so every time."""
    read = ToolSpec(name="read_file", description="Read.", parameters={
        "type": "object", "additionalProperties": False, "required": ["path", "count"], "properties": {
            "path": {"type": "string", "description": "File.", "pattern": "^[^/]"},
            "offset": {"type": "integer", "minimum": 1}, "count": {"type": "integer", "minimum": 1}}})  # fmt: skip
    [branch, _] = reply_schema([read])["anyOf"]
    assert branch["properties"]["arguments"] == {
        "type": "object", "additionalProperties": False, "required": ["path", "count"],
        "properties": {"path": {"type": "string"}, "count": {"type": "integer", "minimum": 1}}}  # fmt: skip


def test_a_long_length_bound_is_left_out_of_the_constraint():
    """Grammar compilers unroll a length bound into nested rules: llama.cpp could not parse `ask_user`'s 2000 and
    llama-cpp-python's server died on it. Short bounds stay; validation still checks the long ones."""
    ask = ToolSpec(name="ask", description="Ask.", parameters={
        "type": "object", "required": ["question"], "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "options": {"type": "array", "items": {"type": "string", "maxLength": 300}, "maxItems": 8},
            "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100}}})  # fmt: skip
    [branch, _] = reply_schema([ask])["anyOf"]
    assert branch["properties"]["arguments"]["properties"] == {
        "question": {"type": "string", "minLength": 1},
        "options": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}}  # fmt: skip


def test_no_offered_tool_asks_the_grammar_for_a_long_unrolled_bound():
    def bounds(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("minLength", "maxLength", "minItems", "maxItems"):
                    yield value
                yield from bounds(value)
        elif isinstance(node, list):
            for item in node:
                yield from bounds(item)

    schema = reply_schema([tool.spec for tool in CORE_TOOLS])
    assert max(bounds(schema), default=0) <= UNROLL_LIMIT
