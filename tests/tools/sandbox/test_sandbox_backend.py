"""The sandbox each platform gets, and the Seatbelt profile macOS commands run under, against golden profiles.

The profiles cannot run here (Linux); what is checked is the text sandbox-exec receives. To accept a deliberate
change to the profile: SUNWELL_UPDATE_GOLDEN=1 pytest tests/tools/sandbox/test_sandbox_backend.py, then read the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sunwell.tools.sandbox.backend import backend_for, find_sandbox
from sunwell.tools.sandbox.seatbelt import SANDBOX_EXEC, SeatbeltPolicy, seatbelt_argv, seatbelt_profile

GOLDEN = Path(__file__).parents[2] / "golden" / "seatbelt"

WORKSPACE_POLICY = SeatbeltPolicy(
    writable=["/private/var/folders/x/stage-1/copy", "/private/var/folders/x/home", "/private/var/folders/x/tmp"],
    shown=["/Users/me/project", "/private/var/folders/x/stage-1/copy", "/Users/me/.pyenv"],
    hidden=["/Users/me"],
    protected=["/private/var/folders/x/stage-1/copy/.vscode", "/private/var/folders/x/stage-1/copy/.git"],
    blocked_files=["/Users/me/project/.env", "/private/var/folders/x/stage-1/copy/.env"],
    blocked_dirs=["/Users/me/project/secrets"],
)


@pytest.mark.parametrize(("platform_name", "backend"), [
    ("linux", "bubblewrap"), ("darwin", "seatbelt"), ("win32", "none"), ("cygwin", "none"), ("freebsd14", "none"),
])  # fmt: skip
def test_each_platform_gets_its_backend(platform_name, backend):
    assert backend_for(platform_name) == backend


def test_windows_has_no_sandbox_and_says_so():
    found = find_sandbox("win32")
    assert (found.backend, found.executable) == ("none", None)
    assert "no command sandbox" in found.problem


def test_bubblewrap_found_by_path_or_missing(tmp_path):
    missing = find_sandbox("linux", bwrap_path=str(tmp_path / "bwrap"))
    assert missing.executable is None and "apt-get install bubblewrap" in missing.problem
    if os.path.exists("/usr/bin/bwrap"):
        found = find_sandbox("linux", bwrap_path="/usr/bin/bwrap")
        assert found.problem is None and found.version.startswith("bubblewrap ")


def test_seatbelt_uses_only_the_system_sandbox_exec(tmp_path, monkeypatch):
    (tmp_path / "sandbox-exec").write_text("#!/bin/sh\n")
    (tmp_path / "sandbox-exec").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = find_sandbox("darwin")
    assert found.executable in (None, SANDBOX_EXEC)  # never the one planted on PATH
    assert seatbelt_argv(SeatbeltPolicy(writable=["/w"]))[0] == SANDBOX_EXEC


@pytest.mark.parametrize(("name", "policy"), [
    ("workspace", WORKSPACE_POLICY),
    ("full_network", SeatbeltPolicy(writable=WORKSPACE_POLICY.writable, shown=WORKSPACE_POLICY.shown,
                                    hidden=WORKSPACE_POLICY.hidden, network=True)),
    ("nothing_blocked", SeatbeltPolicy(writable=["/private/tmp/copy"])),
])  # fmt: skip
def test_profile_matches_its_golden(name, policy):
    profile, params = seatbelt_profile(policy)
    text = profile + "\n; parameters\n" + "".join(f";   {key}={value}\n" for key, value in params)
    golden = GOLDEN / f"{name}.sb"
    if os.environ.get("SUNWELL_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


def test_network_only_at_full_trust():
    closed, _ = seatbelt_profile(WORKSPACE_POLICY)
    assert not re.search(r"^\(allow network", closed, re.MULTILINE) and "system-socket" not in closed
    opened, _ = seatbelt_profile(SeatbeltPolicy(writable=["/w"], network=True))
    assert "(allow network-outbound)" in opened


def test_paths_are_parameters_never_profile_text():
    hostile = '/tmp/a") (allow default) ("'
    profile, params = seatbelt_profile(SeatbeltPolicy(writable=[hostile], blocked_files=[hostile + "/.env"]))
    assert hostile not in profile and "(allow default)" not in profile
    assert ("WRITABLE_0", hostile) in params
    argv = seatbelt_argv(SeatbeltPolicy(writable=[hostile]))
    assert argv[:2] == [SANDBOX_EXEC, "-p"] and f"-DWRITABLE_0={hostile}" in argv


def test_every_path_kind_is_confined_and_blocked_comes_last():
    profile, params = seatbelt_profile(WORKSPACE_POLICY)
    assert profile.startswith("(version 1)") and "(deny default)" in profile
    # a kind with no paths gets no rule: an allow without a filter would allow every path
    assert not re.search(r"\(allow file-write\*\s*\)", seatbelt_profile(SeatbeltPolicy(writable=[]))[0])
    rules = [line for line in profile.splitlines() if line.startswith("(")]
    assert rules.index(next(r for r in rules if "BLOCKED" in r)) > max(
        i for i, r in enumerate(rules) if "file-write*" in r and "BLOCKED" not in r or "SHOWN" in r)
    assert {name.split("_")[0] for name, _ in params} == {"HIDDEN", "SHOWN", "WRITABLE", "PROTECTED", "BLOCKED"}
    assert len(params) == len(WORKSPACE_POLICY.writable) + len(WORKSPACE_POLICY.shown) + 1 + 2 + 2 + 1
