"""The bubblewrap sandbox run_command runs in.

What a sandboxed command sees (each choice is a hole some agent left open):
- The system read-only, bound dir by dir (SYSTEM_DIRS), not `/` as a whole: other projects, /home, /root, /srv, /mnt,
  /media, /var and /run (docker, ssh-agent and dbus sockets) simply do not exist. Root-only secrets in /etc are masked,
  because Sunwell may run as root (containers), and root owns them.
- HOME an empty, writable tmpfs thrown away afterwards: `~/.ssh/id_rsa` does not exist, tools that write caches work.
- Private /tmp and /var/tmp, a fresh /proc (new PID namespace), a minimal /dev; everything else is read-only.
- The workspace writable, with every blocked file (the jail's patterns) bound to /dev/null, which cannot be opened
  (bind mounts are nodev: EACCES), and every blocked directory replaced by an empty read-only tmpfs. `__pycache__` is
  blocked to keep listings clean, not to keep a secret, and is left alone: a virtualenv holds thousands, more than
  bwrap's 9,000-argument limit allows, and Python needs them. Protected configuration the host executes (.vscode,
  .envrc: the jail's PROTECTED) is bound read-only over itself.
- All namespaces unshared (the network too, unless network=True), nested user namespaces disabled where bwrap can,
  and ALL capabilities dropped: bwrap started by root keeps them otherwise, and with CAP_SYS_ADMIN a command can
  `umount` a mask and read what is under it (tried in this container: it works).
What a command creates under a blocked or protected name is moved out of the workspace when it ends (guarded.py).
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.base import ToolFailure
from sunwell.tools.policy.environment import command_env
from sunwell.tools.policy.guarded import GuardedEntry, guarded_entries
from sunwell.tools.workspace.jail import Jail

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix")
SYSTEM_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private",
                  "/etc/ssh/ssh_host_*_key")  # fmt: skip
MAX_BWRAP_ARGS = 9_000  # MAX_ARGS in bubblewrap.c; past it bwrap refuses to start
USERNS_FLAGS = ("--unshare-user", "--disable-userns")  # bwrap >= 0.8, and only where user namespaces work
PROBE_TIMEOUT = 10.0

# ---- finding and probing bwrap ------------------------------------------------------------------------------------


def bwrap_available(path: str | None = None) -> str | None:
    """The bwrap executable to use (`path` if given, else the one on PATH), or None when there is none."""
    if path is None:
        return shutil.which("bwrap")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


@dataclass(frozen=True)
class BwrapProbe:
    problem: str | None
    """Why this bwrap cannot build a sandbox here (no user namespaces, seccomp...); None when it can."""
    userns_flags: tuple[str, ...] = ()
    """USERNS_FLAGS when this bwrap accepts them here, else () (setuid bwrap without user namespaces)."""


_probes: dict[str, BwrapProbe] = {}


async def probe_bwrap(bwrap: str) -> BwrapProbe:
    """Run `true` in a real sandbox once per bwrap path (cached): with USERNS_FLAGS, else without them."""
    if bwrap in _probes:
        return _probes[bwrap]
    error = "no answer"
    with tempfile.TemporaryDirectory(prefix="sunwell-probe-") as tmp:
        jail = Jail(Path(tmp))
        for flags in (USERNS_FLAGS, ()):
            argv = bwrap_argv(jail.root, jail.root, jail, network=False, bwrap=bwrap, userns_flags=flags)
            error = await run_probe(argv + ["true"])
            if not error:
                _probes[bwrap] = BwrapProbe(None, flags)
                return _probes[bwrap]
    _probes[bwrap] = BwrapProbe(f"{bwrap} cannot create a sandbox here ({error})")
    return _probes[bwrap]


async def run_probe(argv: list[str], cwd: Path | None = None) -> str | None:
    """Run a probe command (with the commands' environment); None when it worked, else its last line of stderr."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env=command_env(os.environ), cwd=cwd,
        )  # fmt: skip
    except OSError as exc:
        return str(exc)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"it did not start within {PROBE_TIMEOUT:g} s"
    if proc.returncode == 0:
        return None
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {proc.returncode}"


# ---- the command line -------------------------------------------------------------------------------------------


def bwrap_argv(
    workspace: Path,
    cwd: Path,
    jail: Jail,
    *,
    network: bool,
    bwrap: str = "bwrap",
    home: str | None = None,
    ro_paths: Sequence[str] = (),
    userns_flags: Sequence[str] = USERNS_FLAGS,
    entries: Sequence[GuardedEntry] | None = None,
    writable: Sequence[Path] | None = None,
) -> list[str]:
    """The bwrap command line (bwrap itself first) to run a command in; append the command to it.

    `workspace` is the real path of the jail root, `cwd` a real directory inside it, `home` the HOME the command
    gets (an empty tmpfs is put there), `ro_paths` extra host paths to show read-only (toolchains in the home
    directory, e.g. ~/.pyenv; never a folder that holds credentials). `entries` are the workspace's blocked and
    protected entries (guarded.py), found by walking it when not given. `writable`, when given, makes the workspace
    read-only but for those folders in it (a background process: tools/handlers/processes.py).
    Raises ToolFailure when the workspace has more blocked entries than bwrap can take.
    """
    argv = [bwrap]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):  # merged /usr: /bin -> usr/bin, kept a symlink so paths look the same
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            argv += ["--ro-bind", d, d]
    for pattern in SYSTEM_SECRETS:
        argv += _masks([(Path(p), os.path.isdir(p)) for p in sorted(glob.glob(pattern))])
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    if network:  # /etc/resolv.conf often points into /run, which is otherwise absent
        argv += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    if home and _hideable_home(home, workspace):
        argv += ["--tmpfs", home]
    for path in [ro_paths] if isinstance(ro_paths, str) else ro_paths:
        path = os.path.expanduser(path)
        if os.path.isabs(path) and os.path.normpath(path) != "/":  # "/" would undo the whole layout
            argv += ["--ro-bind-try", path, path]
    argv += ["--bind" if writable is None else "--ro-bind", str(workspace), str(workspace)]
    for folder in writable or ():
        argv += ["--bind", str(folder), str(folder)]
    for entry in guarded_entries(jail) if entries is None else entries:
        if entry.is_link:
            continue
        if entry.protected:
            argv += ["--ro-bind", str(entry.path), str(entry.path)]
        else:
            argv += _masks([(entry.path, entry.is_dir)])
    argv += ["--remount-ro", "/", "--chdir", str(cwd)]
    argv += ["--unshare-all", *userns_flags, *(["--share-net"] if network else [])]
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    if len(argv) > MAX_BWRAP_ARGS - 10:
        raise ToolFailure(
            "unsupported",
            f"the workspace holds too many blocked files and folders for the sandbox to hide ({len(argv):,} "
            f"arguments, bwrap takes at most {MAX_BWRAP_ARGS:,})",
            "ask the user to remove them (for example stray *.pem or .env copies in a vendored folder)",
        )
    return argv


def _masks(entries: list[tuple[Path, bool]]) -> list[str]:
    argv: list[str] = []
    for path, is_dir in entries:
        if is_dir:
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def _hideable_home(home: str, workspace: Path) -> bool:
    """A tmpfs can go over HOME unless it is `/` or inside the workspace, or it cannot be created (missing, under a
    read-only system dir)."""
    home_path = Path(os.path.abspath(home))
    if home_path == Path("/") or home_path.is_relative_to(workspace):
        return False
    return home_path.is_dir() or not any(home_path.is_relative_to(d) for d in SYSTEM_DIRS)
