"""`wait_for`'s matcher: run (by path, stdlib only) as a child process that reads a background process's output on
stdin and prints `match` and exits at the first line the model's regex finds something in.

It is a process of its own because Python's `re` backtracks while holding the GIL: `(a+)+$` against a long line of
`a`s would stall Sunwell's event loop, where a child is simply killed at the deadline (tools/processes/table.py).

    python matcher.py PATTERN
"""

from __future__ import annotations

import re
import sys


def main(pattern: str) -> None:
    regex = re.compile(pattern)
    for line in sys.stdin.buffer:
        if regex.search(line.decode("utf-8", "replace")):
            sys.stdout.write("match\n")
            sys.stdout.flush()
            return


if __name__ == "__main__":
    main(sys.argv[1])
