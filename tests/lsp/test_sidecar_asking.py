"""What the sidecar asks its client besides approvals, over real stdio against `python -m sunwell.lsp`: `ask_user`'s
`sunwell/ask` (answered, never answered, answered with garbage, a client that does not answer questions) and the
code intelligence tools' `sunwell/codeIntel` (offered only to a client that answers it; every location through the
jail; garbage answers; an editor that never answers)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from fake_provider import Call, Reply
from sunwell.wire import protocol
from test_sidecar_support import OPENAI, check_turn

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures


def options(tmp_path: Path, **capabilities: bool) -> dict:
    return {"dataDir": str(tmp_path / "data"), "model": OPENAI, "clientCapabilities": capabilities}


def ask(question: str = "Which database?", choices: list[str] | None = None) -> Reply:
    arguments = {"question": question, **({"options": choices} if choices is not None else {})}
    return Reply(tool_calls=[Call("ask_user", json.dumps(arguments))])


def result_of(events: list[dict], name: str) -> dict:
    return next(e for e in events if e["type"] == "toolResult" and e["name"] == name)


# ---- ask_user ----------------------------------------------------------------------------------------------------


async def test_a_question_goes_to_the_client_and_its_answer_to_the_model(sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory(options(tmp_path, ask=True))
    sidecar.reply = lambda params: {"answer": "SQLite, it is a prototype"}
    fake.script(ask(choices=["PostgreSQL", "SQLite"]), Reply(text="SQLite then"))
    result, events = await sidecar.chat("set up the storage")
    check_turn(events, result)
    [asked] = sidecar.questions
    call = next(e for e in events if e["type"] == "toolCall")
    assert asked == {"session": result["session"], "turn": result["turn"], "callId": call["callId"],
                     "question": "Which database?", "options": ["PostgreSQL", "SQLite"]}
    answer = result_of(events, "ask_user")
    assert answer["ok"] and answer["output"] == 'The user answered: "SQLite, it is a prototype"'
    said = fake.requests[-1].body["messages"][-1]
    assert said["role"] == "tool" and "SQLite, it is a prototype" in said["content"]


async def test_a_declined_never_answered_or_garbage_answer_is_no_answer(sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory({**options(tmp_path, ask=True), "approvalTimeoutSec": 1})
    answers = iter([{"answer": None}, asyncio.sleep(30), {"answer": 42}, "yes", {"decision": "allow"}])
    sidecar.reply = lambda params: next(answers)
    for _ in range(5):
        fake.script(ask(), Reply(text="going on without"))
        result, events = await sidecar.chat("go")
        check_turn(events, result)
        output = result_of(events, "ask_user")["output"]
        assert result_of(events, "ask_user")["ok"] and output.startswith("The user did not answer"), output
    assert len(sidecar.questions) == 5
    await sidecar.wait_for(lambda: sidecar.questions_cancelled)  # the question it gave up on is withdrawn
    assert sidecar.questions_cancelled == [sidecar.questions[1]["callId"]]


async def test_a_client_that_answers_no_questions_gets_none(sidecar, fake):
    fake.script(ask(), Reply(text="deciding myself"))
    result, events = await sidecar.chat("go")
    check_turn(events, result)
    assert result_of(events, "ask_user")["error"]["code"] == "unsupported"
    assert sidecar.questions == []


async def test_a_cancelled_turn_withdraws_its_question(sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory(options(tmp_path, ask=True))
    sidecar.reply = lambda params: asyncio.sleep(30)
    fake.script(ask())
    msg_id = sidecar.next_id()
    chat = asyncio.ensure_future(sidecar.request(protocol.CHAT, {"text": "go"}, msg_id=msg_id))
    await sidecar.wait_for(lambda: sidecar.questions)
    sidecar.cancel(msg_id)
    with contextlib.suppress(Exception):  # RequestCancelled, or a result of status cancelled
        await asyncio.wait_for(chat, 5)
    await sidecar.wait_for(lambda: sidecar.questions_cancelled)
    done = await sidecar.wait_for(lambda: next((e for e in sidecar.events if e["type"] == "done"), None))
    assert done["status"] == "cancelled"


# ---- code intelligence -------------------------------------------------------------------------------------------


async def test_code_intelligence_is_offered_only_to_a_client_that_answers_it(sidecar_factory, tmp_path):
    plain = await sidecar_factory()
    names = {tool["name"] for tool in (await plain.request(protocol.TOOLS, {}))["tools"]}
    assert {"ask_user", "task"} <= names and not names & {"diagnostics", "find_symbol", "find_definition",
                                                          "find_references"}
    editor = await sidecar_factory(options(tmp_path, codeIntel=True))
    names = {tool["name"] for tool in (await editor.request(protocol.TOOLS, {}))["tools"]}
    assert {"diagnostics", "find_symbol", "find_definition", "find_references"} <= names


async def test_every_location_goes_through_the_jail(sidecar_factory, fake, workspace, tmp_path):
    (workspace / "src" / "config.ts").write_text("import x from './x';\nexport function parseConfig(text: string) {\n"
                                                 "  return JSON.parse(text);\n}\n")
    outside = tmp_path / "outside.ts"
    outside.write_text("export function parseConfig() {}\n")
    (workspace / "escape.ts").symlink_to(outside)
    sidecar = await sidecar_factory(options(tmp_path, codeIntel=True))
    sidecar.lookup = lambda params: {"items": [
        {"path": str(workspace / "src" / "config.ts"), "line": 2, "column": 17, "text": "parseConfig (Function)"},
        {"path": "file://" + str(workspace / "src" / "config.ts"), "line": 3, "column": 3},
        {"path": "src/config.ts", "line": 1, "column": 1, "text": ""},
        {"path": str(outside), "line": 1, "column": 17, "text": "parseConfig"},
        {"path": "escape.ts", "line": 1, "column": 1},
        {"path": "../outside.ts", "line": 1, "column": 1},
        {"path": ".env", "line": 1, "column": 1, "text": "SECRET"},
        {"path": "src/config.ts", "line": "two"},
        {"line": 4},
        "src/config.ts:1",
    ]}
    fake.script(Reply(tool_calls=[Call("find_symbol", '{"query": "parseConfig"}')]), Reply(text="found"))
    result, events = await sidecar.chat("where is parseConfig?")
    check_turn(events, result)
    assert sidecar.intel == [{"kind": "symbols", "query": "parseConfig"}]
    found = result_of(events, "find_symbol")
    assert found["ok"], found
    assert found["output"].splitlines() == [
        "src/config.ts:2:17: parseConfig (Function)",
        "    | export function parseConfig(text: string) {",
        "src/config.ts:3:3: return JSON.parse(text);",
        "src/config.ts:1:1: import x from './x';",
        "(7 location(s) outside the workspace, blocked or malformed were left out)",
    ]
    assert "SECRET" not in json.dumps(events) and str(tmp_path) not in found["output"]


async def test_the_editor_is_asked_only_about_workspace_paths_and_its_garbage_is_an_error(
        sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory(options(tmp_path, codeIntel=True))
    answers = iter(["garbage", {"items": "none"}, {"items": []}])
    sidecar.lookup = lambda params: next(answers)
    fake.script(Reply(tool_calls=[Call("diagnostics", '{"path": "../elsewhere"}'),
                                  Call("diagnostics", '{"path": ".env"}'),
                                  Call("find_definition", '{"symbol": "main", "path": "src/app.py"}'),
                                  Call("find_references", '{"symbol": "main"}'),
                                  Call("diagnostics", "{}")]),
                Reply(text="done"))
    result, events = await sidecar.chat("check")
    check_turn(events, result)
    outcomes = [(e["name"], e["error"]["code"] if e["error"] else e["output"]) for e in events
                if e["type"] == "toolResult"]
    assert outcomes == [("diagnostics", "permission"), ("diagnostics", "permission"),
                        ("find_definition", "execution"), ("find_references", "execution"),
                        ("diagnostics", "No problems found.")]
    assert sidecar.intel == [{"kind": "definition", "symbol": "main", "path": "src/app.py"},
                             {"kind": "references", "symbol": "main"}, {"kind": "diagnostics"}]


async def test_an_editor_that_never_answers_is_a_clear_error_and_the_turn_goes_on(sidecar_factory, fake, tmp_path):
    from sunwell.config import Settings
    from sunwell.tools.handlers.code_intel import EDITOR_WAIT

    sidecar = await sidecar_factory(options(tmp_path, codeIntel=True))
    sidecar.lookup = lambda params: asyncio.sleep(3600)
    fake.script(Reply(tool_calls=[Call("find_symbol", '{"query": "parseConfig"}')]), Reply(text="searching instead"))
    result, events = await sidecar.chat("where is parseConfig?")
    check_turn(events, result)
    given_up = result_of(events, "find_symbol")
    assert EDITOR_WAIT * 1000 <= given_up["durationMs"] < Settings().tool_timeout_sec * 1000  # within the call's
    error = given_up["error"]
    assert error["code"] == "timeout" and "the editor did not answer" in error["message"], error
    assert "search_files" in error["suggestion"]
    assert result["status"] == "completed" and "did not answer" in fake.requests[-1].body["messages"][-1]["content"]
