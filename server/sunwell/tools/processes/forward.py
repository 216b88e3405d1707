"""Reaching a sandboxed background process's ports from Sunwell, and from nothing else on this machine.

A process sandboxed without network listens in a network namespace of its own (tools/sandbox/bwrap.py), where
web_fetch cannot reach it. So, once it listens on a port, Sunwell starts the relay in its namespace (relay.py,
entered with `nsenter` into the user namespace that owns that network namespace, found with the NS_GET_USERNS
ioctl: bwrap's `--disable-userns` puts the process one user namespace deeper) and opens, for each port, a unix
socket in a private folder (0700) that passes each connection through; web_fetch connects there
(tools/network/fetch.py). Nothing goes the other way: the process still cannot connect anywhere.

Nothing is opened on this machine's TCP ports: a model could otherwise start a "server" on a port that something
on the host trusts (a database's, a local model server's such as Ollama's 11434, before that service runs) and
answer whoever connects in its place. All of it runs on threads, so a connection is served while no event loop
runs (`sunwell chat` waiting at its prompt).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sunwell.tools.processes import relay

try:
    import fcntl
except ImportError:  # Windows: no namespaces, nothing to relay (background processes: bubblewrap, or no sandbox)
    fcntl = None  # type: ignore[assignment]

NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1), linux/nsfs.h: the user namespace that owns a namespace


class Publisher:
    """The relay of one process and a unix socket per port it listens on; `close` ends them."""

    def __init__(self, inside_pid: int) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="sunwell-relay-"))
        self._socket = str(self._folder / "relay")
        self._listeners: list[socket.socket] = []
        self.paths: dict[int, str] = {}
        """Port -> the unix socket that reaches it."""
        self._closed = False
        self._relay = _start_relay(inside_pid, self._socket)

    def publish(self, port: int) -> None:
        """A unix socket that reaches `port` in the process's namespace (once per port)."""
        if port in self.paths:
            return
        path = str(self._folder / f"port-{port}")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        self._listeners.append(listener)
        self.paths[port] = path
        threading.Thread(target=self._accept, args=(listener, port), daemon=True,
                         name=f"sunwell-relay-{port}").start()

    def _accept(self, listener: socket.socket, port: int) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._pass, args=(conn, port), daemon=True).start()

    def _pass(self, conn: socket.socket, port: int) -> None:
        inside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            inside.connect(self._socket)
            inside.sendall(port.to_bytes(2, "big"))
        except OSError:
            conn.close()
            inside.close()
            return
        relay.splice(conn, inside)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.paths = {}
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
            listener.close()
        self._listeners.clear()
        with contextlib.suppress(OSError):
            self._relay.kill()
        self._relay.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


def _start_relay(inside_pid: int, path: str) -> subprocess.Popen[bytes]:
    """relay.py in the user and network namespaces of `inside_pid`; raises OSError when it does not start."""
    if shutil.which("nsenter") is None or fcntl is None:
        raise OSError("nsenter (util-linux) is missing")
    net = os.open(f"/proc/{inside_pid}/ns/net", os.O_RDONLY)
    try:
        user = fcntl.ioctl(net, NS_GET_USERNS)
    except OSError:
        os.close(net)
        raise
    try:
        proc = subprocess.Popen(
            ["nsenter", f"--user=/proc/self/fd/{user}", f"--net=/proc/self/fd/{net}", "--preserve-credentials",
             sys.executable, "-I", relay.__file__, path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(net, user),
            start_new_session=True)  # fmt: skip
    finally:
        os.close(net)
        os.close(user)
    assert proc.stdout is not None
    ready = proc.stdout.readline()  # the relay says "ready" or fails at once (and says nothing more after)
    if ready != b"ready\n":
        proc.kill()
        problem = (ready + proc.stdout.read()).decode("utf-8", "replace").strip().splitlines()
        proc.wait()
        raise OSError(problem[-1] if problem else "the relay did not start")
    return proc
