"""Publishing a sandboxed background process's ports on the host's 127.0.0.1, like `docker run -p 127.0.0.1:P:P`.

A process sandboxed without network listens in a network namespace of its own (tools/sandbox/bwrap.py), where
neither web_fetch nor the user's browser can reach it. So, once it listens on a port, Sunwell starts the relay in
its namespace (relay.py, entered with `nsenter` into the user namespace that owns that network namespace, found
with the NS_GET_USERNS ioctl: bwrap's `--disable-userns` puts the process one user namespace deeper) and listens on
the same port on the host's 127.0.0.1, passing each connection through. Nothing goes the other way: the process
still cannot connect anywhere. A port already taken on the host is not published (and so never counted as the
process's own: fetching it would reach whoever holds it). All of it runs on threads, so a connection is served
while no event loop runs (`sunwell chat` waiting at its prompt).
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
except ImportError:  # Windows: no namespaces, nothing to publish (background processes need bubblewrap or no sandbox)
    fcntl = None  # type: ignore[assignment]

NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1), linux/nsfs.h: the user namespace that owns a namespace


class Publisher:
    """The relay of one process and the host ports it publishes; `close` ends both."""

    def __init__(self, inside_pid: int) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="sunwell-relay-"))
        self._socket = str(self._folder / "relay")
        self._listeners: list[socket.socket] = []
        self._ports: set[int] = set()
        self.endpoints: set[tuple[str, int]] = set()
        """(address, port) listened on for the process."""
        self._closed = False
        self._relay = _start_relay(inside_pid, self._socket)

    def publish(self, port: int) -> str | None:
        """Listen on the host's 127.0.0.1:`port` (and [::1]:`port` where it can) for the process; why it cannot, or
        None."""
        if port in self._ports:
            return None
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            listener = socket.socket(family, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind((host, port))
                listener.listen(64)
            except OSError as exc:
                listener.close()
                if family == socket.AF_INET:
                    return (f"port {port} is taken on this machine ({exc.strerror or exc}), so it is not reachable "
                            "from outside the sandbox")
                continue  # no IPv6 here, or the port is taken there only: 127.0.0.1 serves
            self._listeners.append(listener)
            self.endpoints.add((host, port))
            threading.Thread(target=self._accept, args=(listener, port), daemon=True,
                             name=f"sunwell-publish-{port}").start()
        self._ports.add(port)
        return None

    @property
    def ports(self) -> set[int]:
        return set(self._ports)

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
        self.endpoints = set()
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
