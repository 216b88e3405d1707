"""What the command line loads before it answers (issue 41, item 3): each command imports what it uses, so `--help`
and `--version` load no SDK, no MCP, no pygls, not even pydantic, and the light commands no SDK either.
tests/bench/bench_cli_start.py measures the time; this checks what is imported, which does not depend on the
machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_support import free_port, write_user_config

SDKS = ("mcp", "openai", "anthropic", "httpx", "httpx2", "pygls")
RUN_THEN_LIST = """
import runpy, sys
out, sys.argv, code = sys.argv[1], ["sunwell", *sys.argv[2:]], 0
try:
    runpy.run_module("sunwell", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
with open(out, "w") as listing:
    listing.write("\\n".join(sorted(sys.modules)))
"""


def loaded_by(env: dict, workspace: Path, tmp_path: Path, *args: str) -> set[str]:
    """The top-level packages `python -m sunwell ARGS` has imported when it is done."""
    listing = tmp_path / "modules.txt"
    ran = subprocess.run([sys.executable, "-c", RUN_THEN_LIST, str(listing), *args], capture_output=True, text=True,
                         env=env, cwd=workspace, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    return {name.partition(".")[0] for name in listing.read_text().split()}


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("run", "--help"), ("mcp", "list", "--help")])
def test_help_and_version_load_argparse_and_not_the_engine(args, env, workspace, tmp_path):
    loaded = loaded_by(env, workspace, tmp_path, *args)
    assert "argparse" in loaded and "sunwell" in loaded
    assert sorted(loaded & {*SDKS, "pydantic", "yaml", "jsonschema"}) == []


@pytest.mark.parametrize("args", [("version",), ("sessions", "list"), ("hooks", "list")])
def test_a_command_that_asks_no_model_loads_no_sdk(args, env, workspace, tmp_path):
    loaded = loaded_by(env, workspace, tmp_path, *args)
    assert sorted(loaded & set(SDKS)) == []


def test_the_check_sees_what_a_command_loads(env, workspace, tmp_path):
    """`mcp list` starts the configured servers: it does load the MCP SDK, and the check says so."""
    write_user_config(tmp_path / "config", mcp_servers={"far": {"url": f"http://127.0.0.1:{free_port()}/mcp"}})
    assert "mcp" in loaded_by(env, workspace, tmp_path, "mcp", "list")
