"""Shared by the MCP tests: the toolbox server (tests/mcp_servers/toolbox.py) as config, the npm servers installed by
scripts/test.sh, a streamable HTTP toolbox on 127.0.0.1, and an OAuth-protected server with its authorization server
and a browser for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self

import httpx2
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


OAUTH_BOX = Path(__file__).parent / "mcp_servers" / "oauth_box.py"


class OAuthBox:
    """An authorization server and the MCP server it protects (tests/mcp_servers/oauth_box.py), each on its own port
    of 127.0.0.1; `args`: more of its options."""

    def __init__(self, *args: str, as_host: str = "127.0.0.1") -> None:
        self.args = (*args, "--as-host", as_host)
        self.as_host = as_host
        self.as_port, self.mcp_port = free_port(), free_port()
        self.issuer = f"http://{as_host}:{self.as_port}"
        self.url = f"http://127.0.0.1:{self.mcp_port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen([sys.executable, str(OAUTH_BOX), "--as-port", str(self.as_port),
                                      "--mcp-port", str(self.mcp_port), *self.args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        for host, port in ((self.as_host, self.as_port), ("127.0.0.1", self.mcp_port)):
            while True:
                try:
                    socket.create_connection((host, port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise RuntimeError(f"the OAuth box did not start: {self.stderr()}") from None
                    time.sleep(0.1)
        return self

    def stderr(self) -> str:
        if self.proc is not None and self.proc.poll() is not None and self.proc.stderr is not None:
            return self.proc.stderr.read().decode(errors="replace")
        return ""

    def log(self) -> list[dict]:
        return httpx2.get(f"{self.issuer}/test/log").json()

    def events(self, name: str) -> list[dict]:
        return [event for event in self.log() if event["event"] == name]

    def secrets(self) -> list[str]:
        """Every code, token, refresh token and client secret it issued."""
        return httpx2.get(f"{self.issuer}/test/secrets").json()

    def expire(self) -> None:
        httpx2.post(f"{self.issuer}/test/expire")

    def refuse_refresh(self) -> None:
        httpx2.post(f"{self.issuer}/test/refuse-refresh")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Browser:
    """The person's browser: follows an authorization URL (the authorization server approves at once) to Sunwell's
    loopback listener, in a thread, as a real browser would while Sunwell waits. `opened` holds every URL."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.pages: list[tuple[int, str]] = []
        self._threads: list[threading.Thread] = []

    async def __call__(self, server: str, url: str) -> bool:
        self.opened.append(url)
        thread = threading.Thread(target=self.visit, args=(url,), daemon=True)
        thread.start()
        self._threads.append(thread)
        return True

    def visit(self, url: str) -> None:
        answer = httpx2.get(url, follow_redirects=True, timeout=20)
        self.pages.append((answer.status_code, answer.text))

    def wait(self) -> None:
        for thread in self._threads:
            thread.join(20)
