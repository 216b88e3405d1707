"""search_files' engine for when ripgrep is absent, run as `python -m sunwell.tools.handlers.pygrep` by tools/handlers/search.py.

It runs in a child process because it runs the model's regex with Python's `re`, which backtracks: `(a+)+$` on a
long line of `a`s would run for ages holding the GIL, where neither a thread nor the event loop could stop it.
The request (JSON on stdin) names the pattern, the searched path, the glob and the jail; the reply (JSON on stdout)
is the hits, or the ToolFailure to raise.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from sunwell.tools.base import ToolFailure
from sunwell.tools.handlers.files import walk
from sunwell.tools.handlers.search_hits import (
    MAX_MATCHES,
    MAX_RECORD_BYTES,
    WHOLE_FILE_CHECK_BYTES,
    Hits,
    glob_filter,
    line_too_long,
)
from sunwell.tools.workspace.jail import Jail

try:
    import resource
except ImportError:  # POSIX only
    resource = None  # type: ignore[assignment]


def search(regex: re.Pattern[str], top: Path, jail: Jail, hits: Hits) -> None:
    quick = _whole_file_regex(regex)
    if top.is_file():
        files = iter([(top, jail.relative(top))])
    else:
        files = (
            (Path(e.path), rel)
            for e, rel in walk(jail, top)
            if e.is_file(follow_symlinks=False) and hits.glob_ok(rel)
        )
    for file, rel in files:
        if hits.full:
            return
        found, binary = _grep(regex, quick, file, rel)
        hits.add_file(rel, found, binary)


def _whole_file_regex(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern in MULTILINE mode, to rule a whole file out with one search instead of one per line.

    Every match within a line is also a match in the whole text (`^` and `$` then stop at newlines, and a word
    boundary sees a newline as the non-word edge a line end is), except with look-around or the absolute anchors
    (backslash-A, backslash-Z), which may look past the line: those patterns are searched line by line only.
    """
    if any(token in regex.pattern for token in ("(?=", "(?!", "(?<", "\\A", "\\Z")):
        return None
    return re.compile(regex.pattern, regex.flags | re.MULTILINE)


def _grep(
    regex: re.Pattern[str], quick: re.Pattern[str] | None, file: Path, rel: str
) -> tuple[list[tuple[int, str]], bool]:
    found: list[tuple[int, str]] = []
    try:
        with open(file, "rb") as f:
            if quick and os.fstat(f.fileno()).st_size <= WHOLE_FILE_CHECK_BYTES:
                data = f.read()
                if b"\x00" in data:
                    return [], True
                if not quick.search(data.decode("utf-8", "replace")):
                    return [], False
                f.seek(0)
            for lineno, line in enumerate(iter(lambda: f.readline(MAX_RECORD_BYTES + 1), b""), 1):
                if len(line) > MAX_RECORD_BYTES:
                    raise line_too_long(rel)
                if b"\x00" in line:
                    return [], True
                text = line.removesuffix(b"\n").decode("utf-8", "replace")
                if len(found) <= MAX_MATCHES and regex.search(text):
                    found.append((lineno, text))
    except OSError:
        return [], False  # unreadable: skipped, as ripgrep does
    return found, False


def _limit_cpu(seconds: int) -> None:
    """Die of SIGXCPU after `seconds` of CPU, should Sunwell itself die and leave this process running."""
    if resource is None:
        return
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard == resource.RLIM_INFINITY or hard > seconds:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    _limit_cpu(request["cpu_seconds"])
    jail = Jail(Path(request["root"]), request["blocked"])
    top = Path(request["top"])
    hits = Hits(jail, glob_filter(request["glob"], jail.relative(top)))
    try:
        search(re.compile(request["pattern"]), top, jail, hits)
        reply: dict[str, object] = {"hits": [[h.rel, h.lineno, h.text] for h in hits.items]}
    except ToolFailure as failure:
        reply = {"error": failure.error.model_dump()}
    sys.stdout.buffer.write(json.dumps(reply).encode())


if __name__ == "__main__":
    main()
