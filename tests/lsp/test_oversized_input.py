"""One oversized input (issue 40, item 4): a 60 MB parameter gets a short answer that names it, and the sidecar,
its log and the CLI go on as before. What a message quotes of the input is a prefix and its size, never the whole;
log records are capped, and the masking of credentials is bounded whatever it is given."""

from __future__ import annotations

import io
import json
import logging

import pytest

from sunwell.tools.policy.audit import AuditLog, MaskedLogRecords, Redactor
from sunwell.wire import protocol
from test_sidecar_frames import commands, frame, spawn

HUGE = 60_000_000
BIG = 1_000_000
"""Enough to tell an echo from a quote, cheap enough to try every way in."""
SMALL = 4_000
"""Bytes an answer to one bad parameter may take: a message, a quote, the error's envelope."""


@pytest.fixture
async def sidecar(env, workspace, tmp_path):
    side = await spawn(env, workspace, {"model": "openai:gpt-4o", "dataDir": str(tmp_path / "data")})
    yield side
    if side.proc.returncode is None:
        side.proc.kill()
        await side.proc.wait()


def request(msg_id: int, method: str, params: dict) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


async def test_a_60_mb_parameter_gets_a_short_answer_naming_it_and_the_sidecar_answers_on(sidecar):
    for msg_id, name in enumerate(("lens", "trust"), start=1):
        await sidecar.send(request(msg_id, protocol.TOOLS, {name: "x" * HUGE}))
        answer = await sidecar.answer(msg_id)
        assert len(json.dumps(answer)) < SMALL and f"'{name}'" in answer["error"]["message"], str(answer)[:SMALL]
    await sidecar.send(request(3, protocol.TOOLS, {"lens": ["x" * HUGE]}))  # of the wrong type
    answer = await sidecar.answer(3)
    assert len(json.dumps(answer)) < SMALL and "'lens'" in answer["error"]["message"]
    await sidecar.send(commands(4))
    assert (await sidecar.answer(4))["result"]["commands"]
    assert await sidecar.finish() == 0


async def test_a_60_mb_parameter_leaves_the_log_small(sidecar):
    await sidecar.send(request(1, protocol.TOOLS, {"lens": "x" * HUGE}))
    await sidecar.answer(1)
    assert await sidecar.finish() == 0
    assert len(sidecar.stderr) < 20_000, sidecar.log[:2000]


X = "x" * BIG
WAYS_IN = {
    "a lens to chat with": (protocol.CHAT, {"text": "hi", "lens": X}),
    "a session to chat in": (protocol.CHAT, {"text": "hi", "session": X}),
    "a model to chat with": (protocol.CHAT, {"text": "hi", "model": X}),
    "a turn to replace": (protocol.CHAT, {"text": "hi", "replaceTurn": X}),
    "a mention's path": (protocol.CHAT, {"text": "hi", "mentions": [{"kind": "file", "label": "@a", "path": X}]}),
    "::lens": (protocol.CHAT, {"text": f"::lens {X}"}),
    "::trust": (protocol.CHAT, {"text": f"::trust {X}"}),
    "::model": (protocol.CHAT, {"text": f"::model {X}"}),
    "a ::command's name": (protocol.CHAT, {"text": f"::{X}"}),
    "an MCP prompt's server": (protocol.CHAT, {"text": f"::{X}:prompt"}),
    "::focus": (protocol.CHAT, {"text": f"::focus {X}"}),
    "::help": (protocol.CHAT, {"text": f"::help {X}"}),
    "a session to show": (protocol.SESSION, {"session": X}),
    "a session to undo": (protocol.UNDO, {"session": X}),
    "a session to resume": (protocol.RESUME, {"session": X}),
    "a session's usage": (protocol.USAGE, {"session": X}),
    "a method's name": (X, {}),
}


@pytest.mark.parametrize(("method", "params"), WAYS_IN.values(), ids=WAYS_IN.keys())
async def test_no_answer_or_event_echoes_an_oversized_parameter(sidecar, fake, method, params):
    from fake_provider import Reply

    fake.script(Reply(text="done"))
    await sidecar.send(request(1, method, params))
    await sidecar.answer(1)
    sizes = [len(json.dumps(message)) for message in sidecar.received if message.get("id") != "init"]
    assert sum(sizes) < 4 * SMALL, sizes
    assert await sidecar.finish() == 0
    assert len(sidecar.stderr) < 20_000, sidecar.log[:2000]


# ---- the CLI ---------------------------------------------------------------------------------------------------

ARGUMENT = "x" * 100_000
"""As long as one argument may be (Linux: 128 KiB)."""


@pytest.mark.parametrize("option", ["--lens", "--session", "--model", "--replace-turn"])
def test_an_oversized_option_gets_one_short_line(sunwell, option):
    extra = ["--session", "s1"] if option == "--replace-turn" else []
    run = sunwell("run", "hi", option, ARGUMENT, *extra)
    assert run.code in (1, 2) and len(run.stderr) < 1000 and len(run.stderr.splitlines()) == 1, run.stderr[:1000]


def test_a_chat_line_quoting_a_huge_name_gets_a_short_answer(sunwell):
    run = sunwell("chat", "--model", "openai:gpt-4o", input=f"::lens {'x' * BIG}\n::trust {'x' * BIG}\n")
    assert len(run.stdout) + len(run.stderr) < 4000, (run.stdout[:1000], run.stderr[:1000])


def test_a_huge_prompt_is_sent_whole_and_an_error_about_it_is_one_short_line(sunwell, fake):
    from fake_provider import Reply

    fake.script(Reply(text="done"))
    prompt = "word " * 40_000  # 200 KB: within gpt-4o's window
    run = sunwell("run", "--model", "openai:gpt-4o", input=prompt)
    assert run.code == 0 and prompt in json.dumps(fake.requests[0].body, ensure_ascii=False).replace("\\n", "\n")
    run = sunwell("run", "--model", "openai:gpt-4o", input="word " * 12_000_000)  # 60 MB: too much for the window
    assert run.code == 1 and len(run.stderr) < 1000 and len(run.stderr.splitlines()) == 1, run.stderr[:1000]


# ---- the masking and the log -----------------------------------------------------------------------------------

def test_the_redactor_keeps_a_bounded_prefix_of_a_huge_string():
    out = Redactor({})("x" * 50_000_000)
    assert len(out) < 70_000 and out.endswith("(50,000,000 bytes)")
    short = "a password=hunter22 in a line"
    assert Redactor({})(short) == "a password=[REDACTED] in a line"


@pytest.mark.parametrize("offset", range(-30, 5, 5))
def test_a_secret_the_cut_falls_in_is_masked_whole(offset):
    """Masked in more than is kept, then cut: no prefix of a secret survives on either side of the cut."""
    environ = {"DEPLOY_TOKEN": "s3cr3t-Value-0123456789"}
    redact = Redactor(environ)
    cut = len(redact("y" * 10_000_000).split("…")[0])
    for secret in ("s3cr3t-Value-0123456789", "sk-" + "A1b2C3d4" * 4):
        text = "y" * (cut + offset) + f" {secret} " + "y" * 10_000_000
        out = redact(text)
        assert secret[:6] not in out and len(out) < 70_000


def test_an_audit_line_of_a_huge_argument_is_bounded(tmp_path):
    audit = AuditLog(tmp_path, environ={})
    entry = audit.record(session="s", turn="t", tool="web_fetch", call_id="c", arguments={"url": "x" * 20_000_000},
                         decision="auto", by=None, ok=False, error="validation", duration_ms=1)
    assert len(json.dumps(entry)) < 70_000
    [day] = (tmp_path / "audit").iterdir()
    assert day.stat().st_size < 70_000


def test_a_log_record_is_capped_before_it_is_masked():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(MaskedLogRecords())
    logger = logging.getLogger("sunwell.test_oversized")
    logger.addHandler(handler)
    try:
        logger.warning("a name: %s", "x" * HUGE)
        try:
            raise OSError(36, "File name too long", "x" * HUGE)
        except OSError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert len(written) < 40_000 and written.count("bytes)") == 2, written[:2000]
    assert "OSError" in written  # the traceback says what failed, and where


def test_a_huge_url_is_refused_for_its_length_before_anything_reads_it():
    """A model's 60 MB URL: once checked for secrets in four spellings over every byte; now refused as too long,
    which is the reason, not as carrying a secret, which a cut check would have said."""
    from sunwell.tools.network.urls import UrlRefused, parse_url

    with pytest.raises(UrlRefused, match="characters long") as refused:
        parse_url("https://example.com/?q=" + "x" * HUGE)
    assert len(str(refused.value)) < 200
