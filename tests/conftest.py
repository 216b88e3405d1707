"""Shared fixtures: a scripted provider server, a temp workspace, and `sunwell` as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from fake_provider import FakeProvider

# Property tests generate their examples on a machine that runs other tests beside them (xdist workers, CI's
# installs): slow generation there is load, not a fault of the test. What they check is unchanged.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "server"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`) the real-model tests share one worker: their llama server takes both
    cores, and it interrupts a request when another arrives."""
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group("real-model"))


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello from a\nsecond line\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n")
    (ws / ".env").write_text("SECRET_TOKEN=canary-123\n")
    return ws


@pytest.fixture
def env(tmp_path: Path, fake: FakeProvider) -> dict[str, str]:
    """A clean environment: no user config, a private data dir, both providers pointed at the fake server."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    base.update(
        PYTHONPATH=str(SERVER),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        SUNWELL_DATA_DIR=str(tmp_path / "data"),
        OPENAI_BASE_URL=f"{fake.url}/v1",
        OPENAI_API_KEY="sk-test-openai",
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY="sk-ant-test",
    )
    return base


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines()]


@pytest.fixture
def sunwell(env: dict[str, str], workspace: Path):
    """Run the `sunwell` CLI as a subprocess: sunwell("run", "hi", "--json") -> Run."""

    def run(*args: str, input: str | None = None, extra_env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 60) -> Run:
        proc = subprocess.run([sys.executable, "-m", "sunwell", *args], input=input, capture_output=True, text=True,
                              check=False, env={**env, **(extra_env or {})}, cwd=cwd or workspace, timeout=timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


def check_stream_rules(events: list[dict]) -> None:
    """docs/events.md "Rules of the stream" for one turn."""
    assert events, "no events"
    assert len({(e["session"], e["turn"]) for e in events}) == 1
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("done") == 1 and events[-1]["type"] == "done"
    calls = [e["callId"] for e in events if e["type"] == "toolCall"]
    results = [e["callId"] for e in events if e["type"] == "toolResult"]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)
    for e in events:
        if e["type"] == "toolResult":
            assert e["ok"] == (e["error"] is None)
    assert events[-1]["toolCalls"] == len(calls)


async def call_tool(tool, arguments: dict, ctx):
    """`tool`'s handler on `arguments` as the orchestrator hands them over: validated once and read into what the
    tool takes (`Tool.bind`: its arguments model), so an invalid call fails there, as in a turn."""
    return await tool.handler(tool.bind(arguments), ctx)


@pytest.fixture
def engine(tmp_path: Path, workspace: Path, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch):
    """An engine in `workspace` on openai:gpt-4o at the fake server, approving automatically (no user config)."""
    from sunwell.agent.engine import Engine
    from sunwell.config import Settings

    for var in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "SUNWELL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return Engine(Settings(model="openai:gpt-4o", data_dir=tmp_path / "data", approval="auto"), workspace)
