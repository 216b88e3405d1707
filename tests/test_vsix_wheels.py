"""The platform packages carry wheels for their own target only, for every Python they support.

The cheap part runs everywhere: the target -> wheel-tag mapping (extension/build/targets.json) and the checker
(scripts/vsix_wheels.py) on made-up wheel names. The real part opens each built package (`npm run package:all`,
about 5 minutes the first time, then cached); it is skipped, with the reason, when a package has not been built.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("vsix_wheels", ROOT / "scripts" / "vsix_wheels.py")
assert spec and spec.loader
vsix_wheels = importlib.util.module_from_spec(spec)
sys.modules["vsix_wheels"] = vsix_wheels  # dataclasses look their module up there
spec.loader.exec_module(vsix_wheels)

TARGETS, PYTHONS = vsix_wheels.load_targets()
VERSION = json.loads((ROOT / "package.json").read_text())["version"]
EXAMPLE = {  # a platform tag of a real wheel for each target
    "linux-x64": "manylinux_2_17_x86_64.manylinux2014_x86_64", "linux-arm64": "manylinux_2_17_aarch64",
    "darwin-x64": "macosx_10_12_x86_64", "darwin-arm64": "macosx_11_0_arm64", "win32-x64": "win_amd64",
}  # fmt: skip


def test_the_five_targets_vs_code_publishes_for():
    assert sorted(TARGETS) == ["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "win32-x64"]
    assert PYTHONS[0] == "3.11"  # pyproject's requires-python
    assert "requires-python = \">=3.11\"" in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_target_downloads_only_what_it_accepts(target):
    """What pip is asked for (`pip`) is accepted by the target's own pattern and by no other target's."""
    for tag in TARGETS[target]["pip"]:
        owners = [t for t in TARGETS if vsix_wheels.runs_on(vsix_wheels.parse_wheel(f"x-1-cp311-cp311-{tag}.whl"),
                                                           TARGETS[t]["wheel"])]  # fmt: skip
        expected = ["darwin-arm64", "darwin-x64"] if tag.endswith("universal2") else [target]
        assert sorted(owners) == expected, tag


def wheels_for(target: str, pythons: list[str]) -> list[str]:
    plat = EXAMPLE[target]
    names = [f"sunwell-{VERSION}-py3-none-any.whl", "pydantic-2.9.0-py3-none-any.whl",
             f"watchfiles-1.0.0-cp310-abi3-{plat}.whl"]
    return names + [f"pydantic_core-2.23.0-cp3{p[2:]}-cp3{p[2:]}-{plat}.whl" for p in pythons]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_checker_accepts_a_complete_set(target):
    assert vsix_wheels.problems(wheels_for(target, PYTHONS), target, TARGETS, PYTHONS) == []


def test_the_checker_names_a_foreign_wheel_and_a_missing_python():
    files = wheels_for("darwin-arm64", PYTHONS[:-1]) + ["pyyaml-6.0-cp312-cp312-win_amd64.whl"]
    found = vsix_wheels.problems(files, "darwin-arm64", TARGETS, PYTHONS)
    assert "pyyaml-6.0-cp312-cp312-win_amd64.whl: not for darwin-arm64" in found
    assert f"pydantic-core: no wheel for CPython {PYTHONS[-1]} on darwin-arm64" in found
    assert "pyyaml: no wheel for CPython 3.11 on darwin-arm64" in found
    # an x86_64 wheel is not an arm64 one, and musl is not manylinux
    assert vsix_wheels.problems(["a-1-cp311-abi3-manylinux_2_17_x86_64.whl"], "linux-arm64", TARGETS, ["3.11"])
    assert vsix_wheels.problems(["a-1-cp311-abi3-musllinux_1_2_x86_64.whl"], "linux-x64", TARGETS, ["3.11"])


def test_abi3_serves_its_python_and_later_ones_only():
    wheel = vsix_wheels.parse_wheel("cryptography-44.0-cp311-abi3-win_amd64.whl")
    assert [vsix_wheels.serves(wheel, p) for p in ("3.11", "3.14")] == [True, True]
    assert not vsix_wheels.serves(vsix_wheels.parse_wheel("c-1-cp312-abi3-win_amd64.whl"), "3.11")
    assert not vsix_wheels.serves(vsix_wheels.parse_wheel("c-1-cp312-cp312-win_amd64.whl"), "3.13")
    with pytest.raises(ValueError):
        vsix_wheels.parse_wheel("not-a-wheel.tar.gz")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_built_package_carries_only_its_targets_wheels(target):
    vsix = ROOT / f"sunwell-{target}-{VERSION}.vsix"
    if not vsix.exists():
        reason = f"{vsix.name} not built (npm run package -- --target {target}, or npm run package:all)"
        print(reason)
        pytest.skip(reason)
    assert vsix_wheels.check_vsix(vsix, target) == []
    assert vsix.stat().st_size <= 30 * 2**20, f"{vsix.name}: {vsix.stat().st_size:,} bytes, over 30 MB"


def test_the_checker_reads_a_package_it_is_given(tmp_path: Path):
    """A fabricated .vsix: the target comes from its manifest, a wrong one is said."""
    import zipfile

    vsix = tmp_path / "x.vsix"
    with zipfile.ZipFile(vsix, "w") as archive:
        archive.writestr("extension.vsixmanifest", '<Identity Id="sunwell" TargetPlatform="win32-x64" />')
        for name in wheels_for("win32-x64", PYTHONS):
            archive.writestr(vsix_wheels.WHEELS_IN_VSIX + name, b"")
    assert vsix_wheels.check_vsix(vsix) == []
    assert vsix_wheels.check_vsix(vsix, "linux-x64") == [f"{vsix.name}: built for win32-x64, expected linux-x64"]
