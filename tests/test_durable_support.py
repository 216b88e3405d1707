"""Helpers of the durable-turn tests (test_durable_turns.py): a `sunwell run` killed with SIGKILL at a step boundary,
the session log read as another process would, and the requests a run sends when nothing kills it."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from fake_provider import FakeProvider, Reply

OPENAI = "openai:gpt-4o"
COUNT = "echo ran >> counter.txt"
WAITS = f"{COUNT}; for i in $(seq 400); do [ -e go ] && break; sleep 0.05; done; echo finished"
"""Counts itself, then runs until a file `go` appears (20 s at most)."""
KILLED_AT_RENAME = ["strace", "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=renameat,renameat2",
                    "-e", "inject=renameat,renameat2:error=EINTR:signal=SIGKILL:when=1"]
"""Runs a process under strace, killed on entering its first rename by directory descriptor (the rename never
happens): the safe writer's, from its temp file to the target (checkpoints and the rest rename by path)."""


def killed_opening(path: Path) -> list[str]:
    """Runs a process under strace, killed on entering its first open of `path` (the open never happens)."""
    # no --seccomp-bpf: with it strace does not filter by path and the inject never fires
    return ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(path), "-e", "trace=openat",
            "-e", "inject=openat:error=EINTR:signal=SIGKILL:when=1"]


class Crashing:
    """A `sunwell run` in a subprocess, killed with SIGKILL once `ready()` holds."""

    def __init__(self, env: dict[str, str], workspace: Path, *args: str, under: Sequence[str] = ()) -> None:
        self.proc = subprocess.Popen([*under, sys.executable, "-m", "sunwell", "run", *args], env=env, cwd=workspace,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        self.stdout: list[str] = []  # read as it comes: a full pipe would stop the process before its step
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr, 1), daemon=True).start()
        self._reading = threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout, 65536), daemon=True)
        self._reading.start()

    @staticmethod
    def _read(stream, into: list[str], size: int) -> None:
        while chunk := stream.read1(size) if hasattr(stream, "read1") else stream.read(size):
            into.append(chunk)

    def kill_when(self, ready: Callable[[], bool], timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"ended before the step: {''.join(self.stderr)}"
            assert time.monotonic() < deadline, f"the step never came: {''.join(self.stderr)}"
            time.sleep(0.02)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        assert self.proc.returncode == -signal.SIGKILL, "".join(self.stderr) + "".join(self.stdout)
        self._reading.join(timeout=10)
        return [json.loads(line) for line in "".join(self.stdout).splitlines() if line.startswith("{")]


@pytest.fixture
def user_config(tmp_path: Path) -> Callable[[str], None]:
    def write(text: str) -> None:
        folder = tmp_path / "config" / "sunwell"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(text)

    return write


def log_rows(env: dict[str, str]) -> list[tuple[str, str]]:
    """(kind, content) of every row of the session log, read as another process would."""
    path = Path(env["SUNWELL_DATA_DIR"]) / "sessions.db"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT kind, content FROM events ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # not made yet
        return []


def requested(fake: FakeProvider, n: int) -> Callable[[], bool]:
    return lambda: len(fake.requests) >= n


def counted(workspace: Path) -> int:
    counter = workspace / "counter.txt"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def resumed_turn(before: list[dict], after: list[dict]) -> None:
    """The resumed run goes on with the killed one's turn id and `seq` (no gap after what the log kept)."""
    assert {e["turn"] for e in after} == {before[0]["turn"]}
    seqs = [e["seq"] for e in after]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and seqs[0] <= before[-1]["seq"] + 1


def uncrashed(tmp_path: Path, env: dict[str, str], workspace: Path, replies: Sequence[Reply], *args: str,
              input: str | None = None, touched: Sequence[str] = ()) -> list[dict]:
    """The request bodies `sunwell run ARGS` sends when nothing kills it: the same script from a provider of its own,
    in a copy of `workspace` as it is now (its path put back in the bodies) with a data dir of its own. `touched`:
    files made in the copy first (`go`, so that a command waiting for it does not)."""
    other = tmp_path / "uncrashed"
    shutil.copytree(workspace, other / "ws", symlinks=True)
    for name in touched:
        (other / "ws" / name).touch()
    with FakeProvider() as provider:
        provider.script(*replies)
        done = subprocess.run([sys.executable, "-m", "sunwell", "run", *args], input=input, check=False,
                              capture_output=True, text=True, cwd=other / "ws", timeout=60, env={
                                  **env, "SUNWELL_DATA_DIR": str(other / "data"),
                                  "OPENAI_BASE_URL": f"{provider.url}/v1"})
        assert done.returncode == 0, done.stderr
        assert provider.remaining == 0
        return without_cache_key([json.loads(json.dumps(r.body).replace(str(other / "ws"), str(workspace)))
                                  for r in provider.requests])


def without_cache_key(bodies: list[dict]) -> list[dict]:
    """The request bodies without OpenAI's `prompt_cache_key`, which is one per session (a run without the kill is
    another session) and must be the same on every request of one, a resumed turn's included."""
    keys = {body.pop("prompt_cache_key", None) for body in bodies}
    assert len(keys) == 1 and None not in keys, keys
    return bodies


def files_of(workspace: Path) -> dict[str, bytes]:
    """Every file of the workspace with its content, to compare its state before a turn with after an undo."""
    return {str(p.relative_to(workspace)): p.read_bytes() for p in sorted(workspace.rglob("*")) if p.is_file()}


def tool_messages(request) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]
