"""`sunwell lens check FILE...`: the editor's diagnostics as terminal lines, `path:line:col: severity: message`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sunwell.lens.loader import Diagnostic, load_lens


def format_diagnostic(path: str, diagnostic: Diagnostic) -> str:
    """One line; line and column are 1-based here, as terminals and editors' "go to" expect."""
    message = " ".join(diagnostic.message.split())
    return f"{path}:{diagnostic.line + 1}:{diagnostic.col + 1}: {diagnostic.severity}: {message}"


def check_files(paths: Iterable[str | Path], known_tools: Iterable[str] = ()) -> tuple[list[str], bool]:
    """The diagnostic lines of every file, in order, and whether any is an error (the CLI then exits 1)."""
    lines: list[str] = []
    had_error = False
    known = tuple(known_tools)
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            lines.append(f"{path}:1:1: error: cannot read: {reason}")
            had_error = True
            continue
        for diagnostic in load_lens(text, str(path), known).diagnostics:
            lines.append(format_diagnostic(str(path), diagnostic))
            had_error |= diagnostic.severity == "error"
    return lines, had_error
