"""Shared by the MCP tests: the toolbox server (tests/mcp_servers/toolbox.py) as config, the npm servers installed by
scripts/test.sh, and a streamable HTTP toolbox on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import yaml

TOOLBOX = Path(__file__).parent / "mcp_servers" / "toolbox.py"
GARBAGE = Path(__file__).parent / "mcp_servers" / "garbage.py"
NPM_SERVERS = Path(os.environ.get("SUNWELL_MCP_SERVERS_DIR", Path.home() / ".cache" / "sunwell-mcp-servers"))


def toolbox(*args: str, **config) -> dict:
    """A user-config entry for the toolbox over stdio (sandboxed unless `sandbox="off"`)."""
    return {"command": sys.executable, "args": [str(TOOLBOX), *args], "timeout": 10, **config}


def write_user_config(config_home: Path, **settings) -> None:
    path = config_home / "sunwell" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings))


def npm_server(name: str) -> Path | None:
    """The installed binary of an npm MCP server (scripts/test.sh installs them), or None."""
    path = NPM_SERVERS / "node_modules" / ".bin" / name
    return path if path.exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpToolbox:
    """The toolbox serving streamable HTTP on 127.0.0.1 in a subprocess (`args`: more of its options)."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen([sys.executable, str(TOOLBOX), "--http", str(self.port), *self.args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the HTTP toolbox did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def __exit__(self, *exc: object) -> None:
        self.stop()
