"""Tokens per turn and per session, and their cost (`prices:`): `sunwell/usage` over real stdio against the sidecar,
`::context`'s usage row, the prices from config and initializationOptions, and `sunwell run`'s cost line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import SERVER
from fake_provider import Reply
from sunwell.agent.usage import DEFAULT_PRICES, cost, price_for, usage_line
from sunwell.config import Price, load_settings
from sunwell.wire import protocol

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures


def test_prices_by_model_string_then_model_id_then_snapshot():
    assert price_for("openai:gpt-4o") == DEFAULT_PRICES["openai:gpt-4o"]
    assert price_for("gpt-4o") == DEFAULT_PRICES["openai:gpt-4o"]
    assert price_for("openai:gpt-4o-2024-08-06") == DEFAULT_PRICES["openai:gpt-4o"]
    assert price_for("openai:gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["openai:gpt-4o-mini"]  # the longest entry
    assert price_for("anthropic:claude-sonnet-4-5-20250929") == DEFAULT_PRICES["anthropic:claude-sonnet-4-5"]
    assert price_for("openai-compatible:qwen2.5-coder-0.5b") is None  # a local model costs nothing we know
    assert price_for("anthropic:gpt-4o") is None  # an entry of another provider does not apply
    mine = {"openai-compatible:qwen2.5-coder-0.5b": Price(input=0.01, output=0.02), "gpt-4o": Price(input=1, output=2)}
    assert price_for("openai-compatible:qwen2.5-coder-0.5b", mine) == Price(input=0.01, output=0.02, cache_read=0.01,
                                                                            cache_write=0.01)  # no discount assumed
    assert price_for("openai:gpt-4o", {"openai:gpt-4o": Price(input=1, output=2)}).input == 1
    assert cost(Price(input=2.5, output=10), 1_000_000, 100_000) == pytest.approx(3.5)


def test_prices_come_from_the_user_config_and_a_wrong_one_names_its_key(tmp_path):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text('prices:\n  "openai:gpt-4o": {input: 2, output: 8}\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert load_settings(None, {}, env).prices["openai:gpt-4o"] == Price(input=2, output=8)
    config.write_text('prices:\n  "openai:gpt-4o": {input: -1, output: 8}\n')
    with pytest.raises(Exception, match=r"prices"):
        load_settings(None, {}, env)


async def test_usage_reports_each_turn_and_the_session_with_its_cost(sidecar, fake):
    fake.script(Reply(text="one", usage=(1000, 100)), Reply(text="two", usage=(3000, 200)))
    first, _ = await sidecar.chat("first")
    await sidecar.chat("second", session=first["session"])
    usage = await sidecar.request(protocol.USAGE, {"session": first["session"]})
    assert [(t["inputTokens"], t["outputTokens"], t["estimated"]) for t in usage["turns"]] == [
        (1000, 100, False), (3000, 200, False)]
    assert (usage["inputTokens"], usage["outputTokens"], usage["estimated"]) == (4000, 300, False)
    assert usage["model"] == "openai:gpt-4o"
    assert usage["cost"] == pytest.approx((4000 * 2.5 + 300 * 10) / 1e6)
    assert usage["turns"][0]["cost"] == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)


async def test_a_server_without_usage_gets_sunwells_estimate_marked_as_such(sidecar, fake):
    fake.script(Reply(text="an answer of some length " * 4, send_usage=False))
    result, events = await sidecar.chat("count for me")
    assert result["usage"] is None
    usage = await sidecar.request(protocol.USAGE, {"session": result["session"]})
    [turn] = usage["turns"]
    assert turn["estimated"] is True and usage["estimated"] is True
    context = [e for e in events if e["type"] == "contextUsage"][-1]["usedTokens"]
    assert 0 < turn["outputTokens"] < 60 and turn["inputTokens"] + turn["outputTokens"] == context


async def test_prices_from_initialization_options_and_commands_count_for_nothing(sidecar_factory, fake, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": "openai:gpt-4o",
                                     "prices": {"gpt-4o": {"input": 1, "output": 1}}})
    fake.script(Reply(text="hi", usage=(500_000, 500_000)))
    result, _ = await sidecar.chat("hello")
    await sidecar.chat("::help", session=result["session"])  # asks no model: no turn of usage
    usage = await sidecar.request(protocol.USAGE, {"session": result["session"]})
    assert len(usage["turns"]) == 1 and usage["cost"] == pytest.approx(1.0)
    _, events = await sidecar.chat("::context", session=result["session"])
    output = next(e for e in events if e["type"] == "commandOutput")["output"]
    assert "usage: 500,000 in · 500,000 out · $1.00 over 1 turn" in output


async def test_usage_of_an_unknown_session_is_invalid_params(sidecar):
    with pytest.raises(Exception, match="unknown session|not found|nope"):
        await sidecar.request(protocol.USAGE, {"session": "nope"})


def test_usage_line_says_when_it_is_an_estimate_and_when_there_is_no_price():
    from sunwell.wire.usage import SessionUsage, TurnUsage

    usage = SessionUsage(model="openai-compatible:qwen", turns=[TurnUsage(turn="t", input_tokens=1200, output_tokens=30,
                                                                          estimated=True)],
                         input_tokens=1200, output_tokens=30, estimated=True)
    assert usage_line(usage) == ("≈1,200 in · ≈30 out (estimated: the server reported no usage) · no price for this "
                                 "model over 1 turn")


SCRIPTS = SERVER.parent / "scripts"


def test_the_scripts_fetch_the_models_with_the_projects_own_script():
    for name in ("start.sh", "test.sh"):
        text = (SCRIPTS / name).read_text()
        assert "../shared" not in text, name
        assert "scripts/fetch-models.sh" in text, name


def test_fetch_models_keeps_verified_files_and_refuses_a_wrong_one(tmp_path):
    cache = os.environ.get("SUNWELL_MODELS_DIR") or os.path.expanduser("~/.cache/sunwell-models")
    names = ["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"]
    if not all(os.path.exists(os.path.join(cache, n)) for n in names):
        pytest.skip(f"the models are not in {cache} (scripts/fetch-models.sh puts them there)")
    dest = tmp_path / "models"
    dest.mkdir()
    for name in names:
        os.symlink(os.path.join(cache, name), dest / name)
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PYTHON": sys.executable}
    ok = subprocess.run(check=False, args=["bash", str(SCRIPTS / "fetch-models.sh"), str(dest)], env=offline, capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == [str(dest / n) for n in names]
    (dest / names[1]).unlink()
    (dest / names[1]).write_bytes(b"not a model")
    bad = subprocess.run(check=False, args=["bash", str(SCRIPTS / "fetch-models.sh"), str(dest)], env=offline, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "fetch-models:" in bad.stderr
    assert not list(dest.glob(".*.partial"))


def test_sunwell_run_shows_the_turns_tokens_and_cost_to_a_person_only(env, fake, workspace):
    import pty

    fake.script(Reply(text="hi there", usage=(2000, 100)), Reply(text="again", usage=(2000, 100)))
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "sunwell", "run", "hello", "--model", "openai:gpt-4o"]
    shown = subprocess.run(check=False, args=command, env=env, cwd=workspace, stdout=subprocess.PIPE, stderr=slave, timeout=60)
    os.close(slave)
    err = os.read(master, 4096).decode()
    os.close(master)
    assert shown.returncode == 0
    assert "2,000 in · 100 out · $0.0060" in err  # 2000 × 2.5 + 100 × 10 per million
    piped = subprocess.run(check=False, args=command, env=env, cwd=workspace, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and piped.stderr == ""  # a pipe gets only the answer
