"""Each worktree session's own ports: a block of PORT_BLOCK ports its commands are given (`PORT`, the first, and
`SUNWELL_PORTS`, the range) and its model is told of, so two sessions side by side do not both start their dev
server on the port the project names and have the second fail with "address in use".

A sandboxed command without network listens in a network namespace of its own and collides with nothing; the
block matters where commands share this machine's ports (trust `full`, or the sandbox off). A block is recorded
with its worktree, so a session keeps its ports from turn to turn, and one taken by another program when the
worktree is made is passed over.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

PORT_FIRST, PORT_BLOCK, BLOCKS = 41000, 10, 200


def free_block(taken: Iterable[int | None]) -> int | None:
    """The first port of a block no other worktree has and whose first port nothing listens on now; None when
    every block is taken (the session then runs without ports of its own)."""
    used = set(taken)
    return next((first for first in range(PORT_FIRST, PORT_FIRST + PORT_BLOCK * BLOCKS, PORT_BLOCK)
                 if first not in used and _free(first)), None)


def port_env(first: int) -> dict[str, str]:
    return {"PORT": str(first), "SUNWELL_PORTS": f"{first}-{first + PORT_BLOCK - 1}"}


def place_note(name: str, branch: str, first: int | None) -> str:
    """What the model is told of where it works."""
    note = (f"This session works in git worktree {name}, a checkout of its own on branch {branch}; other "
            "sessions may work beside it in theirs.")
    if first is None:
        return note
    return (f"{note} Its ports are {first}-{first + PORT_BLOCK - 1} and every command gets PORT={first}: start a "
            "server on $PORT (or another port of that range), not on a fixed port another session may hold.")


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
