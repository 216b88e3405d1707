"""Context mentions (`@`): attachments sent with a line within the context budget, read through the jail, listed by
`::context`, replayed without their bodies; the CLI's `@path`. Over real stdio against the sidecar and a real
`sunwell run` subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from fake_provider import Reply
from sunwell.agent.mentions import Mention, attachments, mentioned_paths, read_mentions
from sunwell.tools.workspace.jail import Jail
from sunwell.wire import protocol
from sunwell.wire.messages import ATTACHMENTS_HEADER, UserMessage

pytest_plugins = ["test_sidecar_support"]


def _user_text(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def test_attachments_fit_a_quarter_of_the_window_and_say_when_cut(workspace):
    (workspace / "big.txt").write_text("x" * 50_000)
    read = read_mentions([Mention("file", "@big.txt", "big.txt"), Mention("selection", "@selection", "a.txt", "hello")],
                         Jail(workspace), window=4096)
    message = UserMessage(text="look", attachments=read)
    text = message.content_for_model()
    assert text.startswith("look\n\n" + ATTACHMENTS_HEADER)
    assert '<attachment kind="selection" path="a.txt">\nhello\n</attachment>' in text
    assert "cut to" in read[0].body and len(text) < 4096 * 0.25 * 4.2 + 500
    assert [(a.label, a.kind) for a in attachments([message])] == [("@big.txt", "file"), ("@selection", "selection")]
    assert UserMessage.model_validate(message.wire()) == message  # as the session log keeps it


def test_a_file_outside_the_workspace_or_blocked_is_not_read(workspace, tmp_path):
    (tmp_path / "secret.txt").write_text("outside")
    jail = Jail(workspace)
    read = read_mentions([Mention("file", "@../secret.txt", "../secret.txt"), Mention("file", "@.env", ".env")],
                         jail, 8000)
    assert [attachment.body.startswith("(not attached:") for attachment in read] == [True, True]
    assert not any("outside" in a.body or "canary-123" in a.body for a in read)


def test_the_cli_takes_at_paths_that_name_workspace_files(workspace):
    found = mentioned_paths("explain @src/app.py and @a.txt, mail me@example.com, see @nope.py or @.env", Jail(workspace))
    assert [m.path for m in found] == ["src/app.py", "a.txt"]


async def test_a_mention_reaches_the_model_and_context_lists_it(sidecar, fake):
    fake.script(Reply(text="It returns 42."))
    mentions = [{"kind": "file", "label": "@src/app.py", "path": "src/app.py"},
                {"kind": "problems", "label": "@problems", "text": "src/app.py:1:1: error: something"}]
    result, _ = await sidecar.chat("what does main return?", mentions=mentions)
    sent = _user_text(fake.requests[-1].body)
    assert sent.startswith("what does main return?") and "return 42" in sent and "error: something" in sent
    _, events = await sidecar.chat("::context", session=result["session"])
    output = next(e for e in events if e["type"] == "commandOutput")["output"]
    assert "attachments: `@src/app.py` (file, ~" in output and "`@problems` (problems" in output
    replayed = (await sidecar.request(protocol.SESSION, {"session": result["session"]}))["events"]
    assert replayed[0]["text"] == "what does main return?"
    assert replayed[0]["mentions"] == ["@src/app.py", "@problems"]


def test_sunwell_run_attaches_at_paths(env, fake, workspace):
    fake.script(Reply(text="ok"))
    run = subprocess.run(check=False, args=[sys.executable, "-m", "sunwell", "run", "what is in @a.txt?", "--model", "openai:gpt-4o",
                          "--json"], env=env, cwd=workspace, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["status"] == "completed"
    sent = _user_text(fake.requests[-1].body)
    assert sent.startswith("what is in @a.txt?") and "hello from a" in sent
