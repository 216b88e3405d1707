"""What /proc says of a background process: its tree, when a process started, and the TCP ports the tree listens on.

A process tree is found by parent ids (every /proc/<pid>/stat read once), not by process group: a daemon that calls
`setsid` leaves its group but, inside the sandbox's PID namespace, never its tree (an orphan is adopted by the
namespace's init, bwrap, which is in the tree). Listening ports are the LISTEN rows of /proc/<pid>/net/tcp and tcp6
(the table of that process's network namespace) whose socket inode one of the tree's file descriptors holds: a port
someone else listens on is never taken for the process's own.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"
LOOPBACK_V4, LOOPBACK_V6 = "127.0.0.1", "::1"
_ANY_V4, _ANY_V6 = "0.0.0.0", "::"


def parents() -> dict[int, int]:
    """pid -> parent pid, for every process now."""
    found: dict[int, int] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None:
            found[int(entry.name)] = int(stat[1])
    return found


def tree(root: int, known: dict[int, int] | None = None) -> list[int]:
    """`root` and all its descendants alive now (root first); empty when root is gone."""
    known = parents() if known is None else known
    if root not in known:
        return []
    children: dict[int, list[int]] = {}
    for pid, parent in known.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack += children.get(pid, [])
    return found


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot): with the pid, what tells a process from a later one that got its
    number; None when there is no such process."""
    stat = _stat(pid)
    return int(stat[19]) if stat is not None else None


def state(pid: int) -> str | None:
    """`pid`'s state letter (R, S, Z for a zombie...), None when there is no such process."""
    stat = _stat(pid)
    return stat[0] if stat is not None else None


def name(pid: int) -> str | None:
    """`pid`'s command name (/proc/<pid>/comm), None when there is no such process."""
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses): [0] is the
    state, [1] the parent pid, [19] the start time."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def listening(pids: Iterable[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket of `pids` listening where a connection from the same host arrives:
    127.0.0.1 for one bound to IPv4 loopback or any, ::1 for IPv6 loopback, both for IPv6 any (a dual-stack socket
    also holds the IPv4 port). Each network namespace's tables are read once."""
    inodes: set[str] = set()
    namespaces: dict[str, int] = {}
    for pid in pids:
        held = _socket_inodes(pid)
        if held:
            inodes |= held
            try:
                namespaces.setdefault(os.readlink(PROC / str(pid) / "ns" / "net"), pid)
            except OSError:
                continue
    found: set[tuple[str, int]] = set()
    for pid in namespaces.values():
        for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
            found |= _listening_rows(PROC / str(pid) / "net" / table, family, inodes)
    return found


def other_network(pid: int) -> bool:
    """Whether `pid` is in a network namespace other than Sunwell's (a sandbox's)."""
    try:
        return os.readlink(PROC / str(pid) / "ns" / "net") != os.readlink(PROC / "self" / "ns" / "net")
    except OSError:
        return False


def _socket_inodes(pid: int) -> set[str]:
    held = set()
    try:
        with os.scandir(PROC / str(pid) / "fd") as fds:
            for fd in fds:
                try:
                    target = os.readlink(fd.path)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    held.add(target[8:-1])
    except OSError:
        pass
    return held


def _listening_rows(table: Path, family: int, inodes: set[str]) -> set[tuple[str, int]]:
    try:
        lines = table.read_text().splitlines()[1:]
    except OSError:
        return set()
    found = set()
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN or fields[9] not in inodes:
            continue
        address_hex, port_hex = fields[1].split(":")
        address, port = _address(address_hex, family), int(port_hex, 16)
        if address == _ANY_V4 or address.removeprefix("::ffff:").startswith("127."):
            found.add((LOOPBACK_V4, port))
        elif address == LOOPBACK_V6:
            found.add((LOOPBACK_V6, port))
        elif address == _ANY_V6:
            found |= {(LOOPBACK_V6, port), (LOOPBACK_V4, port)}
    return found


def _address(text: str, family: int) -> str:
    """An address as /proc/net/tcp* writes it (32-bit words in host byte order) in its usual text."""
    raw = bytes.fromhex(text)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)) if sys.byteorder == "little" else raw
    return socket.inet_ntop(family, words)
