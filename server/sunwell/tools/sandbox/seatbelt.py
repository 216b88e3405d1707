"""The macOS sandbox: `/usr/bin/sandbox-exec` with a Seatbelt profile (SBPL) written here for each command.

The profile denies everything, then allows back what a build or a test run needs, in this order because in SBPL
the last rule that matches an operation decides:
- processes: starting programs, signalling and inspecting its own processes, never anyone else's;
- what programs need to start at all: sysctl reads, preferences, the user lookup (getpwuid), POSIX semaphores
  (Python's multiprocessing), terminals;
- reading: the whole system, minus the user's home (HIDDEN: `~/.ssh`, `~/.aws`...) whose contents are unreadable
  except where a folder is shown again (SHOWN: the workspace, its staging copy, toolchains such as ~/.pyenv);
- writing: only the WRITABLE roots (the staging copy, the command's own empty home and temp folder) and /dev/null,
  except PROTECTED entries in them (.vscode, .git: configuration the host runs), which stay read-only;
- BLOCKED files and folders (the jail's secrets) unreadable and unwritable, last so nothing above re-opens them;
- network only when asked (`full` trust): below it no socket reaches anywhere, DNS included.

Paths are never spliced into the text: each is a `-D NAME=PATH` parameter the profile names with `(param "NAME")`,
so a workspace called `a") (allow default` is only a strange path, and the text depends only on how many paths of
each kind there are (tests/golden/seatbelt/ holds the profiles, compared byte for byte). Seatbelt matches real
paths (/private/var, not /var): the caller passes resolved ones. Compare openai/codex's seatbelt policies, which
this follows in spirit (deny by default, parameters for paths), not in text.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.policy.guarded import GuardedEntry

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
"""Only the system's own: one earlier on PATH could be anything."""

_HEAD = """(version 1)
; Sunwell run_command profile (server/sunwell/tools/sandbox/seatbelt.py): deny by default, the last match decides.
(deny default)

; processes: the command and what it starts, nothing outside the sandbox
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; what programs need to start: kernel facts, preferences, the user database, semaphores, terminals
(allow sysctl-read)
(allow user-preference-read)
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))

; reading: the system
(allow file-read*)
"""

_NETWORK = """
; network: full trust only
(allow network-outbound)
(allow network-inbound)
(allow system-socket)
(allow mach-lookup (global-name "com.apple.dnssd.service") (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.configd"))
"""

_NO_NETWORK = """
; network: none (denied by default, DNS included)
"""


@dataclass(frozen=True)
class SeatbeltPolicy:
    """What one command may touch; every path absolute and resolved."""

    writable: Sequence[str]
    """Roots it may write under: the staging copy, its own home and temp folder."""
    shown: Sequence[str] = ()
    """Readable even inside a hidden folder: the workspace, the staging copy, toolchains (ro_paths)."""
    hidden: Sequence[str] = ()
    """Folders whose contents it may not read: the user's home."""
    protected: Sequence[str] = ()
    """Entries inside a writable root that stay read-only (.vscode, .git...)."""
    blocked_files: Sequence[str] = ()
    blocked_dirs: Sequence[str] = ()
    """The jail's blocked entries (.env, keys, secrets/): neither readable nor writable."""
    network: bool = False


def seatbelt_profile(policy: SeatbeltPolicy) -> tuple[str, list[tuple[str, str]]]:
    """The profile's text and its parameters (NAME, path), in the order the profile names them."""
    params: list[tuple[str, str]] = []

    def filters(prefix: str, paths: Sequence[str], kind: str = "subpath") -> str:
        names = []
        for index, path in enumerate(paths):
            params.append((f"{prefix}_{index}", path))
            names.append(f'({kind} (param "{prefix}_{index}"))')
        return " ".join(names)

    # A rule with no filter would apply to every path: a kind with no paths gets no rule at all.
    text = _HEAD
    if policy.hidden:
        text += f"(deny file-read-data file-read-xattr {filters('HIDDEN', policy.hidden)})\n"
    if policy.shown:
        text += f"(allow file-read* {filters('SHOWN', policy.shown)})\n"
    text += "\n; writing: the writable roots and /dev/null, protected entries read-only\n"
    if policy.writable:
        text += f"(allow file-write* {filters('WRITABLE', policy.writable)})\n"
    text += '(allow file-write-data (literal "/dev/null"))\n'
    if policy.protected:
        text += f"(deny file-write* {filters('PROTECTED', policy.protected)})\n"
    text += "\n; blocked: neither readable nor writable, whatever the rules above say\n"
    if policy.blocked_files or policy.blocked_dirs:
        blocked = " ".join(part for part in (filters("BLOCKED_FILE", policy.blocked_files, "literal"),
                                             filters("BLOCKED_DIR", policy.blocked_dirs)) if part)
        text += f"(deny file-read* file-write* {blocked})\n"
    text += _NETWORK if policy.network else _NO_NETWORK
    return text, params


def seatbelt_argv(policy: SeatbeltPolicy, sandbox_exec: str = SANDBOX_EXEC) -> list[str]:
    """sandbox-exec with the profile and its parameters; append the command to it."""
    profile, params = seatbelt_profile(policy)
    return [sandbox_exec, "-p", profile, *(f"-D{name}={path}" for name, path in params)]


def seatbelt_policy(workspace: Path, jail_entries: Sequence[GuardedEntry], *, copy: Path, tmp: Path, network: bool,
                    home: str, user_home: str | None, ro_paths: Sequence[str] | str = ()) -> SeatbeltPolicy:
    """The policy of one command run in `copy`, the staging clone of `workspace` (tools/sandbox/copy_stage.py; all
    paths real): it writes only in the clone, in `tmp` (its TMPDIR) and in `home` (its HOME); it reads the system,
    the workspace, the clone and the toolchains of `ro_paths`, not the user's home; the jail's blocked entries are
    unreadable in the workspace (the clone has none), protected ones (.vscode...) read-only in the clone."""
    ro_paths = [ro_paths] if isinstance(ro_paths, str) else ro_paths
    shown = [str(workspace), str(copy), home, str(tmp),
             *(os.path.realpath(os.path.expanduser(p)) for p in ro_paths if os.path.isabs(os.path.expanduser(p)))]
    hidden = [os.path.realpath(user_home)] if user_home and os.path.realpath(user_home) != "/" else []
    real = [e for e in jail_entries if not e.is_link]
    return SeatbeltPolicy(
        writable=[str(copy), str(tmp), home], shown=shown, hidden=hidden, network=network,
        protected=[str(copy / e.rel) for e in real if e.protected],
        blocked_files=[str(e.path) for e in real if not e.protected and not e.is_dir],
        blocked_dirs=[str(e.path) for e in real if not e.protected and e.is_dir],
    )


def command_home() -> str:
    """The HOME a sandboxed command gets: a folder of Sunwell's in the temp folder (the user's own is hidden), where
    tools may keep caches between commands."""
    folder = Path(tempfile.gettempdir()) / "sunwell-command-home"
    folder.mkdir(mode=0o700, exist_ok=True)
    return os.path.realpath(folder)
