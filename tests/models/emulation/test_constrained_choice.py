"""Answer or call (issue 32 item 3): under constrained decoding the model first chooses free between answering and
calling, and only a call is held to the schema (`models/emulation/choice.py`). Through the real engine and the real
`openai` SDK against the fake Chat Completions server on 127.0.0.1: the request sequence, what streams, what runs."""

from __future__ import annotations

import asyncio
import json

import pytest

from fake_provider import Fail, Reply
from sunwell.models.base import ModelRequest, TextDelta, ToolCallDone
from sunwell.models.emulation.choice import UNDECIDED_MAX, opening
from sunwell.models.emulation.provider import EmulatedProvider
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.wire.messages import ToolSpec, UserMessage
from test_constrained import answer, as_json, branches, call, called, constraint, engine, kind, run_turn


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_a_question_no_tool_answers_is_answered_in_prose_in_one_free_request(tmp_path, workspace, fake):
    said = "Canberra is the capital of Australia. It was chosen as a compromise between Sydney and Melbourne."
    fake.script(Reply(text=said, chunk=3))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "What is the capital of Australia?"))

    assert [kind(r.body) for r in fake.requests] == [None]
    system = fake.requests[0].body["messages"][0]["content"]
    assert '"name": "read_file"' in system and "call final_answer with your reply" in system  # the same prompt
    assert not [e for e in wire if e["type"] == "toolCall"]
    texts = [e["delta"] for e in wire if e["type"] == "text"]
    assert "".join(texts) == said and len(texts) > 10  # it streams as it comes once its opening is told


def test_a_call_opened_free_is_made_under_the_schema_and_only_that_one_runs(tmp_path, workspace, fake):
    # A model may write another call free than held; the free one is closed at its opening and never runs.
    fake.script(Reply(text=call("read_file", path="nowhere.txt") + " and more", chunk=2),
                Reply(text=call("read_file", path="a.txt")), Reply(text="It says hello from a."))  # fmt: skip
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "What do my notes say?"))

    assert [kind(r.body) for r in fake.requests] == [None, "json_schema", None]
    free, held = (fake.requests[i].body for i in (0, 1))
    assert free.pop("logprobs") is True and free.pop("top_logprobs") == 10  # the first token's alternatives
    assert {k: v for k, v in held.items() if k != "response_format"} == free  # one prompt: a server's cache holds
    assert [(e["name"], e["arguments"]) for e in wire if e["type"] == "toolCall"] == [("read_file", {"path": "a.txt"})]
    assert "".join(e["delta"] for e in wire if e["type"] == "text") == "It says hello from a."


def test_the_answer_tools_json_written_free_is_the_answer(tmp_path, workspace, fake):
    fake.script(Reply(text=answer("Nothing to read: hello."), chunk=2))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "Say hello"))
    assert [kind(r.body) for r in fake.requests] == [None]
    assert "".join(e["delta"] for e in wire if e["type"] == "text") == "Nothing to read: hello."


@pytest.mark.parametrize("share,requests", [(0.3, [None, "json_schema", None]), (0.2, [None])])
def test_prose_with_a_call_close_behind_goes_to_the_schema(tmp_path, workspace, fake, share, requests):
    # The free reply follows the likeliest token; the server's log-probabilities say how close a call came.
    first = [("To", 0.5), ('{"', share * 2 / 3), ("```", share / 3), ("Let", 0.05)]
    fake.script(Reply(text="To find the integral, integrate 3x^2 from 1 to 2: it is 7.", first_tokens=first),
                Reply(text=call("read_file", path="a.txt")), Reply(text="It says hello from a."))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "Integrate 3x^2 from 1 to 2"))

    assert [kind(r.body) for r in fake.requests] == requests
    said = "".join(e["delta"] for e in wire if e["type"] == "text")
    if len(requests) == 1:
        assert said.startswith("To find the integral") and not [e for e in wire if e["type"] == "toolCall"]
    else:
        assert [e["name"] for e in wire if e["type"] == "toolCall"] == ["read_file"]
        assert said == "It says hello from a."  # nothing of the free prose reached the user


@pytest.mark.parametrize("line,share,held", [
    ("What is the fastest route from Los Angeles to New York?", 0.34, ["final_answer"]),  # no tool fits it: doubted
    ("What is the fastest route from Los Angeles to New York?", 0.6, None),  # sure of its call: the schema holds it
    ("Read the notes about the route to New York", 0.34, None),  # `read` fits read_file: a call
])
def test_a_call_opened_in_doubt_for_a_line_no_tool_fits_is_held_to_the_answer(tmp_path, workspace, fake, line, share, held):
    """BFCL's irrelevance questions where the model's own template answers: the model opened JSON with little of its
    first token's probability on calling, for a question none of the tools speaks of."""
    first = [('{"', share), ("The", 0.2), ("To", 0.15), ("I", 0.1)]
    opened = Reply(text=call("read_file", path="route.txt"), first_tokens=first)
    if held:
        fake.script(opened, Reply(text=answer("I cannot plan routes: no tool here knows roads.")))
    else:
        fake.script(opened, Reply(text=call("read_file", path="a.txt")), Reply(text="It says hello from a."))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), line))

    schema = branches(fake.requests[1].body)
    calls = [e["name"] for e in wire if e["type"] == "toolCall"]
    if held:
        assert list(schema) == held and calls == []
        assert "".join(e["delta"] for e in wire if e["type"] == "text") == "I cannot plan routes: no tool here knows roads."
    else:
        assert "read_file" in schema and "final_answer" in schema and calls == ["read_file"]


def test_first_tokens_are_read_from_the_first_text_chunk_only_and_bad_ones_dropped():
    from sunwell.models.providers.openai_chat import ChatStreamReducer

    def chunk(text, logprobs):
        return {"choices": [{"index": 0, "delta": {"content": text}, "logprobs": logprobs}]}

    tops = {"content": [{"token": "To", "logprob": -0.5, "top_logprobs": [
        {"token": "To", "logprob": -0.5}, {"token": '{"', "logprob": -1.2}, {"token": 7, "logprob": -2.0},
        {"token": "x", "logprob": "high"}, {"token": "y", "logprob": 3.0}, "junk"]}]}
    reducer = ChatStreamReducer()
    first, second = (next(iter(reducer.feed(chunk(t, tops)))) for t in ("To", " find"))
    assert [(t, round(p, 3)) for t, p in first.first_tokens] == [("To", 0.607), ('{"', 0.301)]
    assert second.first_tokens == ()
    for bad in (None, {}, {"content": None}, {"content": []}, {"content": ["x"]}, {"content": [{"top_logprobs": 5}]}):
        assert next(iter(ChatStreamReducer().feed(chunk("Hi", bad)))).first_tokens == ()


@pytest.mark.parametrize("opened", [
    "```json\n" + call("read_file", path="a.txt") + "\n```",
    "<tool_call>\n" + call("read_file", path="a.txt") + "\n</tool_call>",
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.txt"}}]',
    'read_file(path="a.txt")',
])  # fmt: skip
def test_a_call_opened_in_any_format_goes_to_the_schema(tmp_path, workspace, fake, opened):
    fake.script(Reply(text=opened, chunk=3), *called(call("read_file", path="a.txt"))[1:], Reply(text="Done."))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "Read my notes"))
    assert [kind(r.body) for r in fake.requests] == [None, "json_schema", None]
    assert [e["name"] for e in wire if e["type"] == "toolCall"] == ["read_file"]


def test_a_request_naming_a_workspace_file_is_held_to_a_call_first(tmp_path, workspace, fake):
    """Free to answer, the 0.5B model said what a.txt holds without reading it: a request that names a workspace
    file gets a call first (`required`: no answer branch), then the choice again."""
    fake.script(Reply(text=call("read_file", path="a.txt")), Reply(text="It says hello from a.", chunk=3))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "What does a.txt say?"))

    assert [kind(r.body) for r in fake.requests] == ["json_schema", None]
    held = fake.requests[0].body
    assert "final_answer" not in branches(held) and held["messages"][-1]["content"].endswith(
        "read it with read_file.\nYou must call a tool in this reply.")  # said last: the system prompt stays as it is
    assert held["messages"][0] == fake.requests[1].body["messages"][0]
    assert [e["name"] for e in wire if e["type"] == "toolCall"] == ["read_file"]
    assert "".join(e["delta"] for e in wire if e["type"] == "text") == "It says hello from a."


def test_an_endpoint_that_takes_no_schema_is_asked_once_per_reply(tmp_path, workspace, fake):
    def refuse(reply: Reply):
        return lambda body: Fail(400, "Unsupported parameter: 'response_format'") if constraint(body) else reply

    opened = Reply(text=call("read_file", path="a.txt"))
    fake.script(*(refuse(r) for r in [opened, opened, opened, opened, Reply(text="It says hello from a.")]))
    wire = as_json(run_turn(engine(tmp_path, workspace, fake), "What do my notes say?"))
    # opened free; each form refused, then without: once no form is left, each reply is one request
    assert [kind(r.body) for r in fake.requests] == [None, "json_schema", "json_object", None, None]
    assert [e["name"] for e in wire if e["type"] == "toolCall"] == ["read_file"]


def test_a_reply_that_must_call_is_held_from_its_first_token(fake):
    """`required` (or one tool's name) leaves no answer to choose: one request, with the schema."""
    tool = ToolSpec(name="lookup", description="Look up.", parameters={
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})  # fmt: skip
    fake.script(Reply(text=json.dumps({"name": "lookup", "arguments": {"q": "x"}})))
    provider = EmulatedProvider(OpenAIChat(base_url=f"{fake.url}/v1", api_key="k", name="openai-compatible"),
                                constrained=True)  # fmt: skip
    request = ModelRequest(model="m", system="", messages=[UserMessage(text="find x")], tools=[tool],
                           tool_choice="required")  # fmt: skip

    async def collect() -> list:
        return [event async for event in provider.stream(request)]

    events = asyncio.run(collect())
    assert [kind(r.body) for r in fake.requests] == ["json_schema"]
    assert [(e.name, e.parsed) for e in events if isinstance(e, ToolCallDone)] == [("lookup", {"q": "x"})]
    assert not [e for e in events if isinstance(e, TextDelta)]


TOOLS = ["read_file", "write_file", "get_weather"]
OPENINGS = [
    ("Canberra is the capital.", "answer"),
    ("  \n1. First, preheat the oven", "answer"),
    ("I can't book tables, but", "answer"),
    ("reading files is what I do", "answer"),  # a tool's name begun, then prose
    ("`x` is a variable", "answer"),
    ("```python\ndef is_prime(n):", "answer"),
    ("<b>Bold</b> claim", "answer"),
    (answer("Hi"), "answer"),
    ('{"answer": "Hi"}', "answer"),
    (call("get_weather", city="Paris"), "call"),
    ('{"city": "Paris"}', "call"),  # arguments alone: held, the schema makes a call (or an answer) of it
    ("```json\n" + call("read_file", path="a"), "call"),
    ("```\n" + answer("Hi"), "answer"),
    ("<tool_call>\n" + call("read_file", path="a"), "call"),
    ("<|python_tag|>" + call("read_file", path="a"), "call"),
    ("<read_file><path>a</path></read_file>", "call"),
    ('[{"name": "read_file"}]', "call"),
    ('read_file(path="a")', "call"),
    ('Read_file(path="a")', "call"),
    ("Read the file first", "answer"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "want"), OPENINGS)
def test_an_opening_is_told_the_same_however_it_streams(reply, want):
    # Told at the first prefix that tells, and never changed by what follows: any chunking gives one verdict.
    verdicts = [opening(reply[:i], "final_answer", TOOLS) for i in range(1, len(reply) + 1)]
    told = [v for v in verdicts if v is not None]
    assert told and set(told) == {want}
    assert all(v is not None for v in verdicts[verdicts.index(told[0]):])


def test_an_opening_that_cannot_be_told_is_an_answer_past_the_bound():
    assert opening("```json\n" + " " * 10, "final_answer", TOOLS) is None
    assert opening("```json\n" + " " * UNDECIDED_MAX, "final_answer", TOOLS) == "answer"
