"""`sunwell --version` and `sunwell version --json`: the real command, in a subprocess."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

from conftest import SERVER


def sunwell(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sunwell", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(SERVER)}, timeout=60)


def test_version_flag_prints_the_package_version():
    from sunwell import __version__

    done = sunwell("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"sunwell {__version__}\n"


def test_version_json_says_what_a_bug_report_needs():
    done = sunwell("version", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["python"]["version"] == platform.python_version()
    assert info["platform"]["sys_platform"] == sys.platform
    sandbox = info["sandbox"]
    assert sandbox["backend"] == {"linux": "bubblewrap", "darwin": "seatbelt"}.get(sys.platform, "none")
    # a program that is there has a version; one that is missing says why commands cannot be sandboxed
    assert (sandbox["executable"] is None) == (sandbox["problem"] is not None)
    if sandbox["backend"] == "bubblewrap" and sandbox["executable"]:
        assert sandbox["version"].startswith("bubblewrap ")
    if info["ripgrep"]["executable"]:
        assert info["ripgrep"]["version"].startswith("ripgrep ")


def test_version_text_names_each_part():
    done = sunwell("version")
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["sunwell", "python", "platform", "sandbox",
                                                                      "ripgrep"]
