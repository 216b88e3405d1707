"""Issue 47: what a model taught Sunwell is kept across sessions (models/model_facts.py). Through the real CLI against
the scripted server: a first process learns that the server refuses `tools`; a second starts emulated without the
failed request; `sunwell models MODEL` shows it, `--forget` clears it; an explicit override in config still wins."""

from __future__ import annotations

import json

import yaml

from conftest import check_stream_rules
from fake_provider import Fail, Reply

MODEL = "openai-compatible:my-model"  # unknown to the registry: tools offered natively at first
REFUSED = "registry.ollama.ai/library/my-model does not support tools"


def turn(sunwell, fake, prompt: str = "hello"):
    run = sunwell("run", prompt, "--model", MODEL, "--base-url", f"{fake.url}/v1", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    return run


def chats(fake) -> list[dict]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


def notices(run) -> list[str]:
    return [e["code"] for e in run.events if e["type"] == "notice" and e["code"] != "tools_fitted"]


def test_a_refused_tools_request_is_not_sent_again_in_the_next_session(sunwell, fake, tmp_path):
    fake.script(Fail(400, REFUSED), Reply(text="Hi."))
    first = turn(sunwell, fake)
    assert notices(first) == ["emulation_fallback"]
    assert ["tools" in body for body in chats(fake)] == [True, False]
    table = json.loads((tmp_path / "data" / "model_facts.json").read_text())
    [facts] = table["models"].values()
    assert facts["toolsRejected"] is True and facts["model"] == MODEL and facts["baseUrl"] == f"{fake.url}/v1"

    fake.script(Reply(text="Hi again."))
    second = turn(sunwell, fake, "hello again")  # another process: the session's memory is gone, the table is not
    assert notices(second) == []
    assert len(chats(fake)) == 3 and "tools" not in chats(fake)[-1]
    assert "# Tools" in chats(fake)[-1]["messages"][0]["content"]  # emulated from its first request

    shown = sunwell("models", MODEL)
    assert shown.code == 0, shown.stderr
    assert f"learned at {fake.url}/v1: the server refused tools, so turns start emulated" in shown.stdout
    [as_json] = [json.loads(line) for line in sunwell("models", MODEL, "--json").stdout.splitlines()]
    assert as_json["learned"][f"{fake.url}/v1"]["toolsRejected"] is True

    forgot = sunwell("models", MODEL, "--forget")
    assert forgot.code == 0 and "forgot" in forgot.stdout
    assert "learned at" not in sunwell("models", MODEL).stdout
    fake.script(Reply(text="Native again."))
    turn(sunwell, fake, "and now?")
    assert "tools" in chats(fake)[-1]  # forgotten: asked natively again


def test_an_override_in_config_wins_over_what_was_learned(sunwell, fake, tmp_path):
    fake.script(Fail(400, REFUSED), Reply(text="Hi."))
    turn(sunwell, fake)
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump({"models": {MODEL: {"native_tools": True}}}))
    fake.script(Reply(text="Native, as configured."))
    turn(sunwell, fake, "again")
    assert "tools" in chats(fake)[-1]


def test_repairs_a_model_needed_are_kept(sunwell, fake, tmp_path):
    # The model answers a native request with its call written as text, its JSON left unclosed
    fake.script(Reply(text='<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}</tool_call>'),
                Reply(text="It says hello."))
    run = sunwell("run", "read a.txt", "--model", MODEL, "--base-url", f"{fake.url}/v1", "--json",
                  "--approve", "auto")
    assert run.code == 0, run.stderr
    [facts] = json.loads((tmp_path / "data" / "model_facts.json").read_text())["models"].values()
    assert facts["repairs"]["calls found in text"] == 1
    assert "toolsRejected" not in facts
    assert "calls found in text ×1" in sunwell("models", MODEL).stdout


def test_an_unreadable_table_is_no_knowledge(sunwell, fake, tmp_path):
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data" / "model_facts.json").write_text("{not json")
    fake.script(Reply(text="Hi."))
    turn(sunwell, fake)
    assert "tools" in chats(fake)[-1]
    assert sunwell("models", MODEL).code == 0
