"""Attacks on the workspace jail, each written as a test, plus a property over generated hostile paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace.jail import DEFAULT_BLOCKED, Jail

PROTOCOL_CODES = {"validation", "permission", "not_found", "unsupported"}


def build_tree(base: Path) -> Path:
    """A workspace next to an `outside` folder, with every kind of symlink an attacker would plant."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    root = base / "ws"
    for folder in ("src", "a", "sub", ".git", "node_modules/x", "secrets", ".ssh"):
        (root / folder).mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / ".env").write_text("TOKEN=canary\n")
    (root / ".env.local").write_text("TOKEN=canary\n")
    (root / "sub" / ".env").write_text("TOKEN=canary\n")
    (root / ".git" / "config").write_text("[core]\n")
    (root / "node_modules" / "x" / "index.js").write_text("x\n")
    (root / "secrets" / "x").write_text("x\n")
    (root / "key.pem").write_text("-----BEGIN-----\n")
    (root / "link_out").symlink_to(outside)  # a directory leaving the workspace
    (root / "link_file_out").symlink_to(outside / "secret.txt")
    (root / "notes.txt").symlink_to(root / ".env")  # an innocent name for a secret
    (root / "src" / "alias.py").symlink_to(root / "src" / "app.py")
    (root / "dangling_out").symlink_to(outside / "new.txt")
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return build_tree(tmp_path)


@pytest.fixture
def jail(root: Path) -> Jail:
    return Jail(root)


def failure(jail: Jail, path: str, **kwargs: bool) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        jail.resolve(path, **kwargs)
    return info.value


@pytest.mark.parametrize(
    "path",
    ["../x", "a/../../x", "./../../etc/passwd", "../ws/../outside/secret.txt", "src/../../outside/secret.txt",
     "link_out", "link_out/secret.txt", "link_file_out", "loop1/../../outside/secret.txt",
     "loop1/../link_out", "loop1/../link_out/secret.txt"],  # a loop left `link_out` unresolved (hypothesis found it)
)  # fmt: skip
def test_relative_escapes_are_refused(jail: Jail, path: str) -> None:
    error = failure(jail, path).error
    assert error.code == "permission"
    assert error.message == f"path escapes the workspace: {path}"
    assert error.suggestion and "relative to the workspace root" in error.suggestion


def test_absolute_paths_outside_are_refused(jail: Jail, root: Path) -> None:
    for path in ("/etc/passwd", "/", str(root.parent), str(root.parent / "outside" / "secret.txt")):
        assert failure(jail, path).error.code == "permission", path


def test_escape_is_refused_even_when_the_target_does_not_exist(jail: Jail) -> None:
    # Writing through a dangling symlink would create a file outside; a missing target must not turn into not_found.
    assert failure(jail, "dangling_out", must_exist=False).error.code == "permission"
    assert failure(jail, "../new.txt", must_exist=False).error.code == "permission"
    assert failure(jail, "link_out/new/deeper.txt", must_exist=False).error.code == "permission"


@pytest.mark.parametrize(
    "path",
    [".env", "./.env", "sub/.env", ".ENV", ".Env.local", ".env.local", "a/../.env", "src/../sub/.env",
     ".git/config", ".git", "node_modules/x/index.js", "src/node_modules/y.js", "secrets/x", "key.pem", "KEY.PEM",
     ".ssh/id_rsa", "id_ed25519.pub", "cert.p12", "store.PFX", ".sunwell/config.yaml", "__pycache__/m.pyc",
     "notes.txt", ".env.", ".env ", "missing/.env.production"],
)  # fmt: skip
def test_blocked_paths_are_refused_by_every_spelling(jail: Jail, root: Path, path: str) -> None:
    for candidate in (path, str(root / path)):
        error = failure(jail, candidate).error
        assert error.code == "permission", candidate
        assert error.message == f"path is blocked by policy: {candidate}"
        assert failure(jail, candidate, must_exist=False).error.code == "permission"


def test_symlink_named_innocently_is_judged_by_its_target(jail: Jail) -> None:
    assert "blocked" in failure(jail, "notes.txt").error.message


def test_nul_empty_and_overlong_paths_are_validation_errors(jail: Jail) -> None:
    for path in ("a\x00.txt", "", "   ", "x" * 5000, "src/" + "y" * 256, "a/" * 3000, "\ud800"):
        assert failure(jail, path).error.code == "validation", path[:20]
        assert failure(jail, path, must_exist=False).error.code == "validation", path[:20]


def test_missing_path_is_not_found_with_a_hint(jail: Jail) -> None:
    error = failure(jail, "src/nope.py").error
    assert error.code == "not_found"
    assert error.suggestion and "list_files" in error.suggestion and '"src"' in error.suggestion
    assert failure(jail, "a.txt/child").error.code == "not_found"


def test_a_misspelt_name_gets_the_close_matches_that_exist(jail: Jail) -> None:
    # Qwen 0.5B turns "Read a.txt" into read.txt; the error names the file it meant.
    assert 'did you mean "a.txt"' in failure(jail, "read.txt").error.suggestion
    assert 'did you mean "src/app.py"' in failure(jail, "src/apps.py").error.suggestion
    # Blocked names are never offered (.env for env), and nothing close means the plain hint.
    assert ".env" not in failure(jail, "env").error.suggestion
    assert "did you mean" not in failure(jail, "zzzzzz.rs").error.suggestion


def test_symlink_loop_is_a_clean_failure(jail: Jail) -> None:
    assert failure(jail, "loop1").error.code in {"validation", "not_found"}


def test_legitimate_paths_resolve(jail: Jail, root: Path) -> None:
    assert jail.resolve("src/../a.txt") == root / "a.txt"
    assert jail.resolve(str(root / "src" / "app.py")) == root / "src" / "app.py"
    assert jail.resolve("src/alias.py") == root / "src" / "app.py"  # a symlink inside pointing inside
    assert jail.resolve(".") == root
    assert jail.resolve("./src/") == root / "src"
    assert jail.resolve("src/new.py", must_exist=False) == root / "src" / "new.py"
    assert jail.resolve("new/dir/file.py", must_exist=False) == root / "new" / "dir" / "file.py"
    assert jail.resolve("environment.py", must_exist=False).name == "environment.py"  # not `.env`


def test_workspace_reached_through_a_symlink(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    jail = Jail(alias)
    assert jail.root == root
    assert jail.resolve(str(alias / "a.txt")) == root / "a.txt"
    assert jail.resolve("a.txt") == root / "a.txt"
    assert failure(jail, str(alias / ".env")).error.code == "permission"


def test_extra_patterns_and_anchored_paths(root: Path) -> None:
    (root / "config").mkdir()
    (root / "config" / "prod.yaml").write_text("password: x\n")
    (root / "sub" / "config").mkdir()
    (root / "sub" / "config" / "prod.yaml").write_text("fine\n")
    jail = Jail(root, ["config/prod.yaml", "*.sqlite", "private/"])
    for path in (
        "config/prod.yaml",
        "CONFIG/Prod.YAML",
        "sub/../config/prod.yaml",
        "db.SQLITE",
        "x/private/y",
    ):
        assert failure(jail, path, must_exist=False).error.code == "permission", path
    assert (
        jail.resolve("sub/config/prod.yaml") == root / "sub" / "config" / "prod.yaml"
    )  # anchored at the root
    assert jail.blocked[: len(DEFAULT_BLOCKED)] == DEFAULT_BLOCKED


def test_is_blocked_and_relative(jail: Jail, root: Path) -> None:
    assert jail.is_blocked("a/b/.env")
    assert jail.is_blocked("src/node_modules")
    assert jail.is_blocked("deep/.git/objects/ab")
    assert jail.is_blocked("keys/x.pem.") and jail.is_blocked("credentials.json ")  # Windows drops the trailing . and space
    assert not jail.is_blocked("src/app.py")
    assert not jail.is_blocked(".")
    assert not jail.is_blocked("environment.py")
    assert jail.relative(root) == "."
    assert jail.relative(root / "src" / "app.py") == "src/app.py"


# ---- the property ----------------------------------------------------------------------------------------------

SEGMENTS = ["..", ".", "", ".env", "a", "src", "link_out", "link_file_out", "notes.txt", "loop1", "/", "%2e%2e",
            "\x00", "x" * 300, "é", "日本語", ".ENV", "secrets", "a.txt", "..%2f", "\\..\\", "~", ".git"]  # fmt: skip


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tree(tmp_path_factory.mktemp("prop"))


hostile_paths = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), max_size=8).map("/".join),
    st.lists(st.sampled_from(SEGMENTS), max_size=6).map("".join),
    st.text(max_size=40),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(path=hostile_paths, absolute=st.booleans(), must_exist=st.booleans())
def test_resolve_never_leaves_the_workspace(
    shared_root: Path, path: str, absolute: bool, must_exist: bool
) -> None:
    jail = Jail(shared_root)
    candidate = str(shared_root) + "/" + path if absolute else path
    try:
        resolved = jail.resolve(candidate, must_exist=must_exist)
    except ToolFailure as exc:
        assert exc.error.code in PROTOCOL_CODES
        return
    assert resolved == Path(os.path.realpath(resolved))
    assert resolved == jail.root or resolved.is_relative_to(jail.root)
    assert not jail.is_blocked(jail.relative(resolved))
    assert not resolved.is_relative_to(shared_root.parent / "outside")
    if must_exist:
        assert os.path.lexists(resolved)


# ---- the walk: what it yields is what is_blocked allows --------------------------------------------------------

NAMES = ["a", "src", ".env", ".env.", ".env ", "ENV", "config", "CONFIG", "prod.yaml", "Prod.YAML", "x.pem", "keep",
         "private", ".git", "node_modules", "secrets.txt", "..a", "b.", "id_rsa.pub", ".docker", "config.json",
         "x.pem.", "credentials.json ", ".git.", "private.."]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(paths=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1, max_size=12))
def test_a_walk_yields_exactly_what_is_blocked_allows(
    tmp_path_factory: pytest.TempPathFactory, paths: list[list[str]]
) -> None:
    """The walk checks each entry's own name only (its folder was checked when it was entered): the same answer as
    `is_blocked` on the whole path and every folder above it, for default, extra and anchored patterns, any case,
    trailing dots and spaces included."""
    from sunwell.tools.handlers.files import walk

    root = tmp_path_factory.mktemp("walk")
    folders = {tuple(parts[:i]) for parts in paths for i in range(1, len(parts))}
    for folder in folders:
        root.joinpath(*folder).mkdir(parents=True, exist_ok=True)
    for parts in paths:
        if tuple(parts) not in folders:
            root.joinpath(*parts).write_text("x")
    jail = Jail(root, ["config/prod.yaml", "private/", "*.PUB"])
    every = [p.relative_to(root).as_posix() for p in root.rglob("*")]
    allowed = {rel for rel in every  # neither it nor any folder above it is blocked
               if not any(jail.is_blocked(rel.rsplit("/", i)[0]) for i in range(rel.count("/") + 1))}
    assert {rel for _, rel in walk(jail, root)} == allowed
    for folder in (f for f in folders if "/".join(f) in allowed):
        inside = {rel for rel in allowed if rel.startswith("/".join(folder) + "/")}
        assert {rel for _, rel in walk(jail, root.joinpath(*folder))} == inside
