"""The context budget (issue 13): every request counted and fitted to the window, old results elided, older turns
compacted into a summary that the session log keeps, length refusals handled once and never blindly, project
instructions read into the prompt, `::compact` and `::context`.

The provider is the scripted fake server with a context limit: it counts each request's tokens, refuses one that
does not fit with the vendor's real error (status and body, through the real SDKs) and reports usage as it counted.
"""

from __future__ import annotations

import json

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Fail, Reply
from sunwell.agent.chat import UserInput
from sunwell.agent.commands import run_command
from sunwell.agent.engine import Engine
from sunwell.agent.prompts import COMPACT_SYSTEM, SUMMARY_HEADING
from sunwell.agent.session import Session
from sunwell.commands_spec import parse_command
from sunwell.config import ModelOverride, Settings
from sunwell.models.base import ModelRequest
from sunwell.models.providers.openai_chat import map_messages
from sunwell.tools.registry import CORE_TOOLS

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"
FILE_LINES = 200  # ~7,000 bytes: ~2,000 tokens a read


@pytest.fixture
def files(workspace):
    """Twelve files of ~7 KB each: reading them all takes several times an 8k window."""
    for n in range(12):
        lines = [f"def func_{n}_{i}(value):  # helper {i} of file {n}\n    return value * {i} + {n}\n"
                 for i in range(FILE_LINES // 2)]
        (workspace / f"f{n}.py").write_text("".join(lines))
    return workspace


@pytest.fixture
def make_engine(tmp_path, fake, monkeypatch):
    for var in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "SUNWELL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def make(workspace, model=OPENAI, window=None, data="data", **settings):
        models = {model: ModelOverride(context_window=window)} if window else {}
        settings.setdefault("approval", "auto")
        return Engine(Settings(model=model, data_dir=tmp_path / data, models=models, **settings), workspace)

    return make


EXPENDABLE = {tool.name for tool in CORE_TOOLS if tool.expendable}


def is_summariser(body) -> bool:
    system = body.get("system") or next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    return COMPACT_SYSTEM in json.dumps(system)


class Model:
    """The scripted model: reads the files of `plan` one call per round (saying `says` first), answers, and
    summarises when asked."""

    def __init__(self, fake, plan: list[list[str]], says: str = ""):
        self.plan = [list(reads) for reads in plan]
        self.summaries, self.says = 0, says
        fake.script(*[self] * 200)

    def __call__(self, body):
        if is_summariser(body):
            self.summaries += 1
            return Reply(text=f"Summary {self.summaries}: the user had files read; func names noted.")
        reads = self.plan[0]
        if reads:
            return Reply(text=self.says, tool_calls=[Call("read_file", json.dumps({"path": reads.pop(0)}))])
        self.plan.pop(0)
        return Reply(text="Read them all.")


def requests_fit(fake) -> None:
    for request in fake.requests:
        body = request.body
        asked = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        assert request.tokens + asked <= fake.context_limit or request.tokens is None


async def turn(session, line, events=None):
    sink = (events.append if events is not None else lambda event: None)
    result = await session.submit(UserInput(line), sink)
    return result.done


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
async def test_reads_adding_up_to_several_windows_finish_without_a_refusal(fake, files, make_engine, model):
    fake.context_limit = 8192
    engine = make_engine(files, model, window=8192)
    session = Session(engine)
    plan = [[f"f{n}.py" for n in range(t * 4, t * 4 + 4)] for t in range(3)]  # 12 reads, ~24k tokens
    scripted = Model(fake, plan)
    events = []
    for t in range(3):
        done = await turn(session, f"read batch {t}", events)
        assert done.status == "completed", done.error
    assert fake.refusals == 0
    requests_fit(fake)
    notices = [e for e in events if e.type == "notice"]
    assert any(n.code == "compacted" for n in notices) or scripted.summaries == 0
    usage = [e for e in events if e.type == "contextUsage"]
    assert len(usage) == len([r for r in fake.requests if not is_summariser(r.body)])
    assert all(not e.estimated and e.window_tokens == 8192 and e.used_tokens <= 8192 for e in usage)
    total_read = sum((files / f"f{n}.py").stat().st_size for n in range(12)) / 3.5
    assert total_read > 2 * 8192  # the reads really add up to several windows
    sent = json.dumps(fake.requests[-1].body)
    assert "was elided to keep the conversation" in sent or SUMMARY_HEADING in sent


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
async def test_an_unknown_window_is_learned_from_the_first_refusal_and_kept(fake, files, make_engine, model):
    """The registry says 128k/200k; the server has 8k: one refusal (its limit read from the vendor's words), the
    window corrected for the session, the request retried once made smaller, and no refusal after that."""
    fake.context_limit = 8192
    engine = make_engine(files, model)
    session = Session(engine)
    Model(fake, [[f"f{n}.py" for n in range(t * 4, t * 4 + 4)] for t in range(3)])
    events = []
    for t in range(3):
        done = await turn(session, f"read batch {t}", events)
        assert done.status == "completed", done.error
    assert fake.refusals == 1
    [overflow] = [e for e in events if e.type == "notice" and e.code == "context_overflow"]
    assert "8,192 tokens" in overflow.message
    assert engine.live.get(session.id).window == 8192
    usage = [e for e in events if e.type == "contextUsage"]
    assert usage[-1].window_tokens == 8192
    assert "8,192 tokens (refusal)" in (await run_command(engine, session.state, parse_command("::context"))).output


async def test_usage_calibrates_the_estimate_and_without_it_the_figure_is_an_estimate(fake, files, make_engine):
    engine = make_engine(files, window=16384)
    session = Session(engine)
    fake.script(Reply(text="one", send_usage=False), Reply(text="two", usage=(12, 3)))  # 12: a prompt cache's count
    events = []
    await turn(session, "first", events)
    await turn(session, "second", events)
    first, second = [e for e in events if e.type == "contextUsage"]
    assert first.estimated and second.estimated and first.used_tokens > 500 and second.window_tokens == 16384
    assert not engine.live.get(session.id).context.calibrated  # neither taught anything

    fake.context_limit = 16384  # counted by the server from now on
    fake.script(Reply(text="three"))
    await turn(session, "third", events)
    third = [e for e in events if e.type == "contextUsage"][-1]
    counted = fake.requests[-1].tokens
    assert not third.estimated and third.used_tokens == counted + 1  # "three": one token of output
    context = engine.live.get(session.id).context
    assert context.calibrated and context.used == third.used_tokens


async def test_a_refusal_that_states_no_limit_lowers_the_window_to_a_likely_size(fake, files, make_engine):
    engine = make_engine(files, window=32768)
    session = Session(engine)
    fake.script(Fail(400, "the request exceeds the available context size, try increasing it"),
                Reply(text="Fine."))
    events = []
    # The instructions and tools are ~3.6k tokens, a hair under a 4k window's room: a ~2k-token line puts the request
    # well inside the 8k guess, however long the workspace's path (pytest-xdist's is longer) or a tool's description.
    done = await turn(session, "hello " + "more words here " * 500, events)
    assert done.status == "completed" and len(fake.requests) == 2, done.error
    [overflow] = [e for e in events if e.type == "notice" and e.code == "context_overflow"]
    # sent ~5.6k tokens + the 4,096 reserved for the answer: the largest power of two below that
    assert "taken as 8,192 tokens (was 32,768)" in overflow.message
    assert fake.requests[1].body["max_completion_tokens"] == 1024  # the answer's reserve in an 8k window


async def test_a_conversation_that_cannot_fit_even_after_compaction_ends_clearly(fake, files, make_engine):
    """The server's window (600) cannot hold the instructions and tools: one refusal, no blind retry, one line."""
    fake.context_limit = 600
    engine = make_engine(files, window=8192)
    session = Session(engine)
    fake.script(*[Reply(text="never")] * 3)
    done = await turn(session, "hello")
    assert done.status == "error" and fake.refusals == 1 and len(fake.requests) == 1
    assert "does not fit the model's context window of 600 tokens (refusal)" in done.error
    assert "::compact" in done.error and "new session" in done.error and "larger window" in done.error
    assert "\n" not in done.error


async def test_a_second_refusal_after_making_room_ends_the_turn(fake, files, make_engine):
    engine = make_engine(files, window=32768)
    session = Session(engine)
    refusal = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    fake.script(Fail(400, refusal), Fail(400, refusal), Reply(text="never"))
    done = await turn(session, "hello")
    assert done.status == "error" and len(fake.requests) == 2 and fake.remaining == 1
    assert "refused the request for length again" in done.error and "::compact" in done.error


async def test_one_result_larger_than_the_room_is_cut_with_the_usual_hint(fake, workspace, make_engine):
    fake.context_limit = 4096
    (workspace / "big.py").write_text("".join(f"def func_{i}():\n    return {i}\n" for i in range(1000)))  # 25 KB
    engine = make_engine(workspace, window=4096)
    session = Session(engine)
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "big.py"}')]), Reply(text="func_599 returns 599"))
    events = []
    done = await turn(session, "Read big.py and tell me what func_599 returns", events)
    assert done.status == "completed" and fake.refusals == 0, done.error
    requests_fit(fake)
    sent = json.dumps(fake.requests[-1].body)
    assert "[output truncated: showed" in sent and "offset/limit" in sent
    assert any(e.type == "notice" and e.code == "result_cut" for e in events)
    # the toolResult event shows what the tool returned; the model was sent what fits
    [result] = [e for e in events if e.type == "toolResult"]
    assert len(result.output) > len(json.loads(sent)["messages"][-1]["content"])


async def test_a_read_larger_than_a_window_learned_mid_turn_is_cut_to_fit(fake, workspace, make_engine):
    """The registry says 32k, the server has 5k: the refusal comes with the big result already in the turn and a
    long user line, and the one retry still fits the learned window, the result cut with the usual hint. (The turn
    keeps the tools it was planned with, every one of them at 32k: ~3,600 tokens with the system prompt.)"""
    fake.context_limit = 5120
    (workspace / "big.py").write_text("".join(f"def func_{i}():\n    return {i}\n" for i in range(1000)))  # 25 KB
    engine = make_engine(workspace, window=32768)
    session = Session(engine)
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "big.py"}')]), Reply(text="func_599 returns 599"))
    done = await turn(session, "Read big.py and tell me what func_599 returns " + "please " * 300)
    assert done.status == "completed" and fake.refusals == 1, done.error
    assert "[output truncated: showed" in json.dumps(fake.requests[-1].body)


async def test_a_restored_session_sends_exactly_what_it_sent_before(fake, files, make_engine):
    """Elisions and a compaction mid-turn are log entries: a fresh engine (a restored session) rebuilds the very
    history the last request carried, without summarising again; the original messages stay in the log."""
    fake.context_limit = 8192
    engine = make_engine(files, window=8192)
    session = Session(engine)
    thoughts = "I will now read the next file and compare its helpers with the ones I have seen so far. " * 12
    scripted = Model(fake, [[f"f{n % 12}.py" for n in range(16)]], says=thoughts)  # what it says is never elided
    done = await turn(session, "read sixteen files")
    assert done.status == "completed" and scripted.summaries >= 1
    last = next(r.body for r in reversed(fake.requests) if not is_summariser(r.body))
    assert SUMMARY_HEADING in json.dumps(last["messages"]) and "was elided" in json.dumps(last["messages"])

    restored, summaries = make_engine(files, window=8192), scripted.summaries  # same data dir, nothing live
    history = restored.store.messages(session.id)
    resent = map_messages(ModelRequest(model="gpt-4o", system=last["messages"][0]["content"], messages=history))
    assert resent == [*last["messages"], {"role": "assistant", "content": "Read them all."}]

    scripted.plan.append([])  # the next turn: an answer, no reads
    done = await turn(Session(restored, session.id), "and now?")
    assert done.status == "completed" and scripted.summaries == summaries, done.error
    first = fake.requests[-1].body
    # system, summary; and the same tools, but for the conveniences fitting picks by each line's words
    essential = [[t for t in body["tools"] if t["function"]["name"] not in EXPENDABLE] for body in (first, last)]
    assert essential[0] == essential[1] and first["messages"][:2] == last["messages"][:2]

    exported = restored.store.export(session.id)
    assert "compaction" in [e["kind"] for e in exported["events"]]
    originals = [e for e in exported["events"] if e["kind"] == "message" and e["data"]["role"] == "tool_result"]
    assert len(originals) == 16 and all("def func_" in e["data"]["output"] for e in originals)
    assert len(restored.store.messages(session.id)) < len(restored.store.messages(session.id, original=True))


async def test_compact_on_demand_keeps_what_is_asked_and_the_last_turn(fake, files, make_engine):
    engine = make_engine(files)
    session = Session(engine)
    Model(fake, [["f0.py", "f1.py"], ["f2.py"]])
    for t in range(2):
        assert (await turn(session, f"turn {t}")).status == "completed"
    events = []
    result = await session.submit(UserInput("::compact the function names"), events.append)
    assert result.done.status == "completed"
    notice = next(e for e in events if e.type == "notice")
    assert notice.code == "compacted" and "messages summarised" in notice.message
    output = next(e for e in events if e.type == "commandOutput").output
    assert output.startswith("Compacted ") and "tokens" in output
    assert any(e.type == "contextUsage" for e in events)
    summariser = next(r.body for r in reversed(fake.requests) if is_summariser(r.body))
    assert "the function names" in json.dumps(summariser)
    compact = parse_command("::compact")
    assert (await run_command(engine, session.state, compact)).output.startswith("Nothing to compact")

    fake.script(Reply(text="ok"))
    await turn(session, "next")
    messages = fake.requests[-1].body["messages"]
    assert SUMMARY_HEADING in messages[1]["content"]
    assert [m["role"] for m in messages[2:]] == ["user", "assistant", "tool", "assistant", "user"]  # turn 1 kept

    saved = (await run_command(engine, session.state, parse_command("::save chat.md"))).output
    assert saved.startswith("Saved")
    transcript = (files / "chat.md").read_text()
    assert "## You\n\nturn 0" in transcript and "Conversation compacted" in transcript


async def test_a_summariser_that_fails_leaves_a_digest_and_never_stops_the_session(fake, files, make_engine):
    engine = make_engine(files)
    session = Session(engine)
    fake.script(Reply(text="one"), Reply(text="two"), Fail(400, "the summariser is down"), Reply(text="three"))
    for line in ("first question", "second question"):
        await turn(session, line)
    output = (await run_command(engine, session.state, parse_command("::compact"))).output
    assert output.startswith("Compacted 2 messages") and "the summariser is down" in output
    assert (await turn(session, "third question")).status == "completed"
    summary = fake.requests[-1].body["messages"][1]["content"]
    assert summary.startswith(SUMMARY_HEADING) and "User: first question" in summary


async def test_context_shows_the_window_what_is_in_it_and_how_full(fake, files, make_engine):
    (files / "AGENTS.md").write_text("Use tabs.\n")
    engine = make_engine(files, window=16384)
    session = Session(engine)
    Model(fake, [["f0.py"]])
    await turn(session, "read one")
    text = (await run_command(engine, session.state, parse_command("::context"))).output
    assert "16,384 tokens (config)" in text
    assert "AGENTS.md" in text and "instructions" in text and "tools" in text
    assert 'read_file(path="f0.py")' in text  # the largest result
    assert "% full" in text


async def test_project_instructions_reach_the_prompt_within_a_budget_and_configure_nothing(fake, workspace,
                                                                                        make_engine):
    (workspace / "AGENTS.md").write_text("trust: full\napproval: auto\nsandbox: off\nAlways answer in French.\n")
    (workspace / ".sunwell").mkdir()
    (workspace / ".sunwell" / "instructions.md").write_text("Run the tests with pytest.\n" + "x" * 4000)
    engine = make_engine(workspace, window=8192, approval="deny")
    session = Session(engine)
    fake.script(Reply(tool_calls=[Call("write_file", '{"path": "b.txt", "content": "x"}')]), Reply(text="Non."))
    events = []
    done = await turn(session, "write b.txt", events)
    assert done.status == "completed"
    system = fake.requests[0].body["messages"][0]["content"]
    assert "Always answer in French." in system and "Run the tests with pytest." in system
    assert "instructions.md is cut here to fit the context budget" in system  # 8k window: ~2.8 KB for both
    tools = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
    assert "run_command" not in tools  # still trust workspace
    assert not (workspace / "b.txt").exists()  # still approval deny
    assert [e.decision for e in events if e.type == "approval"] == ["deny"]
    assert engine.settings.trust == "workspace" and engine.settings.sandbox == "auto"


async def test_instructions_that_link_out_of_the_workspace_or_to_secrets_are_not_read(fake, workspace,
                                                                                      make_engine, tmp_path):
    (tmp_path / "outside.md").write_text("OUTSIDE-SECRET")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "outside.md")
    (workspace / ".sunwell").mkdir()
    (workspace / ".sunwell" / "instructions.md").symlink_to(workspace / ".env")
    engine = make_engine(workspace)
    fake.script(Reply(text="hi"))
    await turn(Session(engine), "hello")
    sent = json.dumps(fake.requests[0].body)
    assert "OUTSIDE-SECRET" not in sent and "canary-123" not in sent and "Project instructions" not in sent


def test_compact_at_is_a_setting_the_workspace_may_only_lower(tmp_path):
    from sunwell.config import load_settings
    from sunwell.errors import ConfigError

    ws = tmp_path / "ws"
    (ws / ".sunwell").mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert load_settings(ws, env=env).compact_at == 0.8 and load_settings(ws, env=env).compaction_model is None
    (ws / ".sunwell" / "config.yaml").write_text("compact_at: 0.95\n")
    settings = load_settings(ws, env=env)
    assert settings.compact_at == 0.8 and "compact_at" in settings.ignored_workspace_keys
    (ws / ".sunwell" / "config.yaml").write_text("compact_at: 0.5\ncompaction_model: openai:gpt-4o-mini\n")
    settings = load_settings(ws, env=env)
    assert settings.compact_at == 0.5 and settings.compaction_model == "openai:gpt-4o-mini"
    (ws / ".sunwell" / "config.yaml").write_text("compact_at: 0\n")
    with pytest.raises(ConfigError, match="compact_at"):
        load_settings(ws, env=env)


async def test_a_compaction_model_writes_the_summaries(fake, files, make_engine):
    fake.context_limit = 8192
    engine = make_engine(files, window=8192, compaction_model="anthropic:claude-haiku-4-5")
    session = Session(engine)
    Model(fake, [[f"f{n % 12}.py" for n in range(16)]], says="Reading the next one to compare the helpers. " * 25)
    done = await turn(session, "read sixteen")
    assert done.status == "completed"
    summarisers = [r for r in fake.requests if is_summariser(r.body)]
    assert summarisers and all(r.path == "/v1/messages" for r in summarisers)
    assert all(r.body["model"] == "claude-haiku-4-5" for r in summarisers)


def test_the_cli_prints_one_line_per_compaction(sunwell, fake, files, tmp_path):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text('models:\n  "openai:gpt-4o": {context_window: 8192}\n')
    fake.context_limit = 8192
    scripted = Model(fake, [[f"f{n % 12}.py" for n in range(16)]],
                     says="Reading the next one to compare the helpers. " * 25)
    run = sunwell("run", "read sixteen", "--model", OPENAI)
    assert run.code == 0, run.stderr
    compacted = [line for line in run.stdout.splitlines() if "compacted" in line]
    assert compacted and all(line.startswith("── conversation compacted: ") and line.endswith(" ──")
                             for line in compacted)
    assert "messages summarised" in compacted[0] and "tokens" in compacted[0]

    scripted.plan.append(["f0.py"])
    run = sunwell("run", "one more", "--model", OPENAI, "--json")
    check_stream_rules(run.events)
    usage = [e for e in run.events if e["type"] == "contextUsage"]
    assert len(usage) == 2 and all(set(e) >= {"usedTokens", "windowTokens", "estimated"} for e in usage)
    assert usage[-1]["windowTokens"] == 8192 and usage[-1]["estimated"] is False


def test_the_log_rebuilds_elisions_and_compactions_and_keeps_the_originals(tmp_path):
    from sunwell.agent.prompts import summary_message
    from sunwell.agent.sessions import SessionStore
    from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    with SessionStore(tmp_path / "sessions.db") as store:
        session = store.create("s")
        store.append_message(session, "t1", 0, UserMessage(text="read a"))
        store.append_message(session, "t1", 1, AssistantMessage(tool_calls=[call]))
        store.append_message(session, "t1", 2, ToolResultMessage(call_id="c1", name="read_file", output="x" * 900))
        store.append_message(session, "t1", 3, AssistantMessage(text="It is x."))
        store.append_elision(session, "t2", 0, {"c1": "[elided]"}, 200)
        assert store.messages(session)[2].output == "[elided]"
        store.append(session, "t2", 1, "compaction", "?", {"summary": "not a message"})  # skipped, with a warning
        summary = summary_message("they read a", 4, None)
        store.append_compaction(session, "t2", 2, summary, [UserMessage(text="next")], 4, 300, 20)
        store.append_message(session, "t2", 3, AssistantMessage(text="ok"))
        assert [type(m).__name__ for m in store.messages(session)] == ["UserMessage", "UserMessage",
                                                                       "AssistantMessage"]
        assert store.messages(session)[0] == summary
        original = store.messages(session, original=True)
        assert original[2].output == "x" * 900 and original[4] == summary and original[-1].text == "ok"
