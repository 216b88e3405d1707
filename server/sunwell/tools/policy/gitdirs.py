"""What git would take for a repository, or read as config that starts a program, wherever it stands.

A command may plant `vendor/lib/HEAD`, `objects/`, `refs/` and a `config` with `core.fsmonitor = …`: no name in it
is `.git`, yet a later `git status` by the user in that folder runs the fsmonitor command on the host, unsandboxed.
So staged changes are judged by what git makes of them, by git's own rules (setup.c `is_git_directory`):

- a folder holding `HEAD` and either `objects` and `refs`, or a `commondir` file (a worktree's git directory);
- a file that starts `gitdir:` (what a `.git` file says to point elsewhere);
- a file git's config parser reads as config in which a key names a program to run (EXECUTING).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from fnmatch import fnmatchcase
from typing import BinaryIO

EXECUTING = (
    "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.editor", "core.pager", "core.askpass",
    "core.gitproxy", "core.alternaterefscommand", "core.worktree", "sequence.editor", "credential.helper",
    "credential.*.helper", "include.path", "includeif.*", "filter.*", "diff.external", "diff.*.textconv",
    "diff.*.command", "merge.*.driver", "mergetool.*.cmd", "difftool.*.cmd", "gpg.program", "gpg.*.program",
    "uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs", "pager.*",
    "protocol.allow", "protocol.*.allow", "submodule.*.update", "web.browser", "browser.*.cmd", "browser.*.path",
    "man.*.cmd", "man.*.path", "tar.*.command", "trailer.*.command", "trailer.*.cmd", "interactive.difffilter",
    "sendemail.smtpserver", "sendemail.*.smtpserver", "ssh.variant",
)  # fmt: skip
"""Config keys (lower case, `section[.subsection].name`) whose value git runs, or that send git elsewhere."""
SHELL_ALIAS = "alias.*"
"""An alias runs a program only when its value starts with `!`."""

_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
HEAD_BYTES = 64 * 1024


def is_git_dir(names: Collection[str]) -> bool:
    """Whether a folder holding these entries is a repository to git."""
    return "HEAD" in names and ("commondir" in names or ("objects" in names and "refs" in names))


def hazard(stream: BinaryIO) -> str | None:
    """Why git would act on this file's content (`a gitdir: link…`, `a git config that runs a program: key`), or
    None. Reads the stream line by line, never more than one line at a time beyond HEAD_BYTES."""
    head = stream.read(HEAD_BYTES)
    if head.lstrip().startswith(b"gitdir:"):
        return "a gitdir: link to a git directory elsewhere"
    if b"\0" in head[:8192]:
        return None  # git's config parser stops at the first line it cannot read
    key = next(executing_keys(_lines(head, stream)), None)
    return None if key is None else f"a git config that runs a program: {key}"


def executing_keys(lines: Iterator[str]) -> Iterator[str]:
    """The keys of EXECUTING (and `!` aliases) that the config text sets, in order."""
    for key, value in config_entries(lines):
        if any(fnmatchcase(key, pattern) for pattern in EXECUTING) or (
            fnmatchcase(key, SHELL_ALIAS) and value.lstrip().startswith("!")
        ):
            yield key


def config_entries(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(`section[.subsection].name`, value) as git's config parser reads them: sections case-insensitive, a quoted
    subsection as written (lowered here: only patterns are matched), a key after `]` on the header's own line."""
    section: str | None = None
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                section = None
                continue
            name, sub = match.groups()
            section = name.lower() + ("" if sub is None else "." + sub.lower())
            line = line[match.end():].strip()
        if not line or line[0] in "#;" or section is None:
            continue
        key = _KEY.match(line)
        if key is not None:
            yield f"{section}.{key.group(1).lower()}", key.group(2) or ""


def _lines(head: bytes, stream: BinaryIO) -> Iterator[str]:
    rest = b""
    chunk = head
    while chunk:
        *whole, rest = (rest + chunk).split(b"\n")
        yield from (line.decode("utf-8", "replace") for line in whole)
        chunk = stream.read(HEAD_BYTES)
        if len(rest) > HEAD_BYTES:  # a line this long is no config line git would read; keep its start only
            rest = rest[:1024]
    yield rest.decode("utf-8", "replace")
