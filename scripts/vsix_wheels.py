#!/usr/bin/env python3
"""Check that a platform .vsix carries only wheels that run on its target, for every Python it supports.

    python scripts/vsix_wheels.py sunwell-darwin-arm64-0.1.0.vsix [--target darwin-arm64]

The target is read from the package's manifest (vsce writes TargetPlatform) unless given. A compiled wheel (one
whose platform tag is not `any`) must have a platform tag of the target (extension/build/targets.json), and each
compiled project must have a wheel for each Python of targets.json (cp3XY, or abi3 from an older one). Exit 1 and
one line per problem otherwise. tests/test_vsix_wheels.py runs it on the built packages and on made-up names.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS_FILE = ROOT / "extension" / "build" / "targets.json"
WHEELS_IN_VSIX = "extension/dist/python/wheels/"


def load_targets(path: Path = TARGETS_FILE) -> tuple[dict[str, dict], list[str]]:
    data = json.loads(path.read_text("utf-8"))
    return data["targets"], data["pythons"]


@dataclass(frozen=True)
class Wheel:
    file: str
    project: str
    tags: frozenset[tuple[str, str, str]]
    """(python, abi, platform) triples: a name's dotted tag sets expanded."""

    @property
    def compiled(self) -> bool:
        return any(plat != "any" for _, _, plat in self.tags)


def parse_wheel(file: str) -> Wheel:
    """name-version(-build)?-python-abi-platform.whl (PEP 427); raises ValueError for anything else."""
    parts = file.removesuffix(".whl").split("-")
    if not file.endswith(".whl") or len(parts) not in (5, 6):
        raise ValueError(f"not a wheel file name: {file}")
    py, abi, plat = parts[-3:]
    tags = frozenset((p, a, t) for p in py.split(".") for a in abi.split(".") for t in plat.split("."))
    return Wheel(file, parts[0].lower().replace("_", "-"), tags)


def runs_on(wheel: Wheel, pattern: str) -> bool:
    return any(plat == "any" or re.match(pattern, plat) for _, _, plat in wheel.tags)


def serves(wheel: Wheel, python: str) -> bool:
    """Whether CPython `python` ("3.12") can install this wheel, by its interpreter and ABI tags."""
    want = int(python.split(".")[1])
    for py, abi, _ in wheel.tags:
        if py in ("py3", f"py3{want}") or (py == f"cp3{want}" and abi in (f"cp3{want}", "none", "abi3")):
            return True
        if abi == "abi3" and (found := re.fullmatch(r"cp3(\d+)", py)) and int(found.group(1)) <= want:
            return True
    return False


def problems(files: Iterable[str], target: str, targets: dict[str, dict], pythons: list[str]) -> list[str]:
    """What is wrong with these wheel names for `target`: foreign platforms, Pythons without a wheel."""
    pattern = targets[target]["wheel"]
    wheels = [parse_wheel(f) for f in files]
    found = [f"{w.file}: not for {target}" for w in wheels if w.compiled and not runs_on(w, pattern)]
    for project in sorted({w.project for w in wheels if w.compiled}):
        mine = [w for w in wheels if w.project == project and runs_on(w, pattern)]
        found += [f"{project}: no wheel for CPython {python} on {target}" for python in pythons
                  if not any(serves(w, python) for w in mine)]
    return found


def vsix_target(archive: zipfile.ZipFile) -> str | None:
    manifest = archive.read("extension.vsixmanifest").decode("utf-8")
    found = re.search(r'TargetPlatform="([^"]+)"', manifest)
    return found.group(1) if found else None


def vsix_wheels(archive: zipfile.ZipFile) -> list[str]:
    return sorted(name.removeprefix(WHEELS_IN_VSIX) for name in archive.namelist()
                  if name.startswith(WHEELS_IN_VSIX) and name.endswith(".whl"))


def check_vsix(path: Path, target: str | None = None) -> list[str]:
    targets, pythons = load_targets()
    with zipfile.ZipFile(path) as archive:
        declared = vsix_target(archive)
        wheels = vsix_wheels(archive)
    target = target or declared
    if target is None:
        return [f"{path.name}: no target platform in its manifest (a universal package carries no wheels to check)"]
    if declared != target:
        return [f"{path.name}: built for {declared}, expected {target}"]
    if not wheels:
        return [f"{path.name}: carries no wheels"]
    return problems(wheels, target, targets, pythons)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vsix", nargs="+", type=Path)
    parser.add_argument("--target", help="the target it must be for (default: the one its manifest names)")
    args = parser.parse_args(argv)
    failed = False
    for path in args.vsix:
        found = check_vsix(path, args.target)
        for line in found:
            print(f"{path.name}: {line}", file=sys.stderr)
        failed |= bool(found)
        if not found:
            print(f"{path.name}: every compiled wheel is for its target")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
