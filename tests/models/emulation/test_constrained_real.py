"""The slow tier of constrained decoding: `sunwell run` against the real small model (Qwen2.5-Coder-0.5B) served by
llama-cpp-python, which takes a reply schema only as `response_format: {type: json_object, schema}`.

Skipped, with the reason, when the model file or `llama_cpp` is absent (test_real_model.py starts the server; its
fixture is shared here). Run with `pytest -m slow -rs tests/models/emulation/test_constrained_real.py`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import local_model  # scripts/
import pytest

from conftest import SERVER, Run, check_stream_rules
from test_real_model import MODEL, N_CTX, llama  # noqa: F401 - the module's server, as a fixture

pytestmark = pytest.mark.slow


def run(server: local_model.ModelServer, workspace: Path, home: Path, prompt: str, *, constrained: bool = True) -> Run:
    config = home / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"models": {MODEL: {"context_window": N_CTX, "constrained": constrained}},
                                  "max_tokens": 512}))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(
        PYTHONPATH=str(SERVER), XDG_CONFIG_HOME=str(home / "config"), SUNWELL_DATA_DIR=str(home / "data")
    )
    proc = server.run_client(  # a server that dies meanwhile fails the test with its log's last lines
        [sys.executable, "-m", "sunwell", "run", prompt, "--model", MODEL, "--base-url", server.url, "--json", "--yes",
         "--max-tool-turns", "4"], env=env, cwd=workspace, timeout=600)  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr)


def test_read_then_write_with_constrained_decoding(llama, tmp_path):  # noqa: F811
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello world\n")
    result = run(llama, workspace, tmp_path, "Read a.txt and write its content in upper case to b.txt")
    assert result.code in (0, 3), result.stderr
    check_stream_rules(result.events)
    calls = [e["name"] for e in result.events if e["type"] == "toolCall"]
    assert calls[:2] == ["read_file", "write_file"], calls
    assert (workspace / "b.txt").read_text().strip() == "HELLO WORLD"
    text = "".join(e["delta"] for e in result.events if e["type"] == "text")
    assert "final_answer" not in text and '"name"' not in text  # the answer's JSON never reaches the user
