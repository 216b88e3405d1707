"""run_command and its sandbox, attacks first. Real bash, real bwrap, real servers on 127.0.0.1; no mocks."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import SERVER, call_tool
from sunwell.tools.base import CommandSettings, Limits, ToolContext, ToolFailure
from sunwell.tools.handlers.shell import RUN_COMMAND, sandbox_warning
from sunwell.tools.policy.environment import command_env
from sunwell.tools.policy.guarded import guarded_entries
from sunwell.tools.sandbox.bwrap import bwrap_available, probe_bwrap
from sunwell.tools.workspace.jail import Jail

CANARY = "canary-7f3a9c"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".env").write_text(f"OPENAI_API_KEY={CANARY}-env\n")
    (ws / "sub" / ".env.local").write_text(f"TOKEN={CANARY}-local\n")
    (ws / "deploy.KEY").write_text(f"{CANARY}-key\n")
    (ws / ".Env.Production").write_text(f"{CANARY}-case\n")
    (ws / ".git" / "config").write_text(f"[remote]\n url = https://x:{CANARY}-git@example.com\n")
    (ws / "notes.txt").write_text("hello\n")
    (ws / "innocent").symlink_to(".env")
    return ws


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch):
    """A fake HOME outside /tmp, /home and /root, with a planted ssh key."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="sunwell-home-") as path:
        (Path(path) / ".ssh").mkdir()
        (Path(path) / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}-ssh\n")
        monkeypatch.setenv("HOME", path)
        yield Path(path)


def context(ws: Path, **settings) -> ToolContext:
    return ToolContext(jail=Jail(ws), limits=Limits(max_output_bytes=20_000, commands=CommandSettings(**settings)))


async def run(ws: Path, command: str, **kwargs) -> str:
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in ("cwd", "timeout")}
    return await call_tool(RUN_COMMAND, {"command": command, **kwargs}, context(ws, **extra))


async def failure(ws: Path, command: str, **kwargs) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        await run(ws, command, **kwargs)
    return info.value


# ---- secrets in the workspace and at home ------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "cat .env", "cat sub/.env.local", "cat .Env.Production deploy.KEY", "cat innocent", "cat .git/config",
    "grep -r canary . ; cat .env*", "find . -exec cat {} + 2>/dev/null", "cp .env copy && cat copy",
    "umount .env; umount -l .env; cat .env", "unshare -Urm sh -c 'umount .env; cat .env'",
    "ln .env hard; cat hard", "mv .env moved; cat moved .env",
])  # fmt: skip
async def test_blocked_files_are_masked_inside_the_sandbox(ws: Path, command: str) -> None:
    output = await run(ws, command)
    assert CANARY not in output
    assert output.splitlines()[-1].startswith("[exit code: ")
    assert (ws / ".env").read_text().startswith("OPENAI_API_KEY=")  # and still there, unmoved


async def test_home_and_its_ssh_key_are_hidden(ws: Path, home: Path) -> None:
    output = await run(
        ws, f"cat ~/.ssh/id_rsa; cat {home}/.ssh/id_rsa; ls -A ~ | wc -l; ls -A /root /home | wc -l"
    )
    assert CANARY not in output
    assert "No such file or directory" in output
    assert output.startswith("0\n0\n")  # an empty HOME, no /root or /home at all
    assert output.endswith("[exit code: 0]")


async def test_writes_outside_the_workspace_fail_and_leave_nothing(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    assert not Path("/root/x-sunwell").exists() and not Path("/etc/x-sunwell").exists()
    output = await run(
        ws,
        f"echo x > /tmp/../etc/x-sunwell; touch /root/x-sunwell; touch {tmp_path}/outside; "
        f"touch ~/in-home; touch /x; echo inside > made.txt; touch .git/hooks/pre-commit",
    )
    assert "Read-only file system" in output
    assert not Path("/etc/x-sunwell").exists() and not Path("/root/x-sunwell").exists()
    assert not (tmp_path / "outside").exists() and not (home / "in-home").exists() and not Path("/x").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / "made.txt").read_text() == "inside\n"


async def test_extra_read_only_paths(ws: Path, home: Path) -> None:
    (home / "tool").mkdir()
    (home / "tool" / "bin").write_text("tool\n")
    output = await run(
        ws, f"cat {home}/tool/bin; touch {home}/tool/x", ro_paths=[f"{home}/tool", "/", "rel"]
    )
    assert (
        output.startswith("tool\n")
        and "Read-only file system" in output
        and not (home / "tool" / "x").exists()
    )
    assert CANARY not in await run(ws, f"cat {home}/.ssh/id_rsa", ro_paths=f"{home}/tool")


# ---- network ---------------------------------------------------------------------------------------------------


@pytest.fixture
def server():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"pong-from-host")

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


@pytest.mark.parametrize("network", [False, True])
async def test_network_only_when_allowed(ws: Path, server: int, network: bool) -> None:
    command = f"exec 3<>/dev/tcp/127.0.0.1/{server} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    output = await run(ws, command, network=network, timeout=10)
    assert ("pong-from-host" in output) is network
    assert output.endswith("[exit code: 0]" if network else "[exit code: 1]")


# ---- time limits, cancellation, floods -------------------------------------------------------------------------


def find_pid(marker: str) -> int | None:
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[:2] == [
                b"sleep",
                marker.encode(),
            ]:
                return int(entry.name)
        except OSError:
            continue
    return None


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie is dead, only not yet reaped by whoever adopted it


async def wait_gone(pid: int, within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while running(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not running(pid), f"process {pid} survived"


async def start_sleeper(ws: Path, sandbox: str, **kwargs) -> tuple[asyncio.Task[str], int]:
    marker = f"{100 + random.random():.6f}"
    task = asyncio.create_task(run(ws, f"sleep {marker} & echo $!; wait", sandbox=sandbox, **kwargs))
    deadline = time.monotonic() + 5
    while (pid := find_pid(marker)) is None:
        assert time.monotonic() < deadline and not task.done(), "the sleeper did not start"
        await asyncio.sleep(0.02)
    return task, pid


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_timeout_kills_the_whole_group(ws: Path, sandbox: str) -> None:
    started = time.monotonic()
    task, pid = await start_sleeper(ws, sandbox, timeout=2)
    with pytest.raises(ToolFailure) as info:
        await task
    assert time.monotonic() - started < 5
    assert info.value.error.code == "timeout"
    assert "within 2 s" in info.value.error.message and "[stopped after 2 s]" in info.value.error.message
    if (
        sandbox == "off"
    ):  # the partial output holds the child's pid (in the sandbox it is the namespace's pid)
        assert str(pid) in info.value.error.message
    await wait_gone(pid)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_cancellation_kills_the_whole_group(ws: Path, sandbox: str) -> None:
    task, pid = await start_sleeper(ws, sandbox, timeout=60)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 4
    await wait_gone(pid)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_background_processes_end_with_the_command(ws: Path, sandbox: str) -> None:
    marker = f"{100 + random.random():.6f}"
    started = time.monotonic()
    output = await run(ws, f"sleep {marker} >/dev/null 2>&1 & sleep {marker} & echo started", sandbox=sandbox)
    assert output == "started\n[exit code: 0]" and time.monotonic() - started < 4
    await asyncio.sleep(0.2)
    assert find_pid(marker) is None or not running(find_pid(marker) or 0)


async def test_timeout_is_capped_by_max_timeout(ws: Path) -> None:
    started = time.monotonic()
    error = await failure(ws, "sleep 30", timeout=50, max_timeout=1)
    assert error.error.code == "timeout" and time.monotonic() - started < 4


FLOOD_SCRIPT = """
import asyncio, json, sys, time
from pathlib import Path
from sunwell.tools.base import CommandSettings, Limits, ToolContext, ToolFailure
from sunwell.tools.workspace.jail import Jail
from sunwell.tools.handlers.shell import RunCommandArguments, run_command

def hwm():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024

async def main():
    ctx = ToolContext(jail=Jail(Path(sys.argv[1])), limits=Limits(commands=CommandSettings(sandbox=sys.argv[2])))
    await run_command(RunCommandArguments(command="echo warm"), ctx)
    before, started = hwm(), time.monotonic()
    output = await run_command(RunCommandArguments(command="yes | head -c 200000000"), ctx)
    elapsed = time.monotonic() - started
    try:
        await run_command(RunCommandArguments(command="yes", timeout=2), ctx)
        endless = ""
    except ToolFailure as failure:
        endless = failure.error.message
    print(json.dumps({"grew": hwm() - before, "elapsed": elapsed, "output": output, "endless": endless}))

asyncio.run(main())
"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_flood_of_output_is_capped_without_memory_growth(ws: Path, sandbox: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FLOOD_SCRIPT, str(ws), sandbox],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SERVER)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["grew"] < 50 << 20
    assert result["elapsed"] < 10
    output = result["output"]
    assert len(output.encode()) <= 100_000 and output.startswith("y\ny\n")
    assert "[output truncated: showed" in output and "of 200,000,000 bytes" in output
    assert " bytes omitted ...]\ny\ny\n" in output  # the tail is kept too
    assert output.endswith("y\n[output truncated" + output.rsplit("\n[output truncated", 1)[1])
    assert output.endswith("]\n[exit code: 0]")
    assert "within 2 s" in result["endless"] and len(result["endless"].encode()) < 101_000


# ---- results ---------------------------------------------------------------------------------------------------


async def test_non_zero_exit_is_a_result_with_the_code(ws: Path) -> None:
    assert await run(ws, "echo out; echo err >&2; exit 3") == "out\n[stderr]\nerr\n[exit code: 3]"
    assert await run(ws, "printf abc") == "abc\n[exit code: 0]"
    assert await run(ws, "true") == "[exit code: 0]"
    assert await run(ws, "kill -9 $$") == "[exit code: 137]"


async def test_no_stdin_and_cwd_inside_the_workspace(ws: Path) -> None:
    assert await run(ws, "cat; pwd", cwd="sub") == f"{ws.resolve()}/sub\n[exit code: 0]"


async def test_stderr_and_stdout_share_the_cap(ws: Path) -> None:
    output = await run(ws, "seq 1 100000; seq 1 100000 >&2; exit 1")
    assert len(output.encode()) <= 20_000
    assert (
        output.startswith("1\n2\n")
        and "\n[stderr]\n1\n2\n" in output
        and "100000\n[output truncated" in output
    )
    assert output.endswith("[exit code: 1]")


async def test_environment_is_scrubbed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "OPENAI_API_KEY": "a",
        "ANTHROPIC_API_KEY": "b",
        "SUNWELL_API_KEY": "c",
        "GITHUB_TOKEN": "d",
        "AWS_SECRET_ACCESS_KEY": "e",
        "DB_PASSWORD": "f",
        "STRIPE_KEY": "g",
        "DATABASE_URL": f"postgres://u:{CANARY}@db/x",
        "HARMLESS_NAME": f"sk-{CANARY}",
    }.items():
        monkeypatch.setenv(name, f"{CANARY}-{value}" if len(value) == 1 else value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    for sandbox in ("auto", "off"):
        output = await run(ws, "env", sandbox=sandbox)
        assert CANARY not in output
        assert "\nLANG=C.UTF-8\n" in "\n" + output and "PATH=" in output


def test_commands_get_an_allowlisted_environment() -> None:
    env = {
        "PATH": "/usr/bin", "HOME": "/h", "LANG": "C", "LC_ALL": "C.UTF-8", "TERM": "xterm", "USER": "u",
        "SHELL": "/bin/bash", "TMPDIR": "/t", "TZ": "UTC", "JAVA_HOME": "/j",
        # what a name heuristic let through (issue 11), and ordinary variables that are not on the list
        "CI_JOB_JWT": "eyJ", "SLACK_WEBHOOK_URL": "https://hooks", "SSH_PRIVATE": "k", "SESSION_SIGNING": "s",
        "VIRTUAL_ENV": "/v", "GIT_AUTHOR_NAME": "A",
    }  # fmt: skip
    base = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "SHELL", "TMPDIR", "TZ"]
    assert command_env(env) == {k: env[k] for k in base}
    assert command_env(env, ["JAVA_HOME"]) == {k: env[k] for k in [*base, "JAVA_HOME"]}


# ---- refusals --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cwd", "code"), [
    ("..", "permission"), ("/etc", "permission"), ("sub/../..", "permission"), (".git", "permission"),
    ("notes.txt", "unsupported"), ("missing", "not_found"),
])  # fmt: skip
async def test_cwd_must_be_a_directory_in_the_workspace(ws: Path, cwd: str, code: str) -> None:
    assert (await failure(ws, "pwd", cwd=cwd)).error.code == code


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"command": " "},
        {"command": 3},
        {"command": "ls", "timeout": 0},
        {"command": "ls", "timeout": True},
        {"command": "ls", "timeout": "5"},
    ],
)
async def test_invalid_arguments(ws: Path, args: dict) -> None:
    with pytest.raises(ToolFailure) as info:
        await call_tool(RUN_COMMAND, args, context(ws))
    assert info.value.error.code == "validation"


async def test_without_bwrap_the_command_is_refused_unless_the_sandbox_is_off(ws: Path) -> None:
    error = await failure(ws, "echo ran", bwrap_path="/nonexistent/bwrap")
    assert error.error.code == "permission" and "apt-get install bubblewrap" in error.error.message
    assert "sandbox: off" in error.error.message
    assert sandbox_warning(context(ws, bwrap_path="/nonexistent/bwrap")) is None
    # sandbox: off runs it without a sandbox (/home exists again), with a warning every turn.
    assert await run(ws, "echo ran; test -d /home", sandbox="off", bwrap_path="/nonexistent/bwrap") == (
        "ran\n[exit code: 0]"
    )
    assert "WITHOUT a sandbox" in (sandbox_warning(context(ws, sandbox="off")) or "")


async def test_a_bwrap_that_cannot_create_namespaces_counts_as_missing(ws: Path, tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    probe = await probe_bwrap(str(broken))
    assert probe.problem and "No permissions to create new namespace" in probe.problem
    error = await failure(ws, "echo ran", bwrap_path=str(broken))
    assert error.error.code == "permission"
    assert "apt-get install bubblewrap" in error.error.message and "No permissions" in error.error.message


async def test_bwrap_works_here() -> None:
    bwrap = bwrap_available()
    assert bwrap, "bubblewrap is not installed (apt-get install bubblewrap)"
    assert (await probe_bwrap(bwrap)).problem is None


# ---- what gets masked ------------------------------------------------------------------------------------------


def test_blocked_entries_are_found_outermost_first(ws: Path) -> None:
    (ws / "node_modules" / "pkg" / "node_modules").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / ".env").write_text("x")
    (ws / "src" / "__pycache__").mkdir(parents=True)
    (ws / "src" / "secrets").mkdir()
    jail = Jail(ws, blocked=["config/prod.yaml"])
    (ws / "config").mkdir()
    (ws / "config" / "prod.yaml").write_text("x")
    found = [(e.rel, e.is_dir) for e in guarded_entries(jail) if not e.protected and not e.is_link]
    assert found == [
        (".Env.Production", False),
        (".env", False),
        (".git", True),
        ("config/prod.yaml", False),
        ("deploy.KEY", False),
        ("node_modules", True),
        ("src/secrets", True),
        ("sub/.env.local", False),
    ]


async def test_too_many_blocked_entries_is_refused_not_run_unmasked(ws: Path) -> None:
    for i in range(3_000):
        (ws / f"k{i}.pem").write_text("x")
    error = await failure(ws, "cat k1.pem")
    assert error.error.code == "unsupported" and "too many blocked" in error.error.message


def test_tool_definition() -> None:
    assert RUN_COMMAND.name == "run_command" and RUN_COMMAND.approval == "ask" and RUN_COMMAND.risk == "shell"
    assert RUN_COMMAND.min_trust.name == "shell" and not RUN_COMMAND.read_only
    assert set(RUN_COMMAND.parameters["properties"]) == {"command", "cwd", "timeout"}
    assert RUN_COMMAND.timeout > 3600  # the handler enforces the limit the model asked for
