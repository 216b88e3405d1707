"""The slow tier: `sunwell run` against a real small model (Qwen2.5-Coder-0.5B) served by llama-cpp-python.

Skipped, with the reason, when the model file (in `$SUNWELL_MODELS_DIR`, default `~/.cache/sunwell-models`;
../shared/models/README.md has the download script) or `llama_cpp` is absent. Run it with `pytest -m slow -rs`.
The server starts once for the module on a free port; a turn is bounded by `--max-tool-turns`, so the whole file
takes about a minute on two idle cores. llama-cpp-python's server interrupts a request when another one arrives:
these tests must not share a server with anything else.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import SERVER, Run, check_stream_rules

MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL = "openai-compatible:qwen2.5-coder-0.5b"

pytestmark = pytest.mark.slow


def _model_path() -> Path:
    return Path(os.environ.get("SUNWELL_MODELS_DIR") or Path.home() / ".cache" / "sunwell-models") / MODEL_FILE


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory):
    path = _model_path()
    if not path.is_file():
        pytest.skip(f"model file not found: {path} (set SUNWELL_MODELS_DIR, see ../shared/models/README.md)")
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not installed: pip install 'llama-cpp-python[server]==0.3.36'")
    port = _free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--n_threads", "2", "--n_ctx", "4096",
         "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama server exited with {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama server not ready after 60 s; see {log.name}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def real(llama_url, tmp_path: Path, workspace: Path):
    """Run `sunwell run --json` against the real model: real("prompt", *flags) -> Run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(PYTHONPATH=str(SERVER), XDG_CONFIG_HOME=str(tmp_path / "config"),
               SUNWELL_DATA_DIR=str(tmp_path / "data"))

    def run(prompt: str, *flags: str) -> Run:
        proc = subprocess.run(
            [sys.executable, "-m", "sunwell", "run", prompt, "--model", MODEL, "--base-url", llama_url, "--json",
             "--max-tool-turns", "3", *flags], capture_output=True, text=True, env=env, cwd=workspace,
            timeout=240, check=False)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


def calls(run: Run) -> list[dict]:
    return [e for e in run.events if e["type"] == "toolCall"]


def results(run: Run) -> list[dict]:
    return [e for e in run.events if e["type"] == "toolResult"]


def answer(run: Run) -> str:
    return "".join(e["delta"] for e in run.events if e["type"] == "text")


def test_read_a_file_and_answer_from_it(real):
    run = real("Read a.txt and tell me what it says")
    assert run.code in (0, 3), run.stderr  # 3: it used every tool round, then was made to answer
    check_stream_rules(run.events)
    first = calls(run)[0]
    assert first["name"] == "read_file" and first["arguments"] == {"path": "a.txt"}
    assert results(run)[0]["ok"] and "hello from a" in results(run)[0]["output"]
    text = answer(run)
    assert "hello" in text.lower() or "second line" in text.lower(), text
    assert '"arguments"' not in text and "```json" not in text  # the call's own text never reaches the user


def test_list_a_folder(real):
    run = real("List the files in the src folder")
    assert run.code in (0, 3), run.stderr
    check_stream_rules(run.events)
    first = calls(run)[0]
    assert first["name"] == "list_files" and first["arguments"].get("path", "").strip("./") == "src"
    assert results(run)[0]["ok"] and "app.py" in results(run)[0]["output"]


def test_answer_a_question_about_code(real):
    run = real("Read src/app.py and tell me what number main returns")
    assert run.code in (0, 3), run.stderr
    check_stream_rules(run.events)
    read = [c for c in calls(run) if c["name"] == "read_file"]
    assert read and read[0]["arguments"]["path"] == "src/app.py"
    assert "42" in answer(run)


def test_dry_run_write_executes_nothing(real, workspace: Path):
    run = real('Create a file named hello.txt with the content "hi"', "--dry-run", "--max-tool-turns", "1")
    check_stream_rules(run.events)
    write = [c for c in calls(run) if c["name"] == "write_file"]
    assert write and write[0]["arguments"]["path"] == "hello.txt"
    assert next(r["error"]["code"] for r in results(run) if r["name"] == "write_file") == "dry_run"
    assert not (workspace / "hello.txt").exists()

