"""os.open flags that exist only on POSIX, as 0 where they are missing (Windows), so modules that use them import
everywhere: without O_NOFOLLOW a symlink swapped in after the check is followed there, which the jail's resolve
before the open still refuses when it was there first."""

from __future__ import annotations

import os

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
READ_NOFOLLOW = os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC | getattr(os, "O_BINARY", 0)
"""Read a file without following a link or blocking on a FIFO."""
