"""LIST_FILES, read_file and search_files on a real tree in a temp dir (both search engines)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import call_tool
from sunwell.tools.base import Limits, SearchSettings, Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.handlers.files import LIST_FILES, READ_FILE, compile_glob
from sunwell.tools.handlers.search import SEARCH_FILES
from sunwell.tools.handlers.search_hits import MAX_MATCHES, Hits
from sunwell.tools.output import truncate
from sunwell.tools.workspace.jail import Jail

RG = shutil.which("rg")
ENGINES = [
    pytest.param(RG, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="ripgrep not installed")),
    pytest.param("", id="python"),  # "" means: don't use ripgrep
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("needle outside\n")
    root = tmp_path / "ws"
    for folder in ("src/pkg", "docs", ".git", "node_modules/lib", "secrets", ".hidden", "empty"):
        (root / folder).mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nneedle in readme\n")
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 'needle'\n")
    (root / "src" / "pkg" / "util.py").write_text("NEEDLE = 1\nneedle = 2\n")
    (root / "docs" / "guide.md").write_text("a needle\n")
    (root / ".hidden" / "h.txt").write_text("needle hidden\n")
    (root / ".gitignore").write_text("docs/\n*.md\n")  # must not hide anything
    (root / ".env").write_text("needle=canary\n")
    (root / ".ENV.local").write_text("needle=canary\n")
    (root / "key.pem").write_text("needle\n")
    (root / ".git" / "config").write_text("needle\n")
    (root / "node_modules" / "lib" / "index.js").write_text("needle\n")
    (root / "secrets" / "token").write_text("needle\n")
    (root / "data.bin").write_bytes(b"needle\x00\x01\x02")
    (root / "notes.txt").symlink_to(root / ".env")
    (root / "escape").symlink_to(outside)
    (root / "escape.txt").symlink_to(outside / "leak.txt")
    (root / "srclink").symlink_to(root / "src")
    return root


def context(root: Path, ripgrep: str | None = "", max_bytes: int = 100_000, blocked: tuple[str, ...] = ()):
    return ToolContext(jail=Jail(root, blocked), limits=Limits(max_output_bytes=max_bytes, search=SearchSettings(ripgrep_path=ripgrep)))


async def failure(tool, args: dict, ctx: ToolContext) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        await call_tool(tool, args, ctx)
    return info.value


# ---- output cap -----------------------------------------------------------------------------------------------


@given(text=st.text(alphabet=st.sampled_from(["a", "é", "日", "\n", "🙂", " "]), max_size=3_000),
       cap=st.integers(min_value=120, max_value=2_000))  # fmt: skip
def test_truncate_fits_the_cap_and_says_so(text: str, cap: int) -> None:
    out = truncate(text, cap, "ask for less")
    if len(text.encode()) <= cap:
        assert out == text
        return
    assert len(out.encode()) <= cap
    head, _, notice = out.rpartition("\n")
    assert text.startswith(head)
    assert notice.startswith("[output truncated: showed ") and notice.endswith(" bytes; ask for less]")
    assert f"of {len(text.encode()):,} bytes" in notice


def test_truncate_prefers_a_line_boundary() -> None:
    text = "".join(f"line {i}\n" for i in range(1_000))
    out = truncate(text, 500, "use offset")
    body, _, notice = out.rpartition("\n")
    assert (body + "\n").endswith("\n") and body.splitlines()[-1].startswith("line ")
    assert text.startswith(body + "\n")
    assert notice == f"[output truncated: showed {len(body) + 1:,} of {len(text):,} bytes; use offset]"


# ---- list_files ------------------------------------------------------------------------------------------------


async def test_list_top_level_omits_blocked_and_escaping_entries(ws: Path) -> None:
    out = await call_tool(LIST_FILES, {}, context(ws))
    assert out.splitlines() == [
        ".gitignore", ".hidden/", "README.md", "data.bin", "docs/", "empty/", "src/", "srclink/",
    ]  # fmt: skip


async def test_list_recursive_glob(ws: Path) -> None:
    out = await call_tool(LIST_FILES, {"pattern": "**/*.py"}, context(ws))
    assert out.splitlines() == ["src/app.py", "src/pkg/util.py"]  # srclink/ is not followed
    out = await call_tool(LIST_FILES, {"path": "src", "pattern": "**"}, context(ws))
    assert out.splitlines() == ["src/app.py", "src/pkg/", "src/pkg/util.py"]
    out = await call_tool(LIST_FILES, {"pattern": "*/*.md"}, context(ws))
    assert out.splitlines() == ["docs/guide.md"]
    assert await call_tool(LIST_FILES, {"pattern": "*/"}, context(ws)) == ".hidden/\ndocs/\nempty/\nsrc/\nsrclink/"


async def test_list_never_enters_blocked_directories(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    real_scandir = os.scandir

    def spy(path):
        scanned.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    out = await call_tool(LIST_FILES, {"pattern": "**"}, context(ws))
    assert not [line for line in out.splitlines() if line.startswith(("node_modules", ".git/", "secrets"))]
    assert scanned, "the spy saw no scandir call"
    entered = {Path(p).name for p in scanned}
    assert not entered & {"node_modules", ".git", "secrets", "srclink", "lib"}


async def test_list_errors_and_empty(ws: Path) -> None:
    error = (await failure(LIST_FILES, {"path": "README.md"}, context(ws))).error
    assert (error.code, error.message) == ("unsupported", "not a directory: README.md")
    assert error.suggestion and "read_file" in error.suggestion
    assert await call_tool(LIST_FILES, {"path": "empty"}, context(ws)) == "(no files match)"
    assert await call_tool(LIST_FILES, {"pattern": "*.nothing"}, context(ws)) == "(no files match)"
    assert (await failure(LIST_FILES, {"path": "node_modules"}, context(ws))).error.code == "permission"
    assert (await failure(LIST_FILES, {"path": "escape"}, context(ws))).error.code == "permission"
    assert (await failure(LIST_FILES, {"path": "nope"}, context(ws))).error.code == "not_found"
    assert (await failure(LIST_FILES, {"pattern": "[abc"}, context(ws))).error.code == "validation"


async def test_list_caps_entries(tmp_path: Path) -> None:
    for i in range(2_100):
        (tmp_path / f"f{i:04d}.txt").write_text("")
    lines = (await call_tool(LIST_FILES, {}, context(tmp_path))).splitlines()
    assert len(lines) == 2_001
    assert lines[0] == "f0000.txt" and lines[1_999] == "f1999.txt"
    assert lines[-1].startswith("[showing the first 2,000 entries")


async def test_list_output_respects_the_byte_cap(tmp_path: Path) -> None:
    for i in range(300):
        (tmp_path / f"{'n' * 100}{i:03d}.txt").write_text("")
    out = await call_tool(LIST_FILES, {}, context(tmp_path, max_bytes=2_000))
    assert len(out.encode()) <= 2_000
    assert out.splitlines()[-1].startswith("[output truncated: showed ")


def test_glob_translation() -> None:
    assert compile_glob("**/*.py").match("a.py") and compile_glob("**/*.py").match("x/y/a.py")
    assert not compile_glob("*.py").match("x/a.py")
    assert compile_glob("*.{ts,tsx}").match("a.tsx") and not compile_glob("*.{ts,tsx}").match("a.js")
    assert compile_glob("[!a]*").match("b") and not compile_glob("[!a]*").match("abc")
    assert compile_glob("a?c").match("abc") and not compile_glob("a?c").match("a/c")


# ---- read_file -------------------------------------------------------------------------------------------------


async def test_read_whole_small_file(ws: Path) -> None:
    assert (
        await call_tool(READ_FILE, {"path": "src/app.py"}, context(ws))
        == "import os\n\ndef main():\n    return 'needle'\n"
    )
    (ws / "noeol.txt").write_text("one\ntwo")
    assert await call_tool(READ_FILE, {"path": "noeol.txt"}, context(ws)) == "one\ntwo"
    (ws / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    assert await call_tool(READ_FILE, {"path": "bom.txt"}, context(ws)) == "hello\n"
    (ws / "empty.txt").write_text("")
    assert await call_tool(READ_FILE, {"path": "empty.txt"}, context(ws)) == "(empty file)"


async def test_read_pages_with_a_continuation_line(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5_211)))
    out = (await call_tool(READ_FILE, {"path": "big.txt"}, context(ws))).splitlines()
    assert out[0] == "line 1" and out[1_999] == "line 2000" and len(out) == 2_001
    assert out[-1] == "[lines 1-2000 of 5210; call read_file with offset=2001 to continue]"
    out = (await call_tool(READ_FILE, {"path": "big.txt", "offset": 2001, "limit": 10}, context(ws))).splitlines()
    assert out == [f"line {i}" for i in range(2001, 2011)] + [
        "[lines 2001-2010 of 5210; call read_file with offset=2011 to continue]"
    ]
    out = (await call_tool(READ_FILE, {"path": "big.txt", "offset": 5201}, context(ws))).splitlines()
    assert out[-1] == "[lines 5201-5210 of 5210; end of file]" and out[0] == "line 5201"
    error = (await failure(READ_FILE, {"path": "big.txt", "offset": 5211}, context(ws))).error
    assert error.code == "validation" and "5210 lines" in error.message


async def test_read_stays_within_the_byte_cap_and_pages_cover_the_file(ws: Path) -> None:
    text = "".join(f"{i:05d} {'é' * 40}\n" for i in range(1, 1_001))
    (ws / "wide.txt").write_text(text)
    ctx = context(ws, max_bytes=4_096)
    pages, offset = [], 1
    while True:
        out = await call_tool(READ_FILE, {"path": "wide.txt", "offset": offset}, ctx)
        assert len(out.encode()) <= 4_096
        body, _, notice = out.rpartition("\n")
        pages.append(body + "\n")
        if notice.endswith("end of file]"):
            break
        assert "call read_file with offset=" in notice
        offset = int(notice.split("offset=")[1].split()[0])
    assert "".join(pages) == text


async def test_read_one_huge_line(ws: Path) -> None:
    (ws / "min.js").write_text("ab" * 500_000 + "\nsecond\n")
    out = await call_tool(READ_FILE, {"path": "min.js"}, context(ws, max_bytes=4_096))
    assert len(out.encode()) <= 4_096
    assert out.startswith("abab")
    assert out.splitlines()[-1].startswith("[line 1 has 1,000,001 bytes")
    assert "offset=2" in out.splitlines()[-1]
    assert await call_tool(READ_FILE, {"path": "min.js", "offset": 2}, context(ws, max_bytes=4_096)) == (
        "second\n[lines 2-2 of 2; end of file]"
    )


async def test_read_refuses_what_is_not_utf8_text(ws: Path) -> None:
    error = (await failure(READ_FILE, {"path": "data.bin"}, context(ws))).error
    assert (error.code, error.message) == ("unsupported", "data.bin is a binary file")
    error = (await failure(READ_FILE, {"path": "src"}, context(ws))).error
    assert error.code == "unsupported" and error.suggestion and "list_files" in error.suggestion
    (ws / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    error = (await failure(READ_FILE, {"path": "latin1.txt"}, context(ws))).error
    assert error.code == "unsupported" and "UTF-8" in error.message and "line 2" in error.message
    (ws / "utf16.txt").write_text("hi\n", encoding="utf-16")
    assert (await failure(READ_FILE, {"path": "utf16.txt"}, context(ws))).error.code == "unsupported"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
async def test_read_a_named_pipe_does_not_hang(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    error = (await asyncio.wait_for(failure(READ_FILE, {"path": "pipe"}, context(ws)), 5)).error
    assert error.code == "unsupported"


async def test_read_respects_the_jail_and_arguments(ws: Path) -> None:
    for path in (".env", "notes.txt", "secrets/token", ".git/config"):
        assert (await failure(READ_FILE, {"path": path}, context(ws))).error.code == "permission", path
    for path in ("escape.txt", "../outside/leak.txt", "escape/leak.txt"):
        assert (await failure(READ_FILE, {"path": path}, context(ws))).error.code == "permission", path
    assert (await failure(READ_FILE, {"path": "nope.txt"}, context(ws))).error.code == "not_found"
    assert (await failure(READ_FILE, {}, context(ws))).error.code == "validation"
    assert (
        await failure(READ_FILE, {"path": "README.md", "offset": 0}, context(ws))
    ).error.code == "validation"
    assert (
        await failure(READ_FILE, {"path": "README.md", "limit": "5"}, context(ws))
    ).error.code == "validation"
    assert await call_tool(READ_FILE, {"path": "srclink/app.py", "limit": 1}, context(ws)) == (
        "import os\n[lines 1-1 of 4; call read_file with offset=2 to continue]"
    )


def write_large_files(root: Path) -> None:
    with open(root / "large.log", "wb") as f:
        f.writelines(b"x" * 99 + b"\n" for _ in range(400_000))  # 40 MB
    (root / "oneline.txt").write_bytes(b"y" * 30_000_000)


async def test_read_streams_a_large_file(ws: Path) -> None:
    write_large_files(ws)
    tracemalloc.start()
    try:
        out = await call_tool(READ_FILE, {"path": "large.log", "offset": 200_001, "limit": 3}, context(ws))
        one = await call_tool(READ_FILE, {"path": "oneline.txt"}, context(ws))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (
        out.splitlines()[-1]
        == "[lines 200001-200003 of 400000; call read_file with offset=200004 to continue]"
    )
    assert one.splitlines()[-1].startswith("[line 1 has 30,000,000 bytes")
    assert peak < 8_000_000


# ---- search_files ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_finds_lines_sorted(ws: Path, rg: str | None) -> None:
    out = await call_tool(SEARCH_FILES, {"pattern": "needle"}, context(ws, rg))
    assert out.splitlines() == [
        ".hidden/h.txt:1:needle hidden",
        "README.md:2:needle in readme",
        "docs/guide.md:1:a needle",
        "src/app.py:4:    return 'needle'",
        "src/pkg/util.py:2:needle = 2",
    ]


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_never_shows_blocked_or_outside_files(ws: Path, rg: str | None) -> None:
    (ws / "config").mkdir()
    (ws / "config" / "prod.yaml").write_text("needle: prod\n")
    (ws / "sub" / "config").mkdir(parents=True)
    (ws / "sub" / "config" / "prod.yaml").write_text("needle: fine\n")
    ctx = context(ws, rg, blocked=("config/prod.yaml",))
    out = await call_tool(SEARCH_FILES, {"pattern": "needle|canary"}, ctx)
    for secret in (
        ".env",
        ".ENV",
        "key.pem",
        ".git",
        "node_modules",
        "secrets",
        "notes.txt",
        "escape",
        "data.bin",
    ):
        assert secret not in out, secret
    assert "config/prod.yaml:1:needle: prod" not in out.splitlines()
    assert "sub/config/prod.yaml:1:needle: fine" in out.splitlines()
    assert (await failure(SEARCH_FILES, {"pattern": "x", "path": "secrets"}, ctx)).error.code == "permission"
    assert (await failure(SEARCH_FILES, {"pattern": "x", "path": ".env"}, ctx)).error.code == "permission"
    assert (await failure(SEARCH_FILES, {"pattern": "x", "path": "escape"}, ctx)).error.code == "permission"


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_globs_paths_and_no_match(ws: Path, rg: str | None) -> None:
    ctx = context(ws, rg)
    out = await call_tool(SEARCH_FILES, {"pattern": "needle", "glob": "*.py"}, ctx)
    assert out.splitlines() == ["src/app.py:4:    return 'needle'", "src/pkg/util.py:2:needle = 2"]
    out = await call_tool(SEARCH_FILES, {"pattern": "(?i)needle", "path": "src/pkg"}, ctx)
    assert out.splitlines() == ["src/pkg/util.py:1:NEEDLE = 1", "src/pkg/util.py:2:needle = 2"]
    assert (
        await call_tool(SEARCH_FILES, {"pattern": "needle", "path": "src/app.py"}, ctx)
        == "src/app.py:4:    return 'needle'"
    )
    out = await call_tool(SEARCH_FILES, {"pattern": "needle", "glob": "src/**/*.py"}, ctx)
    assert out.splitlines() == ["src/app.py:4:    return 'needle'", "src/pkg/util.py:2:needle = 2"]
    out = await call_tool(SEARCH_FILES, {"pattern": "needle", "glob": "!*.{md,py}"}, ctx)
    assert out.splitlines() == [".hidden/h.txt:1:needle hidden"]
    assert await call_tool(SEARCH_FILES, {"pattern": "no such text anywhere"}, ctx) == "(no matches)"


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_invalid_regex_is_validation(ws: Path, rg: str | None) -> None:
    for pattern in ("(", "[a-", "needle)"):
        error = (await failure(SEARCH_FILES, {"pattern": pattern}, context(ws, rg))).error
        assert error.code == "validation", pattern
        assert error.message.startswith(f"invalid regex {pattern!r}: ")
        assert len(error.message) > len(f"invalid regex {pattern!r}: ") + 5  # the engine's reason follows


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_caps_matches_and_line_length(tmp_path: Path, rg: str | None) -> None:
    (tmp_path / "a.txt").write_text("".join(f"hit {i}\n" for i in range(400)))
    (tmp_path / "b.txt").write_text("".join(f"hit {i}\n" for i in range(400)))
    (tmp_path / "long.txt").write_text("hit " + "z" * 1_000 + "\n")
    lines = (await call_tool(SEARCH_FILES, {"pattern": "hit"}, context(tmp_path, rg))).splitlines()
    assert len(lines) == 501
    assert (
        lines[0] == "a.txt:1:hit 0" and lines[399] == "a.txt:400:hit 399" and lines[499] == "b.txt:100:hit 99"
    )
    assert lines[-1].startswith("[showing the first 500 matches;") and "glob" in lines[-1]
    out = await call_tool(SEARCH_FILES, {"pattern": "hit z"}, context(tmp_path, rg))
    assert out == "long.txt:1:hit " + "z" * 296 + " [...]"
    out = await call_tool(SEARCH_FILES, {"pattern": "hit"}, context(tmp_path, rg, max_bytes=1_000))
    assert len(out.encode()) <= 1_000 and out.splitlines()[-1].startswith("[output truncated:")


@pytest.mark.parametrize("rg", ENGINES)
async def test_search_skips_binary_files_even_when_the_nul_comes_late(tmp_path: Path, rg: str | None) -> None:
    (tmp_path / "late.bin").write_bytes(b"needle\n" * 30_000 + b"\x00needle\n")
    (tmp_path / "text.txt").write_text("needle\n")
    assert await call_tool(SEARCH_FILES, {"pattern": "needle"}, context(tmp_path, rg)) == "text.txt:1:needle"


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
async def test_ripgrep_and_python_give_identical_results(ws: Path) -> None:
    odd = ws / "odd"
    for folder in ("a", "B", "a b", "ünï", ".dot"):
        (odd / folder).mkdir(parents=True)
    for name in ("a/x", "a.txt", "a-b", "B/y", "b", "Z", "é", "a b/c", "ünï/ç.py", ".dot/.f", "x.py"):
        (odd / name).write_text("needle one\nnothing\nneedle two\n")
    (odd / "crlf.txt").write_bytes(b"needle\r\nneedle end\r\n")
    (odd / "bom.txt").write_bytes(b"\xef\xbb\xbfneedle bom\n")
    (odd / "bad.txt").write_bytes(b"needle \xff\xfe bytes\n")
    (odd / "noeol.txt").write_bytes(b"x\nneedle")
    (odd / "utf16.txt").write_text("needle\n", encoding="utf-16")
    (odd / "many.txt").write_text("needle\n" * 600)
    cases = [
        {"pattern": "needle"}, {"pattern": r"needle\s+\w+$"}, {"pattern": "^needle$"}, {"pattern": "e", "path": "odd"},
        {"pattern": "needle", "glob": "*.py"}, {"pattern": "needle", "glob": "!many.txt"},
        {"pattern": "needle", "path": "odd", "glob": "a*"}, {"pattern": "needle", "path": "odd/crlf.txt"},
        {"pattern": "(?i)NEEDLE", "path": "odd/a"}, {"pattern": "nothing", "glob": "odd/**"},
        {"pattern": r"\d+"},
    ]  # fmt: skip
    for args in cases:
        with_rg = await call_tool(SEARCH_FILES, dict(args), context(ws, RG))
        without = await call_tool(SEARCH_FILES, dict(args), context(ws, ""))
        assert with_rg == without, args
    assert "odd/bom.txt:1:needle bom" in await call_tool(SEARCH_FILES, {"pattern": "needle"}, context(ws, ""))


def spread_hits(root: Path, files: int, per_file: int) -> list[str]:
    """`files` files in nested folders, written in an order unlike path order, each with `per_file` hits; returns
    every hit as search_files shows it, in path order."""
    names = [f"{'zyx'[n % 3]}/{n % 7}/f{n:03d}.txt" for n in range(files)]
    for n, name in enumerate(reversed(names)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("".join(f"hit {n}.{i}\nmiss\n" for i in range(per_file)))
    shown = {
        name: [f"{name}:{2 * i + 1}:hit {n}.{i}" for i in range(per_file)]
        for n, name in enumerate(reversed(names))
    }
    return [line for name in sorted(names, key=lambda rel: rel.split("/")) for line in shown[name]]


@pytest.mark.parametrize("rg", ENGINES)
@pytest.mark.parametrize(("files", "per_file"), [(60, 10), (400, 10)], ids=["some", "dense"])
async def test_search_shows_the_first_matches_in_path_order_whatever_order_files_are_found_in(
    tmp_path: Path, rg: str | None, files: int, per_file: int
) -> None:
    # 600 hits stay under DENSE_MATCHES (ripgrep's unordered search only); 4,000 go over it (searched again in
    # path order): the same answer either way.
    every = spread_hits(tmp_path, files, per_file)
    lines = (await call_tool(SEARCH_FILES, {"pattern": "hit"}, context(tmp_path, rg))).splitlines()
    assert lines[:-1] == every[:500]
    assert lines[-1].startswith("[showing the first 500 matches;")


def test_hits_keep_the_first_in_path_order_in_bounded_memory(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    rels = [f"d{n % 13}/f{n:05d}" for n in range(3_000)]
    for rel in rels[:50]:  # the jail sees files that exist; the ones never kept need not
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text("x\n")
    ordered = sorted(rels, key=lambda rel: rel.split("/"))
    for rel in ordered[:120]:
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text("x\n")
    hits = Hits(Jail(root), lambda rel: True)
    for rel in reversed(rels):
        hits.add_file(rel, [(line, "x") for line in range(1, 8)], binary=False)
        assert len(hits.items) <= 2 * (MAX_MATCHES + 1)
    expected = [(rel, line) for rel in ordered for line in range(1, 8)][: MAX_MATCHES + 1]
    assert [(h.rel, h.lineno) for h in hits.items][: MAX_MATCHES + 1] == expected


def test_hits_check_each_file_against_the_jail(ws: Path) -> None:
    (ws / "config").mkdir()
    (ws / "config" / "prod.yaml").write_text("x\n")
    (ws / "src" / "pkg" / "link.py").symlink_to(ws / ".env")
    hits = Hits(Jail(ws, ("config/prod.yaml",)), lambda rel: True)
    for rel in ("notes.txt", "escape/leak.txt", "escape.txt", "config/prod.yaml", "src/pkg/link.py",
                "srclink/app.py", "src/app.py", "src/pkg/util.py", "missing.txt"):  # fmt: skip
        hits.add_file(rel, [(1, "x")], binary=False)
    assert [h.rel for h in hits.items] == ["src/app.py", "src/pkg/util.py", "srclink/app.py"]
    # Per folder, then per name: the same verdict as resolving each path whole.
    everything = [Path(top, name).relative_to(ws).as_posix()
                  for top, dirs, files in os.walk(ws, followlinks=True) for name in dirs + files]  # fmt: skip
    jail = Jail(ws, ("config/prod.yaml",))
    for rel in everything:
        one = Hits(jail, lambda rel: True)
        one.add_file(rel, [(1, "x")], binary=False)
        try:
            jail.resolve(rel)
            allowed = True
        except ToolFailure:
            allowed = False
        assert bool(one.items) == allowed, rel


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as a stand-in for ripgrep")
async def test_cancelling_a_search_kills_ripgrep(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    slow = tmp_path / "slow-rg"
    slow.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    slow.chmod(0o755)
    root = tmp_path / "ws"
    root.mkdir()
    task = asyncio.create_task(call_tool(SEARCH_FILES, {"pattern": "x"}, context(root, str(slow))))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


# ---- definitions -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "trust", "required"),
    [(LIST_FILES, Trust.discovery, []), (READ_FILE, Trust.read_only, ["path"]),
     (SEARCH_FILES, Trust.discovery, ["pattern"])],
)  # fmt: skip
def test_tool_definitions(tool: Tool, trust: Trust, required: list[str]) -> None:
    schema = tool.parameters
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == required
    assert (tool.min_trust, tool.approval, tool.read_only) == (trust, "auto", True)
    assert "Example" in tool.description and ".env" in tool.description
