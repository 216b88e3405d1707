"""`sunwell --version` and `sunwell version [--json]`: what a bug report needs to say about this installation."""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
from typing import Any

from sunwell import __version__
from sunwell.agent.exports import find_sandbox, program_version
from sunwell.cli.exit_codes import EXIT_OK


def version_line() -> str:
    return f"sunwell {__version__}"


def version_info() -> dict[str, Any]:
    """The package, the Python running it, the platform, the command sandbox found and the programs it uses (rg,
    bwrap or sandbox-exec) with their versions; a program missing is null."""
    sandbox = find_sandbox()
    rg = shutil.which("rg")
    return {
        "sunwell": __version__,
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
                     "sys_platform": sys.platform},
        "sandbox": {"backend": sandbox.backend, "executable": sandbox.executable, "version": sandbox.version,
                    "problem": sandbox.problem},
        "ripgrep": {"executable": rg, "version": program_version([rg, "--version"]) if rg else None},
    }


def cmd_version(args: argparse.Namespace) -> int:
    info = version_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    sandbox, rg = info["sandbox"], info["ripgrep"]
    print(version_line())
    print(f"python    {info['python']['version']} ({info['python']['executable']})")
    print(f"platform  {info['platform']['system']} {info['platform']['release']} {info['platform']['machine']}")
    found = f"{sandbox['executable']} ({sandbox['version'] or 'version unknown'})" if sandbox["executable"] else ""
    print(f"sandbox   {sandbox['backend']}" + (f": {found}" if found else f": {sandbox['problem']}"))
    print(f"ripgrep   {rg['version'] or 'not found (search_files uses its Python fallback)'}")
    return EXIT_OK
