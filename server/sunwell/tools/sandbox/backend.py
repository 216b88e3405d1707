"""Which sandbox runs a command on this platform, and whether it is there.

Linux has bubblewrap (bwrap.py), macOS has Seatbelt (`/usr/bin/sandbox-exec` with a profile Sunwell writes,
seatbelt.py), Windows has none yet: there a command is asked before it runs, unsandboxed, and undo works from the
snapshot taken before it (snapshot.py). Nothing here starts a sandbox; `sunwell version` and run_command ask it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

from sunwell.tools.sandbox.bwrap import bwrap_available
from sunwell.tools.sandbox.seatbelt import SANDBOX_EXEC

Backend = Literal["bubblewrap", "seatbelt", "none"]
VERSION_TIMEOUT = 5.0


def backend_for(platform_name: str) -> Backend:
    """The sandbox this platform (`sys.platform`) gets: bubblewrap on Linux, Seatbelt on macOS, none elsewhere."""
    if platform_name.startswith("linux"):
        return "bubblewrap"
    if platform_name == "darwin":
        return "seatbelt"
    return "none"


@dataclass(frozen=True)
class SandboxFound:
    backend: Backend
    executable: str | None
    """The sandbox program found, None when it is missing (or the platform has none)."""
    version: str | None

    @property
    def problem(self) -> str | None:
        """Why commands cannot run sandboxed here, or None when the program is there."""
        if self.backend == "none":
            return f"Sunwell has no command sandbox on {platform.system() or sys.platform} yet"
        if self.executable is None:
            return ("bubblewrap is not installed (apt-get install bubblewrap)" if self.backend == "bubblewrap"
                    else f"{SANDBOX_EXEC} is missing")
        return None


def find_sandbox(platform_name: str = sys.platform, bwrap_path: str | None = None) -> SandboxFound:
    """The backend of `platform_name`, its program (bwrap: `bwrap_path` or the one on PATH; Seatbelt: only the
    system's own /usr/bin/sandbox-exec, never one on PATH) and its version."""
    backend = backend_for(platform_name)
    if backend == "bubblewrap":
        bwrap = bwrap_available(bwrap_path)
        return SandboxFound(backend, bwrap, program_version([bwrap, "--version"]) if bwrap else None)
    if backend == "seatbelt":
        present = os.path.isfile(SANDBOX_EXEC) and os.access(SANDBOX_EXEC, os.X_OK)
        # sandbox-exec has no --version: it is the system's, so the macOS version is its version
        release = platform.mac_ver()[0] if platform_name == sys.platform else ""
        return SandboxFound(backend, SANDBOX_EXEC if present else None, f"macOS {release}" if release else None)
    return SandboxFound(backend, None, None)


def program_version(argv: list[str]) -> str | None:
    """The first line a `--version` prints, or None when the program cannot be run."""
    if shutil.which(argv[0]) is None and not os.path.isfile(argv[0]):
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def shell_argv(command: str, platform_name: str = sys.platform) -> list[str]:
    """How a command line runs: `bash -c` (inside the sandbox on Linux and macOS). On Windows, Git's bash when it is
    installed, else cmd.exe; never System32's bash.exe, which is WSL's and runs the command in another system."""
    if platform_name != "win32":
        return ["bash", "-c", command]
    bash = shutil.which("bash")
    if bash and "\\windows\\" not in bash.lower() and "windowsapps" not in bash.lower():
        return [bash, "-c", command]
    return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", command]
