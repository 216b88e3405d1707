"""What a turn streams from (models/factory.py `provider_for`), through the engine against the scripted server: a
local server that refuses native tools is sent the same request emulated and the session keeps emulating
(docs/config.md "Model strings"); a fault before anything streamed is retried, and said.
"""

from __future__ import annotations

import pytest

from fake_provider import Fail, Reply
from sunwell.agent.chat import UserInput
from sunwell.agent.engine import Engine
from sunwell.agent.session import Session
from sunwell.config import Settings

LOCAL = "openai-compatible:my-model"  # unknown to the registry: native tools, recovered from text too


@pytest.fixture
def session(tmp_path, workspace, fake, monkeypatch):
    for var in ("SUNWELL_MODEL", "SUNWELL_BASE_URL", "SUNWELL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    engine = Engine(Settings(model=LOCAL, base_url=f"{fake.url}/v1", data_dir=tmp_path / "data", approval="auto"),
                    workspace)
    return Session(engine)


async def say(session: Session, line: str) -> list:
    events: list = []
    done = (await session.submit(UserInput(line), events.append)).done
    assert done.status == "completed", done.error
    return events


def chats(fake) -> list[dict]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


async def test_a_server_that_refuses_tools_gets_them_emulated_for_the_rest_of_the_session(session, fake):
    fake.script(Fail(400, "registry.ollama.ai/library/my-model does not support tools"), Reply(text="Hi."),
                Reply(text="Hi again."))
    events = await say(session, "hello")
    assert [e.code for e in events if e.type == "notice" and e.code != "tools_fitted"] == ["emulation_fallback"]
    first, again = chats(fake)
    assert "tools" in first and "tools" not in again and "# Tools" in again["messages"][0]["content"]
    await say(session, "hello again")
    assert "tools" not in chats(fake)[-1]  # remembered: not asked natively again


async def test_a_fault_before_anything_streamed_is_retried_and_said(session, fake):
    fake.script(Fail(503, "overloaded", headers={"retry-after": "0"}), Reply(text="Hi."))
    events = await say(session, "hello")
    assert [e.code for e in events if e.type == "notice" and e.code != "tools_fitted"] == ["provider_retry"]
    assert "".join(e.delta for e in events if e.type == "text") == "Hi."
    assert len(chats(fake)) == 2
