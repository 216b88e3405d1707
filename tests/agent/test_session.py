"""The session API every front end adapts (agent/session.py): typed lines in, events out, the chat's state kept by
the engine between lines, mentions attached once by the turn, a stored session replayed. Against a real engine,
session store and workspace, with the fake provider server as the model."""

from __future__ import annotations

import asyncio

import pytest

from fake_provider import Reply
from sunwell.agent.chat import Overrides, UserInput
from sunwell.agent.mentions import Mention
from sunwell.agent.replay import replay
from sunwell.agent.session import Session
from sunwell.commands_spec import parse_command
from sunwell.wire.messages import ATTACHMENTS_HEADER, UserMessage

OPENAI = "openai:gpt-4o"


def sent_user_text(fake) -> str:
    return [m for m in fake.requests[-1].body["messages"] if m["role"] == "user"][-1]["content"]


async def line(engine, session, text, **options):
    """One line the way the sidecar sends it: a Session asked for anew, by the id the client holds."""
    events = []
    result = await Session(engine, session).submit(UserInput(text, **options), events.append)
    return result.done, events


async def test_what_a_new_chats_commands_change_goes_with_the_session_its_first_turn_makes(engine, fake):
    done, events = await line(engine, None, "::model gpt-4o-mini")
    assert [e.type for e in events] == ["commandOutput", "done"] and done.session == ""
    fake.script(Reply(text="one"), Reply(text="two"))
    first, _ = await line(engine, None, "hello")
    assert fake.requests[-1].body["model"] == "gpt-4o-mini" and first.session
    assert Session(engine, None).state.model is None  # the next new chat starts afresh
    second, _ = await line(engine, first.session, "again")
    assert second.session == first.session and fake.requests[-1].body["model"] == "gpt-4o-mini"
    assert Session(engine, first.session).model_spec().model == "gpt-4o-mini"


async def test_overrides_hold_for_the_rest_of_the_chat(engine, fake):
    fake.script(Reply(text="one"), Reply(text="two"))
    first, _ = await line(engine, None, "hi", overrides=Overrides(model="openai:gpt-4o-mini", trust="read_only"))
    second, _ = await line(engine, first.session, "and again")
    body = fake.requests[-1].body
    assert body["model"] == "gpt-4o-mini" and "write_file" not in {t["function"]["name"] for t in body["tools"]}
    assert Session(engine, second.session).state.trust == "read_only"


async def test_after_clear_the_chat_keeps_its_settings_in_a_new_session(engine, fake):
    fake.script(Reply(text="one"), Reply(text="two"))
    session = Session(engine)
    first = await session.submit(UserInput("hi", overrides=Overrides(model="openai:gpt-4o-mini")), lambda e: None)
    cleared = await session.submit(UserInput("::clear"), lambda e: None)
    assert cleared.done.session == "" and session.id is None
    again = await session.submit(UserInput("hi again"), lambda e: None)
    assert again.done.session not in ("", first.done.session) and fake.requests[-1].body["model"] == "gpt-4o-mini"
    assert [m["role"] for m in fake.requests[-1].body["messages"]] == ["system", "user"]


async def test_a_turn_is_never_a_command(engine, fake):
    """`sunwell run "::help"` asks the model, as it always did; a chat line `::help` is answered by the command."""
    fake.script(Reply(text="Commands start with two colons."))
    done = await Session(engine).turn(UserInput("::help"), lambda e: None)
    assert done.status == "completed" and sent_user_text(fake) == "::help"
    assert parse_command("hello") is None  # a line that is no command is never answered as one


async def test_mentions_are_attached_by_the_turn_within_its_jail(engine, fake, workspace):
    fake.script(Reply(text="ok"), Reply(text="ok"), Reply(text="ok"))
    editor = [Mention("file", "@src/app.py", "src/app.py"), Mention("file", "@.env", ".env")]
    done, _ = await line(engine, None, "what does main return?", mentions=editor)
    sent = sent_user_text(fake)
    assert sent.startswith("what does main return?\n\n" + ATTACHMENTS_HEADER) and "return 42" in sent
    assert "canary-123" not in sent and "(not attached:" in sent  # .env is blocked, as for the tools
    assert engine.store.list()[0].title == "what does main return?"  # the line as typed, not its attachments

    await line(engine, done.session, "and @a.txt?")  # the sidecar's text: its @words are labels, not mentions
    assert sent_user_text(fake) == "and @a.txt?"
    await line(engine, done.session, "and @a.txt?", mentions_in_text=True)  # a terminal's
    assert "hello from a" in sent_user_text(fake)


async def test_a_commands_mentions_are_not_read(engine, fake):
    done, events = await line(engine, None, "::help", mentions=[Mention("file", "@a.txt", "a.txt")])
    assert done.status == "completed" and fake.requests == []
    assert "hello from a" not in events[0].output


async def test_two_lines_of_one_session_wait_for_each_other(engine, fake):
    fake.script(Reply(text="first"))
    first, _ = await line(engine, None, "hello")
    fake.script(Reply(text="slow answer", delay=0.05), Reply(text="second answer"))
    (a, _), (b, _) = await asyncio.gather(line(engine, first.session, "one"),
                                           line(engine, first.session, "two"))
    assert a.status == b.status == "completed"
    messages = engine.store.messages(first.session)
    assert [m.text for m in messages if m.role in ("user", "assistant")] == [
        "hello", "first", "one", "slow answer", "two", "second answer"]


async def test_replay_and_messages_read_the_stored_session(engine, fake):
    fake.script(Reply(text="It says hello."))
    done, _ = await line(engine, None, "what is in a.txt?", mentions=[Mention("file", "@a.txt", "a.txt")])
    session = Session(engine, done.session)
    events = session.replay()
    assert events == replay(engine.store.events(done.session))
    assert events[0].type == "userMessage" and events[0].text == "what is in a.txt?"
    assert events[0].mentions == ["@a.txt"] and events[-1].type == "done"
    assert [m.role for m in session.messages()] == ["user", "assistant"]
    assert Session(engine).replay() == [] and Session(engine).messages() == []


def test_reading_a_session_makes_no_live_state(engine):
    assert Session(engine, "s-unknown").model_spec().model == "gpt-4o"
    assert "s-unknown" not in engine.live


SENT_WITH_ATTACHMENTS = (
    'look at these\n\n[Attached by the user: their content is here, there is no need to read them with a tool]\n\n'
    '<attachment kind="file" path="a.txt">\nhello from a\nsecond line\n\n</attachment>\n\n'
    '<attachment kind="selection" path="src/app.py">\ndef main():\n</attachment>\n\n'
    '<attachment kind="problems" name="problems">\n(empty)\n</attachment>')
"""What a model is sent for a line with attachments: the line, a header, one block per mention, a file by its plain
path (given `name="@a.txt"`, a model called `read_file("@a.txt")`)."""

LOGGED_BEFORE_PARTS = (
    'look at these\n\n[Attached by the user with @mentions]\n\n'
    '<attachment name="@a.txt" kind="file" path="a.txt">\nhello from a\nsecond line\n\n</attachment>\n\n'
    '<attachment name="@sel \'x\'" kind="selection" path="src/app.py">\ndef main():\n</attachment>\n\n'
    '<attachment name="@problems" kind="problems">\n(empty)\n</attachment>')
"""The text a session logged before attachments were parts of their own."""



def _user_contents(body: dict) -> list[str]:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return [m["content"] if isinstance(m["content"], str) else "".join(b["text"] for b in m["content"])
            for m in users]


@pytest.mark.parametrize("model", [OPENAI, "anthropic:claude-sonnet-4-5", "openai-compatible:qwen2.5-coder-0.5b"])
async def test_attachments_reach_every_provider_as_the_same_bytes_now_and_from_the_log(engine, fake, monkeypatch,
                                                                                       model):
    """Native (OpenAI, Anthropic) and emulated alike, in the turn that attached them and in the next turn's history,
    rebuilt from the session log."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    engine.settings.base_url = f"{fake.url}/v1"
    fake.script(Reply(text="Seen."), Reply(text="Still seen."))
    mentions = [Mention("file", "@a.txt", "a.txt"), Mention("selection", '@sel "x"', "src/app.py", "def main():"),
                Mention("problems", "@problems", None, "")]
    session = Session(engine)
    await session.submit(UserInput("look at these", mentions, Overrides(model=model)), lambda e: None)
    # a small model is also told, last, of the files the request names and that it must call (in that request only)
    note = ("\n\nThe user's request names the files a.txt, src/app.py, which exist: read them with read_file."
            "\nYou must call a tool in this reply.")
    assert _user_contents(fake.requests[0].body)[0] == SENT_WITH_ATTACHMENTS + (note if "qwen" in model else "")
    [row] = [r for r in engine.store.events(session.id) if r.kind == "message" and r.data["role"] == "user"]
    assert row.data["text"] == "look at these"  # the attachments are a part of their own, not parsed back
    assert [a["label"] for a in row.data["attachments"]] == ["@a.txt", '@sel "x"', "@problems"]
    await session.submit(UserInput("and now?"), lambda e: None)
    assert _user_contents(fake.requests[1].body)[0] == SENT_WITH_ATTACHMENTS


async def test_a_log_written_before_attachment_parts_sends_and_replays_as_it_did(engine, fake):
    """Sessions stored with the attachments inside the user's text: the model reads them as today's (by path), and a
    replay still shows the line apart from its attachments' labels. A text that is not exactly that stays text."""
    from sunwell.wire.messages import AssistantMessage

    session = engine.open_session(None, "look at these")
    engine.store.append_message(session, "t_old", 0, UserMessage(text=LOGGED_BEFORE_PARTS))
    engine.store.append_message(session, "t_old", 1, AssistantMessage(text="Seen."))
    fake.script(Reply(text="Still seen."))
    await Session(engine, session).submit(UserInput("and now?"), lambda e: None)
    assert _user_contents(fake.requests[0].body) == [SENT_WITH_ATTACHMENTS, "and now?"]
    first = Session(engine, session).replay()[0]
    assert (first.text, first.mentions) == ("look at these", ["@a.txt", "@sel 'x'", "@problems"])
    odd = LOGGED_BEFORE_PARTS.replace("</attachment>\n\n<attachment name=\"@sel", "</attachment>\n<attachment name=\"@sel")
    assert UserMessage(text=odd).content_for_model() == odd


async def test_a_constrained_small_model_is_told_the_request_again_with_its_attachments(engine, fake):
    """After a result, constrained emulation says the request again: the line with its attachments, as before."""
    from test_constrained import answer, call, called

    engine.settings.base_url = f"{fake.url}/v1"
    fake.script(*called(call("read_file", path="a.txt")), Reply(text=answer("Done.")))
    mentions = [Mention("file", "@a.txt", "a.txt"), Mention("selection", '@sel "x"', "src/app.py", "def main():"),
                Mention("problems", "@problems", None, "")]
    overrides = Overrides(model="openai-compatible:qwen2.5-coder-0.5b")
    done = await Session(engine).submit(UserInput("look at these", mentions, overrides), lambda e: None)
    assert done.done.status == "completed", done.done.error
    last = fake.requests[2].body["messages"][-1]["content"]
    assert last.startswith("Result of read_file(") and f"The request was: {SENT_WITH_ATTACHMENTS}\n" in last
