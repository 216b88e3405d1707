"""How a stdio MCP server is started: in the same bubblewrap sandbox as run_command, unless its config says
`sandbox: off`.

What the server sees, on top of run_command's profile (tools/sandbox/bwrap.py): the workspace read-only unless
`sandbox: {write: true}`; no network unless `sandbox: {network: true}`; the allowlisted environment commands get
(tools/policy/environment.py) plus the server's own `env`. The sandbox's HOME is empty and its /tmp private, so a server
installed outside the system directories would vanish; its installation is shown read-only:
- the command found on PATH, and the real file it links to: a virtualenv's root (found by its `pyvenv.cfg`), the
  outermost `node_modules` folder a script lives in, the prefix of a `bin/` folder (`~/.nvm/versions/node/v20`), or
  else the folder holding the file;
- the same for every argument that is an absolute path to a script or a program (`python /opt/srv/server.py`);
  folders and data files an argument names stay hidden unless they are in the workspace.
Never `/`, never a folder that holds the home directory, never anything a blocked pattern names (`.ssh`, keys).
Package runners (`npx`, `uvx`) get a cache of Sunwell's own, writable (`<data>/mcp/cache/`): a cache the host's own
`npx` runs code from must not be writable by a sandboxed server. Without network they run offline, so a package
missing from that cache fails at once with the runner's own message instead of hanging on the registry; for `npx`
the packages are fetched first, once per start of Sunwell, in a sandbox with network and nothing of yours.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from sunwell.config import McpServerConfig
from sunwell.tools.policy.environment import command_env
from sunwell.tools.policy.guarded import CREATABLE_NAMES, guarded_entries
from sunwell.tools.sandbox.bwrap import SYSTEM_DIRS, bwrap_argv, bwrap_available, probe_bwrap
from sunwell.tools.workspace.jail import Jail

INSTALL_HINT = ("a sandboxed MCP server needs bubblewrap (apt-get install bubblewrap); or set `sandbox: off` for "
                "this server in your user config to run it unsandboxed")
log = logging.getLogger(__name__)
NPM_RUNNERS = frozenset({"npx", "npm", "pnpm", "pnpx", "bunx"})
UV_RUNNERS = frozenset({"uvx", "uv"})
SCRIPT_SUFFIXES = frozenset({".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".sh", ".jar", ".php", ".lua"})


class LaunchError(Exception):
    """The server cannot be started as configured (no bubblewrap, no such command): the message says why."""


@dataclass
class Launch:
    params: StdioServerParameters
    sandboxed: bool
    guarded: set[str] = field(default_factory=set)
    """The workspace's blocked and protected entries when the server started (a writable sandbox: whatever it
    plants under such a name afterwards is quarantined, tools/policy/guarded.py)."""


async def stdio_launch(config: McpServerConfig, *, jail: Jail, data_dir: Path, passthrough: tuple[str, ...] = (),
                       bwrap_path: str | None = None, fetch: bool = False) -> Launch:
    """The process to start for a stdio server, sandboxed unless `sandbox: off`. With `fetch`, an `npx` server
    without network first gets its packages into Sunwell's npm cache (`fill_npm_cache`). Raises LaunchError."""
    assert config.command is not None
    env = {**command_env(os.environ, passthrough), **config.env}
    cwd = _cwd(config, jail)
    if config.sandbox == "off":
        return Launch(StdioServerParameters(command=config.command, args=config.args, env=env, cwd=cwd), False)
    bwrap = bwrap_available(bwrap_path)
    if bwrap is None:
        raise LaunchError(INSTALL_HINT)
    probe = await probe_bwrap(bwrap)
    if probe.problem:
        raise LaunchError(f"{INSTALL_HINT} ({probe.problem})")
    executable = shutil.which(config.command, path=env.get("PATH"))
    if executable is None and not os.path.isabs(config.command):
        raise LaunchError(f"command not found: {config.command} (looked on PATH: {env.get('PATH', '')})")
    env.pop("TMPDIR", None)  # the host's temp dir is not in the sandbox; its own /tmp is
    home = env.get("HOME")
    shown = install_paths([executable or config.command, *filter(_is_program, config.args)], home, jail)
    if not _inside(cwd, jail.root):
        raise LaunchError(f"cwd {config.cwd} is outside the workspace, where a sandboxed server cannot see it")
    writable = _runner_cache(config, data_dir, env)
    if fetch and env.get("npm_config_offline") and os.path.basename(config.command) == "npx":
        await fill_npm_cache(config, env, bwrap, probe.userns_flags, shown, writable)
    entries = guarded_entries(jail)
    argv = bwrap_argv(jail.root, Path(cwd), jail, network=config.sandbox.network, bwrap=bwrap, home=home,
                      ro_paths=shown, userns_flags=probe.userns_flags, entries=entries)
    extra: list[str] = []
    for path in writable:
        extra += ["--bind", path, path]
    if not config.sandbox.write:
        extra += ["--remount-ro", str(jail.root)]
    at = _index_of_root_remount(argv)
    argv[at:at] = extra
    return Launch(StdioServerParameters(command=argv[0], args=[*argv[1:], config.command, *config.args], env=env,
                                        cwd=cwd), True, {entry.rel for entry in entries})


def _cwd(config: McpServerConfig, jail: Jail) -> str:
    if not config.cwd:
        return str(jail.root)
    path = Path(os.path.expanduser(config.cwd))
    path = path if path.is_absolute() else jail.root / path
    if not path.is_dir():
        raise LaunchError(f"cwd is not a directory: {config.cwd}")
    return os.path.realpath(path)


def _index_of_root_remount(argv: list[str]) -> int:
    """Where binds may still go: before `--remount-ro /`, after which no mount point can be created."""
    for i in range(len(argv) - 1):
        if argv[i] == "--remount-ro" and argv[i + 1] == "/":
            return i
    return len(argv)


def _is_program(arg: str) -> bool:
    """An argument naming a script or a program (`/opt/srv/server.py`), whose installation must be visible; a
    folder or a data file an argument names is the server's business, and outside the workspace it stays hidden."""
    return (os.path.isabs(arg) and os.path.isfile(arg)
            and (Path(arg).suffix.lower() in SCRIPT_SUFFIXES or os.access(arg, os.X_OK)))


def install_paths(candidates: list[str], home: str | None, jail: Jail) -> list[str]:
    """The folders (or files) to show read-only so the command and the files it names can run in the sandbox."""
    found: list[str] = []
    for candidate in candidates:
        if not os.path.isabs(candidate) or not os.path.exists(candidate):
            continue
        for path in dict.fromkeys([os.path.abspath(candidate), os.path.realpath(candidate)]):
            root = install_root(path, home)
            if root is None or _inside(root, jail.root) or _names_a_secret(path, jail):
                continue
            if root not in found:
                found.append(root)
    return found


def _names_a_secret(path: str, jail: Jail) -> bool:
    """Whether a folder on the way to `path` has a blocked name (`.ssh`, `secrets`, a key), not counting the ones
    blocked only to keep listings clean (`node_modules`, `__pycache__`), where installations live."""
    return any(jail.is_blocked(part) for part in Path(path).parts[1:] if part.lower() not in CREATABLE_NAMES)


def install_root(path: str, home: str | None) -> str | None:
    """The installation `path` belongs to, or `path` itself when that would be too wide; None when the system
    directories already show it."""
    if any(_inside(path, d) for d in SYSTEM_DIRS):
        return None
    p = Path(path)
    root: Path | None = None
    for parent in list(p.parents)[:4]:
        if (parent / "pyvenv.cfg").is_file():
            root = parent
            break
    if root is None and "node_modules" in p.parts:
        root = Path(*p.parts[: p.parts.index("node_modules") + 1])
    if root is None:
        root = p.parent.parent if p.parent.name == "bin" else p.parent
    if _too_wide(root, home):
        root = p if _too_wide(p.parent, home) else p.parent
    return str(root)


def _too_wide(root: Path, home: str | None) -> bool:
    """`/`, a folder holding the home directory, or one of the first two levels of the tree (`/home`, `/work`)."""
    if len(root.parts) <= 2:
        return True
    return home is not None and (Path(home) == root or Path(home).is_relative_to(root))


def _inside(path: str | Path, folder: str | Path) -> bool:
    return Path(path) == Path(folder) or Path(path).is_relative_to(folder)


def _runner_cache(config: McpServerConfig, data_dir: Path, env: dict[str, str]) -> list[str]:
    """A cache of Sunwell's own for npx or uvx, in `env`; the folders to bind writable."""
    assert config.command is not None and config.sandbox != "off"
    runner = os.path.basename(config.command)
    offline = not config.sandbox.network
    if runner in NPM_RUNNERS:
        cache = data_dir / "mcp" / "cache" / "npm"
        env["npm_config_cache"] = str(cache)
        env["npm_config_update_notifier"] = "false"
        if offline:
            env["npm_config_offline"] = "true"
    elif runner in UV_RUNNERS:
        cache = data_dir / "mcp" / "cache" / "uv"
        env["UV_CACHE_DIR"] = str(cache)
        env["UV_TOOL_DIR"] = str(cache / "tools")
        if offline:
            env["UV_OFFLINE"] = "1"
    else:
        return []
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    return [str(cache)]


async def fill_npm_cache(config: McpServerConfig, env: dict[str, str], bwrap: str, userns_flags: tuple[str, ...],
                         shown: list[str], writable: list[str]) -> None:
    """`npx --yes --package P -- true` with network, in a sandbox whose "workspace" is an empty folder, so that the
    server itself can then start offline from Sunwell's npm cache. Install scripts run here, where nothing of yours
    can be read. A failure is only logged: the server's own start then says what is missing."""
    packages = npx_packages(config.args)
    if not packages:
        return
    fetch_env = {k: v for k, v in env.items() if k != "npm_config_offline"}
    with tempfile.TemporaryDirectory(prefix="sunwell-mcp-fetch-") as empty:
        room = Jail(Path(empty))
        argv = bwrap_argv(room.root, room.root, room, network=True, bwrap=bwrap, home=env.get("HOME"),
                          ro_paths=shown, userns_flags=userns_flags, entries=[])
        at = _index_of_root_remount(argv)
        argv[at:at] = [part for path in writable for part in ("--bind", path, path)]
        argv += ["npx", "--yes", *(f"--package={package}" for package in packages), "--", "true"]
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.PIPE, env=fetch_env, cwd=empty)
        except OSError as exc:
            log.info("could not fetch %s for an MCP server: %s", packages, exc)
            return
        try:
            _, err = await asyncio.wait_for(proc.communicate(), config.timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            log.info("fetching %s for an MCP server took more than %g s", packages, config.timeout)
            return
        if proc.returncode:
            log.info("fetching %s for an MCP server failed: %s", packages, err.decode(errors="replace")[-500:])


def npx_packages(args: list[str]) -> list[str]:
    """The packages an `npx` command line runs: `--package`/`-p` values, else its first positional argument."""
    packages: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-p", "--package") and i + 1 < len(args):
            packages.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--package="):
            packages.append(arg.split("=", 1)[1])
        elif arg == "--" or not arg.startswith("-"):
            if not packages and arg != "--":
                packages.append(arg)
            break
        i += 1
    return packages
