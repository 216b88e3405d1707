"""The lenses a session can use: `**/*.lens` in the workspace and `*.lens` in the user's lens folder.

A file whose new version has errors keeps its last valid version active (its diagnostics say why the edit is not
live); `watch` reloads files as they change on disk. `narrow` is how a lens' policy meets the user's grant.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from sunwell.lens.loader import Diagnostic, LensResult, load_lens
from sunwell.lens.schema import Lens, ToolPolicy
from sunwell.vocabulary import Trust

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                          ".mypy_cache", ".pytest_cache", ".ssh", "secrets"})
"""Never searched for lenses: VCS data, dependencies, caches, and the jail's blocked directories."""
MAX_LENS_BYTES = 1_000_000

OnChange = Callable[[Path, LensResult | None], Awaitable[None] | None]
"""Called after a watched file is reloaded; the result is None when the file is gone."""


class LensRegistry:
    def __init__(self, workspace: Path, user_dir: Path | None = None, *, known_tools: Iterable[str] = (),
                 skip_dirs: Iterable[str] = ()) -> None:
        self.workspace = Path(workspace).resolve()
        self.user_dir = Path(user_dir).resolve() if user_dir is not None else None
        self.known_tools = tuple(known_tools)
        self.skip_dirs = SKIPPED_DIRS | set(skip_dirs)
        self._results: dict[Path, LensResult] = {}
        self._active: dict[Path, Lens] = {}
        self._explicit: set[Path] = set()  # files outside both folders, asked for by path
        self.refresh()

    def refresh(self) -> None:
        """Find every lens file again and load the new or changed ones; forget the vanished ones."""
        found = self._discover() | {path for path in self._explicit if path.is_file()}
        for path in [p for p in self._results if p not in found]:
            self._forget(path)
        for path in found:
            self.reload(path)

    def reload(self, path: Path | str) -> LensResult | None:
        """Load one file again; None (and the lens forgotten) when it no longer exists."""
        path = Path(path).resolve()
        try:
            size = path.stat().st_size
            text = path.read_text(encoding="utf-8") if size <= MAX_LENS_BYTES else None
        except (FileNotFoundError, NotADirectoryError):
            self._forget(path)
            return None
        except (OSError, UnicodeDecodeError) as exc:
            text, reason = None, f"Cannot read the lens: {getattr(exc, 'strerror', None) or exc}"
        else:
            reason = f"Lens file larger than {MAX_LENS_BYTES} bytes"
        if text is None:
            result = LensResult(str(path), None, [Diagnostic(0, 0, 0, 1, "error", reason, "unreadable")], None)
        else:
            result = load_lens(text, str(path), self.known_tools)
        self._results[path] = result
        if result.lens is not None:
            self._active[path] = result.lens
        return result

    def paths(self) -> list[Path]:
        """Known lens files: the workspace's first, then the user's, each sorted."""
        return sorted(self._results, key=lambda p: (not self._in_workspace(p), str(p)))

    def active(self) -> dict[Path, Lens]:
        """The lens of each file that has ever loaded without errors (its last valid version)."""
        return {path: self._active[path] for path in self.paths() if path in self._active}

    def result(self, path: Path | str) -> LensResult | None:
        return self._results.get(Path(path).resolve())

    def diagnostics(self, path: Path | str) -> list[Diagnostic]:
        """The diagnostics of the file's current text (the active version may be older when there are errors)."""
        result = self.result(path)
        return result.diagnostics if result else []

    def find(self, name_or_path: str | Path) -> Path | None:
        """The file of a lens given by name (workspace lenses win), or by path (loaded on demand)."""
        text = str(name_or_path)
        if isinstance(name_or_path, Path) or text.endswith(".lens") or os.sep in text or "/" in text:
            path = Path(text).expanduser()
            path = (path if path.is_absolute() else self.workspace / path).resolve()
            if path not in self._results and path.is_file():
                self._explicit.add(path)
                self.reload(path)
            return path if path in self._active else None
        return next((path for path, lens in self.active().items() if lens.name == text), None)

    def file_of(self, name_or_path: str) -> Path | None:
        """The lens file `name_or_path` names, a lens's name or a path (from the workspace); None when there is no
        such file, or when the text cannot name one (too long for a path)."""
        try:
            path = self.find(name_or_path) or (self.workspace / name_or_path).resolve()
            return path if path.is_file() else None
        except OSError:
            return None

    def get(self, name_or_path: str | Path) -> Lens | None:
        path = self.find(name_or_path)
        return self._active.get(path) if path is not None else None

    async def watch(self, stop_event: Any, on_change: OnChange | None = None, **awatch_options: Any) -> None:
        """Reload lens files as they change on disk until `stop_event` (an asyncio or anyio Event) is set.

        `awatch_options` go to `watchfiles.awatch` (for example `debounce`, `force_polling`)."""
        from watchfiles import Change, awatch  # imported here: the sidecar's cold start does not pay for it

        roots = [self.workspace] + ([self.user_dir] if self.user_dir is not None and self.user_dir.is_dir() else [])
        async for changes in awatch(*roots, stop_event=stop_event, watch_filter=self._wanted, **awatch_options):
            touched: dict[Path, LensResult | None] = {}
            for change, raw in changes:
                path = Path(raw).resolve()
                if path.suffix == ".lens" and self._eligible(path):
                    touched[path] = self.reload(path)
                elif (change == Change.added and path.is_dir()) or (
                        change == Change.deleted and any(p.is_relative_to(path) for p in self._results)):
                    # a directory appeared or vanished (a move is both): rescan rather than guess
                    before = set(self._results)
                    self.refresh()
                    touched.update({p: self._results.get(p) for p in before ^ set(self._results)})
            for path, result in touched.items():
                if on_change is not None and inspect.isawaitable(outcome := on_change(path, result)):
                    await outcome

    def _discover(self) -> set[Path]:
        found: set[Path] = set()
        for root, dirs, files in os.walk(self.workspace):
            dirs[:] = [d for d in dirs if d not in self.skip_dirs]
            found.update(Path(root, name).resolve() for name in files if name.endswith(".lens"))
        if self.user_dir is not None and self.user_dir.is_dir():
            found.update(p.resolve() for p in self.user_dir.glob("*.lens") if p.is_file())
        return {path for path in found if self._eligible(path)}

    def _eligible(self, path: Path) -> bool:
        if self.user_dir is not None and path.parent == self.user_dir:
            return True
        # a workspace symlink pointing outside the workspace is not the workspace's lens
        return self._in_workspace(path) and not self.skip_dirs.intersection(path.relative_to(self.workspace).parts)

    def _wanted(self, change: Any, raw: str) -> bool:
        path = Path(raw)
        inside = path.relative_to(self.workspace).parts if path.is_relative_to(self.workspace) else ()
        return not self.skip_dirs.intersection(inside)

    def _in_workspace(self, path: Path) -> bool:
        return path.is_relative_to(self.workspace)

    def _forget(self, path: Path) -> None:
        self._results.pop(path, None)
        self._active.pop(path, None)


def narrow(policy: ToolPolicy | None, user_trust: Trust, user_tools: Iterable[str] | None
           ) -> tuple[Trust, set[str] | None]:
    """The trust level and tool set a session gets with a lens: never more than the user granted.

    `None` tools means "every tool the trust level allows"; the lens' `allowed_tools` intersects with the user's.
    """
    if policy is None:
        return user_trust, None if user_tools is None else set(user_tools)
    trust = min(user_trust, Trust[policy.trust_level]) if policy.trust_level else user_trust
    lens_tools = None if policy.allowed_tools is None else set(policy.allowed_tools)
    if user_tools is None:
        return trust, lens_tools
    return trust, set(user_tools) if lens_tools is None else set(user_tools) & lens_tools
