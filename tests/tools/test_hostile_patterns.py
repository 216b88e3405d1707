"""Hostile globs and regexes (issue 11, items 6 and 8): none may freeze the process or end in a traceback."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest

from conftest import call_tool
from sunwell.tools.base import Limits, SearchSettings, ToolContext, ToolFailure
from sunwell.tools.handlers.files import LIST_FILES, compile_glob
from sunwell.tools.handlers.search import SEARCH_FILES
from sunwell.tools.workspace.jail import Jail

RG = shutil.which("rg")
ENGINES = [
    pytest.param(RG, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="ripgrep not installed")),
    pytest.param("", id="python"),  # "" means: don't use ripgrep
]
GUARD = 30  # seconds; only a hang guard, every case here ends far sooner
EVIL_GLOBS = [
    pytest.param("**" * 100 + "x", id="stars"), pytest.param("**/" * 100 + "*x", id="star-slashes"),
    pytest.param("*" * 201 + "x", id="odd-stars"), pytest.param("{*,**}" * 30 + "x", id="braces"),
]  # fmt: skip
RUNAWAY = "(a+)+$"  # backtracks 2**n times on n `a`s followed by something else


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "deep" / ("b" * 40)).mkdir(parents=True)
    (root / "ax").write_text("needle\n")
    (root / ("a" * 60)).write_text("needle\n")  # a long name without the `x` is what backtracking chokes on
    (root / "deep" / ("b" * 40) / ("c" * 60 + "x")).write_text("needle\n")
    (root / "deep" / ("b" * 40) / ("c" * 60)).write_text("needle\n")
    (root / "runaway.txt").write_text("a" * 60 + "!\n")
    return root


def context(root: Path, ripgrep: str | None = "", timeout: float | None = None) -> ToolContext:
    return ToolContext(jail=Jail(root), limits=Limits(search=SearchSettings(ripgrep_path=ripgrep, timeout=timeout)))


async def failure(coro) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        await asyncio.wait_for(coro, GUARD)
    return info.value


def children_running(module: str) -> list[int]:
    """Our live child processes whose command line names `module` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError):
            continue
        if int(stat.rpartition(")")[2].split()[1]) == os.getpid() and module in cmdline:
            found.append(int(entry.name))
    return found


# ---- globs -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("glob", EVIL_GLOBS)
async def test_an_evil_glob_lists_promptly(ws: Path, glob: str) -> None:
    out = await asyncio.wait_for(call_tool(LIST_FILES, {"pattern": glob}, context(ws)), GUARD)
    assert out.splitlines() == ["ax", f"deep/{'b' * 40}/{'c' * 60}x"]  # every one of them recurses


@pytest.mark.parametrize("rg", ENGINES)
@pytest.mark.parametrize("glob", EVIL_GLOBS)
async def test_an_evil_glob_filters_search_hits_promptly(ws: Path, rg: str | None, glob: str) -> None:
    out = await asyncio.wait_for(call_tool(SEARCH_FILES, {"pattern": "needle", "glob": glob}, context(ws, rg)), GUARD)
    assert out.splitlines() == ["ax:1:needle", f"deep/{'b' * 40}/{'c' * 60}x:1:needle"]


def test_glob_matching_is_unchanged_on_ordinary_globs() -> None:
    cases = {
        "**/*.py": (["a.py", "x/y/a.py"], ["a.pyc", "x/a.py/b"]),
        "src/**": (["src/", "src/a", "src/a/b"], ["src", "lib/src/a"]),
        "a**b": (["ab", "a/x/b"], ["a/x/c"]),
        "*.{ts,tsx}": (["a.ts", "a.tsx"], ["a.js", "d/a.ts"]),
        "{src/**,lib}/*.py": (["src/a/b.py", "lib/c.py"], ["lib/x/c.py"]),
        "[!a]*": (["b", "bcd"], ["abc", "/x"]),
        "[]x]": (["]", "x"], ["y"]),
        "[!]]": (["y"], ["]", "/"]),
        "[a-c]?": (["bz"], ["dz", "b/"]),
        "a?c": (["abc"], ["a/c", "ac"]),
        "{}x": (["x"], ["{}x"]),
        "a,b}": (["a,b}"], ["a"]),
        "*": (["anything"], ["a/b"]),
    }
    for glob, (yes, no) in cases.items():
        matcher = compile_glob(glob)
        assert [p for p in yes if not matcher.match(p)] == [], glob
        assert [p for p in no if matcher.match(p)] == [], glob


async def test_malformed_and_oversized_globs_are_validation_errors(ws: Path) -> None:
    for glob in ("[abc", "{a,b", "[z-a]", "*" * 20_000):
        error = (await failure(call_tool(LIST_FILES, {"pattern": glob}, context(ws)))).error
        assert error.code == "validation" and "pattern" in error.message, glob
        error = (await failure(call_tool(SEARCH_FILES, {"pattern": "x", "glob": glob}, context(ws)))).error
        assert error.code == "validation" and "glob" in error.message, glob
    error = (await failure(call_tool(LIST_FILES, {"pattern": "*" * 20_000}, context(ws)))).error
    assert "1,000" in error.message


# ---- regexes ---------------------------------------------------------------------------------------------------


async def test_a_runaway_regex_in_the_python_engine_ends_with_a_timeout(ws: Path) -> None:
    error = (await failure(call_tool(SEARCH_FILES, {"pattern": RUNAWAY}, context(ws, "", timeout=2)))).error
    assert error.code == "timeout" and "2 s" in error.message
    assert error.suggestion and "(a+)+" in error.suggestion
    if sys.platform == "linux":
        assert children_running("sunwell.tools.handlers.pygrep") == []  # the search was killed, not left running


async def test_the_event_loop_keeps_running_during_a_runaway_regex(ws: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    clock = asyncio.create_task(ticker())
    try:
        await failure(call_tool(SEARCH_FILES, {"pattern": RUNAWAY}, context(ws, "", timeout=3)))
    finally:
        clock.cancel()
    assert ticks >= 10  # about 60 in 3 s; a loop held by the regex would see none


@pytest.mark.skipif(sys.platform != "linux", reason="looks for the child in /proc")
async def test_cancelling_a_python_search_kills_its_child(ws: Path) -> None:
    task = asyncio.create_task(call_tool(SEARCH_FILES, {"pattern": RUNAWAY}, context(ws, "")))
    for _ in range(500):
        if children_running("sunwell.tools.handlers.pygrep"):
            break
        await asyncio.sleep(0.01)
    assert children_running("sunwell.tools.handlers.pygrep")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, GUARD)
    assert children_running("sunwell.tools.handlers.pygrep") == []


@pytest.mark.parametrize("rg", ENGINES)
async def test_a_huge_pattern_is_refused_clearly(ws: Path, rg: str | None) -> None:
    for pattern in ("a" * 1_000_000, "a\n" * 500_000):
        error = (await failure(call_tool(SEARCH_FILES, {"pattern": pattern}, context(ws, rg)))).error
        assert error.code == "validation"
        assert "10,000" in error.message and "Traceback" not in error.message
    long_but_fine = "needle" + "|needle" * 1_400  # just under the limit
    assert len(long_but_fine) <= 10_000
    out = await asyncio.wait_for(call_tool(SEARCH_FILES, {"pattern": long_but_fine}, context(ws, rg)), GUARD)
    assert out.splitlines()[0] == f"{'a' * 60}:1:needle"


@pytest.mark.parametrize("rg", ENGINES)
async def test_ordinary_searches_still_agree_after_the_move(ws: Path, rg: str | None) -> None:
    out = await asyncio.wait_for(call_tool(SEARCH_FILES, {"pattern": r"^a+!$"}, context(ws, rg)), GUARD)
    assert out == f"runaway.txt:1:{'a' * 60}!"


@pytest.mark.parametrize("rg", ENGINES)
async def test_a_pattern_found_everywhere_keeps_memory_bounded(tmp_path: Path, rg: str | None) -> None:
    for n in range(1_000):  # 200,000 hits, in more files than ripgrep's unordered search keeps
        folder = tmp_path / f"d{n % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:04d}.txt").write_text("hit " + "x" * 100 + "\n" + "hit y\n" * 199)
    tracemalloc.start()
    try:
        out = await asyncio.wait_for(call_tool(SEARCH_FILES, {"pattern": "hit"}, context(tmp_path, rg)), GUARD)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    lines = out.splitlines()
    assert lines[0] == "d0/f0000.txt:1:hit " + "x" * 100 and lines[200] == "d0/f0010.txt:1:hit " + "x" * 100
    assert len(lines) == 501 and lines[-1].startswith("[showing the first 500 matches;")
    assert peak < 10_000_000  # about 1 MB; ripgrep's JSON about every hit would be some 60 MB
