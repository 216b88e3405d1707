"""The relay: run (by path, stdlib only) inside a sandboxed background process's network namespace, it connects
the host to the ports the process listens on there.

A background process sandboxed without network has a network namespace of its own: its `127.0.0.1:8000` is not the
host's. Sunwell starts this script in that namespace (`nsenter` into its user and network namespaces, never its
mount or PID namespace: the script runs from the host's files, where the sandboxed process cannot reach it), where it
listens on a unix socket in a private host folder. Each connection sends the port as two bytes, big-endian; the
relay connects to that port on 127.0.0.1 (else ::1) in the namespace and copies bytes both ways. It connects only
inside the namespace, so it gives the process no way out; it ends when its stdin closes (Sunwell went away).

    python relay.py SOCKET
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CONNECT_TIMEOUT = 5.0
CHUNK = 1 << 16


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy until `source` ends, then end `target`'s sending side."""
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides ended; then close both."""
    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()
    a.close()
    b.close()


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise OSError("closed before the header")
        data += more
    return data


def _serve(conn: socket.socket) -> None:
    try:
        port = int.from_bytes(_exactly(conn, 2), "big")
    except OSError:
        conn.close()
        return
    for host in ("127.0.0.1", "::1"):
        try:
            upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError:
            continue
        upstream.settimeout(None)
        splice(conn, upstream)
        return
    conn.close()


def main(path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1])
