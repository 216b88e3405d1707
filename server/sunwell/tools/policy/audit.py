"""The audit log: one JSON line per tool call in `<data>/audit/tools-YYYY-MM-DD.jsonl` (docs/config.md
"Files and places"; the UTC day of the call), read back by `sunwell audit [--since]`.

A line holds `time` (ISO 8601, UTC), `session`, `turn`, `tool`, `call_id`, `arguments`, `decision` (`allow`, `deny`,
`allowSession`, `auto` when no approval was needed, null when none was reached), `by` (`user`, `policy`, null),
`ok`, `error` (the error code or null) and `duration_ms`. File contents never enter the log: the arguments a tool's
arguments model marks as file text (`CONTENT`, tools/subject.py: write_file's content, edit_file's old and new text),
given as `content`, become `{"bytes": n, "sha256": ...}`; this module names no tool's arguments. Every string of
the line goes through `redact` first. The directory is 0700 and the files 0600; a line is one `write` on an
O_APPEND descriptor, so several processes can share a day file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sunwell.clipping import CappedLogRecords, cut
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.workspace import open_flags

log = logging.getLogger(__name__)
REDACTED = "[REDACTED]"
MAX_STRING = 65_536
"""Characters of one string a redacted value keeps (an audit line's argument, a URL checked for a secret)."""
FILE_NAME = re.compile(r"tools-(\d{4}-\d{2}-\d{2})\.jsonl")

_TOKEN_SHAPES: list[tuple[re.Pattern[str], str]] = [  # a shape added here needs its literal in _ANY_SHAPE
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL), REDACTED),
    (re.compile(r"""(?i)(authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?)[^\s"',;]+"""),
     rf"\1{REDACTED}"),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(?:sk-|sk_live_|rk_live_|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|hf_)[A-Za-z0-9_-]{8,}"),
     REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    # password=..., token: "...", --api-key=..., ?access_token=... (query strings and assignments)
    (re.compile(r"""(?i)((?<![A-Za-z0-9])(?:password|passwd|passphrase|pwd|token|secret|api[_-]?key"""
                r"""|access[_-]?key|client[_-]?secret)["']?\s*[:=]\s*["']?)[^\s"'&;,]+"""), rf"\1{REDACTED}"),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@"), rf"\1{REDACTED}@"),  # user:password@host
]  # fmt: skip
# A literal every shape above needs (case folded): a string without one is left alone after one search, not seven.
_ANY_SHAPE = re.compile(r"-----BEGIN|authorization|bearer|sk-|sk_live_|rk_live_|gh[pousr]_|github_pat_|glpat-|xox"
                        r"|hf_|AKIA|ASIA|pass|pwd|token|secret|api[_-]?key|access[_-]?key|://", re.IGNORECASE)


class Redactor:
    """Masks credentials in strings, and in the strings inside dicts, lists and tuples.

    `environ` is read once, here: the values of every variable a command may not see (tools/policy/environment.py) are
    removed wherever they appear; token-shaped strings are masked whatever their source. A string longer than
    `limit` keeps its first `limit` characters and its size (sunwell.clipping), so the work is bounded whatever the
    input: it is masked in twice that much first, so that a secret the cut falls in goes whole."""

    def __init__(self, environ: Mapping[str, str] | None = None, passthrough: Iterable[str] = (),
                 limit: int = MAX_STRING) -> None:
        self.env = EnvSecrets(os.environ if environ is None else environ, passthrough, REDACTED)
        self.limit = limit

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value, self.limit)
        if isinstance(value, Mapping):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value

    def text(self, value: str, limit: int) -> str:
        masked = self.env.mask(value[:2 * limit])
        if _ANY_SHAPE.search(masked):
            for pattern, replacement in _TOKEN_SHAPES:
                masked = pattern.sub(replacement, masked)
        return masked if len(value) <= limit else cut(masked[:limit], value)


class MaskedLogRecords(CappedLogRecords):
    """A log handler's filter that masks credentials in every record it writes, a library's too: an HTTP client logs
    each request's URL, which carries a learned API's query key (tools/learned/calls.py adds it to the request).
    Capped as `CappedLogRecords` caps, the masking within the cap."""

    def __init__(self) -> None:
        super().__init__()
        self.redact = Redactor()

    def shorten(self, text: str, limit: int) -> str:
        return self.redact.text(text, limit)


def redact(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`value` with credentials masked (see Redactor); `environ` defaults to os.environ as it is now."""
    return Redactor(environ)(value)


def digest_arguments(arguments: Mapping[str, Any], content: Collection[str]) -> dict[str, Any]:
    """The arguments with those named in `content` (file text) replaced by their size and sha256."""
    return {k: _digest(v) if k in content else v for k, v in arguments.items()}


def _digest(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    data = text.encode("utf-8", "surrogatepass")
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _utc_now() -> datetime:
    return datetime.now(UTC)


class AuditLog:
    def __init__(self, data_dir: Path, clock: Callable[[], datetime] = _utc_now,
                 environ: Mapping[str, str] | None = None, fsync: bool = False,
                 passthrough: Iterable[str] = ()) -> None:  # fmt: skip
        self.dir = Path(data_dir) / "audit"
        self.clock = clock
        self.redact = Redactor(environ, passthrough)
        self.fsync = fsync

    def path_for(self, day: date) -> Path:
        return self.dir / f"tools-{day.isoformat()}.jsonl"

    def record(self, *, session: str, turn: str, tool: str, call_id: str, arguments: Mapping[str, Any] | None,
               decision: str | None, by: str | None, ok: bool, error: str | None,
               duration_ms: float, content: Collection[str] = ()) -> dict[str, Any]:  # fmt: skip
        """Append one call's line and return it (as written); `content` names the arguments that carry file text
        (`Tool.content`). A failing write is logged, never raised: the call it describes has already happened."""
        now = _as_utc(self.clock())
        entry = self.redact({
            "time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "session": session,
            "turn": turn, "tool": tool, "call_id": call_id, "arguments": digest_arguments(arguments or {}, content),
            "decision": decision, "by": by, "ok": ok, "error": error, "duration_ms": round(duration_ms),
        })  # fmt: skip
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._append(self.path_for(now.date()), line.encode("utf-8", "surrogatepass"))
        except OSError as exc:
            log.warning("could not write the audit log in %s: %s", self.dir, exc)
        return entry

    def recent(self, since: datetime | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The last `limit` entries at or after `since` (all days when None), oldest first."""
        since = _as_utc(since) if since is not None else None
        days = sorted((m.group(1), p) for p in self._files() if (m := FILE_NAME.fullmatch(p.name)))
        picked: list[dict[str, Any]] = []
        for day, path in reversed(days):  # newest day first, stopping as soon as there are enough
            if since is not None and day < since.date().isoformat():
                break
            entries = [(t, e) for t, e in _read(path) if since is None or t >= since]
            picked = [e for _, e in sorted(entries, key=lambda te: te[0])] + picked
            if len(picked) >= limit:
                break
        return picked[-limit:] if limit > 0 else []

    def _files(self) -> list[Path]:
        return list(self.dir.glob("tools-*.jsonl")) if self.dir.is_dir() else []

    def _append(self, path: Path, data: bytes) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)  # mkdir's mode passes through the umask, and the directory may be older
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | open_flags.NOFOLLOW | open_flags.CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)


def _read(path: Path) -> Iterator[tuple[datetime, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        log.warning("could not read %s: %s", path, exc)
        return
    for line in lines:
        try:
            entry = json.loads(line)
            yield _as_utc(datetime.fromisoformat(entry["time"])), entry
        except (ValueError, KeyError, TypeError):
            continue  # a torn or foreign line does not hide the others


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`30s`, `15m`, `1h`, `2d`, `1w` (ago), a UTC day `2026-11-22`, or an ISO 8601 time (UTC unless it says)."""
    text = text.strip()
    if m := re.fullmatch(r"(\d+)\s*(s|m|min|h|d|w)", text, re.IGNORECASE):
        unit = {"s": "seconds", "m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
        return _as_utc(now or _utc_now()) - timedelta(**{unit[m.group(2).lower()]: int(m.group(1))})
    try:
        return _as_utc(datetime.fromisoformat(text))
    except ValueError:
        raise ValueError(f"--since {text!r}: give a duration like 30m, 1h or 2d, or a date like 2026-11-22") from None


def format_entry(entry: Mapping[str, Any]) -> str:
    """One readable line: `2026-11-22 05:12:03  run_command(command="pytest -q")  allow by user  ✔ 1.2 s`."""
    try:
        when = _as_utc(datetime.fromisoformat(entry["time"])).strftime("%Y-%m-%d %H:%M:%S")
    except (KeyError, TypeError, ValueError):
        when = str(entry.get("time", "?"))
    arguments = entry.get("arguments") or {}
    shown = ", ".join(f"{k}={_show(v)}" for k, v in arguments.items()) if isinstance(arguments, Mapping) else "…"
    decision, by = entry.get("decision"), entry.get("by")
    decided = "—" if not decision else f"{decision} by {by}" if by and decision != "auto" else str(decision)
    result = "✔" if entry.get("ok") else f"✘ {entry.get('error') or 'error'}"
    ms = entry.get("duration_ms") or 0
    duration = f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms} ms"
    return f"{when}  {entry.get('tool', '?')}({shown})  {decided}  {result} {duration}"


def _show(value: Any, limit: int = 60) -> str:
    if isinstance(value, Mapping) and set(value) == {"bytes", "sha256"}:
        return f"<{value['bytes']} bytes, sha256 {str(value['sha256'])[:12]}>"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 2] + "…" + text[-1]
