"""The local model server starts or says why (scripts/local_model.py, used by scripts/start.sh and by the real-model
tier's fixture), tried on the failure of a CPU that reports AMX and traps it: tests/sigill_server.py dies of SIGILL
on the completion it is told to, as llama-cpp-python's native build does there, unless started without the repack."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import local_model  # scripts/, on pytest's path as the fixture of the real-model tier imports it
import pytest

from conftest import ROOT, SERVER
from sunwell.models.base import ModelRequest, TextDelta
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.wire.messages import UserMessage

FAKE = Path(__file__).with_name("sigill_server.py")
CLI = ROOT / "scripts" / "local_model.py"


@pytest.fixture
def port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fake(port: int, *flags: str) -> list[str]:
    return [sys.executable, str(FAKE), "--port", str(port), *flags]


def answers(url: str) -> str:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)["choices"][0]["message"]["content"]


def start_as_start_sh(port: int, log: Path, *flags: str) -> subprocess.CompletedProcess:
    """The command line scripts/start.sh runs, with the stand-in in place of scripts/llama_server.py."""
    return subprocess.run(
        [sys.executable, str(CLI), "--url", f"http://127.0.0.1:{port}/v1", "--log", str(log), "--",
         *fake(port, *flags)], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def stop_group():
    groups: list[int] = []
    yield groups.append
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_server_that_answers_starts_once_without_a_word(port, tmp_path, stop_group):
    done = start_as_start_sh(port, tmp_path / "llama.log")
    assert done.returncode == 0, done.stderr
    stop_group(int(done.stdout))
    assert done.stderr == ""
    assert answers(f"http://127.0.0.1:{port}/v1") == "hi"
    assert "no_repack=False" in (tmp_path / "llama.log").read_text()


def test_a_server_dying_of_sigill_on_its_first_answer_starts_again_without_the_repack(port, tmp_path, stop_group):
    log = tmp_path / "llama.log"
    done = start_as_start_sh(port, log, "--sigill-on", "1")
    assert done.returncode == 0, done.stderr
    stop_group(int(done.stdout))
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "SIGILL" in lines[0] and "without ggml's extra buffer types" in lines[0], lines[0]
    assert answers(f"http://127.0.0.1:{port}/v1") == "hi"  # the server left running is the fallback's
    text = log.read_text()
    assert "no_repack=False" in text and "no_repack=True" in text.split("--no-repack")[-1]


def test_a_server_that_does_not_answer_starts_again_without_the_repack(port, tmp_path, stop_group):
    server = local_model.start(fake(port, "--stall-on", "1"), f"http://127.0.0.1:{port}/v1", tmp_path / "llama.log",
                               answer_seconds=2, say=(said := []).append)
    stop_group(server.proc.pid)
    assert server.no_repack and len(said) == 1 and "did not answer" in said[0], said
    assert answers(server.url) == "hi"


def test_when_both_modes_die_it_says_what_failed_with_the_last_log_lines_and_the_hosted_models(port, tmp_path):
    log = tmp_path / "llama.log"
    done = start_as_start_sh(port, log, "--sigill-on", "1", "--sigill-on-no-repack", "1")
    assert done.returncode == 1 and done.stdout == ""
    notice, message = done.stderr.split("\n", 1)
    assert "SIGILL" in notice and "starting it again" in notice, notice
    assert "with and without ggml's extra buffer types (--no-repack) it died of SIGILL" in message, message
    assert "ggml_compute_forward_mul_mat (an AMX tile instruction next)" in message  # the log's last lines
    assert str(log) in message
    assert "OPENAI_API_KEY" in message and "ANTHROPIC_API_KEY" in message
    pids = [int(line.split()[3].rstrip(",")) for line in log.read_text().splitlines() if " pid " in line]
    assert len(pids) == 2
    for pid in pids:  # nothing left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_server_that_dies_mid_run_fails_the_waiting_client_with_its_last_log_lines(port, tmp_path, workspace):
    # The probe is the first completion; the client's is the second.
    server = local_model.start(fake(port, "--sigill-on", "2"), f"http://127.0.0.1:{port}/v1", tmp_path / "llama.log")
    try:
        assert not server.no_repack
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
        env.update(PYTHONPATH=str(SERVER), XDG_CONFIG_HOME=str(tmp_path / "config"),
                   SUNWELL_DATA_DIR=str(tmp_path / "data"))
        with pytest.raises(local_model.ServerDied) as died:
            server.run_client([sys.executable, "-m", "sunwell", "run", "Say hi", "--model", "openai-compatible:q",
                               "--base-url", server.url, "--json"], env=env, cwd=workspace, timeout=120)
    finally:
        server.stop()
    message = str(died.value)
    assert "SIGILL" in message and str(server.log) in message
    assert "ggml_compute_forward_mul_mat (an AMX tile instruction next)" in message
    assert "cannot reach" not in message.splitlines()[0]


async def test_a_server_that_dies_mid_stream_fails_the_awaited_call_with_its_last_log_lines(port, tmp_path):
    server = local_model.start(fake(port, "--sigill-on", "2"), f"http://127.0.0.1:{port}/v1", tmp_path / "llama.log")
    try:
        chat = OpenAIChat(name="openai-compatible", base_url=server.url, api_key="sk-no-key")
        request = ModelRequest(model="m", system="", messages=[UserMessage(text="hi")], max_tokens=8, temperature=0)

        async def drain() -> list:
            return [event async for event in chat.stream(request)]

        with pytest.raises(local_model.ServerDied) as died:
            await server.guard(drain())
    finally:
        server.stop()
    assert "SIGILL" in str(died.value)
    assert "ggml_compute_forward_mul_mat (an AMX tile instruction next)" in str(died.value)


async def test_a_guarded_call_to_a_live_server_gives_its_result(port, tmp_path):
    server = local_model.start(fake(port), f"http://127.0.0.1:{port}/v1", tmp_path / "llama.log")
    try:
        chat = OpenAIChat(name="openai-compatible", base_url=server.url, api_key="sk-no-key")
        request = ModelRequest(model="m", system="", messages=[UserMessage(text="hi")], max_tokens=8, temperature=0)

        async def drain() -> list:
            return [event async for event in chat.stream(request)]

        events = await server.guard(drain())
    finally:
        server.stop()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hi"
