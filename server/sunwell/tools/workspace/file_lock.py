"""An exclusive lock on an open file, across processes: flock on POSIX, msvcrt.locking on Windows.

fcntl exists only on POSIX and msvcrt only on Windows, so each is imported where it is used.
"""

from __future__ import annotations

import sys
from typing import IO


def lock_exclusive(file: IO[str]) -> None:
    """Block until this process holds the lock; it goes when the file is closed."""
    if sys.platform == "win32":
        import msvcrt

        file.seek(0)
        while True:  # LK_LOCK retries for 10 s, then raises: keep waiting like flock does
            try:
                msvcrt.locking(file.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue
    else:
        import fcntl

        fcntl.flock(file, fcntl.LOCK_EX)
