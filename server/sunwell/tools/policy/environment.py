"""The environment a command gets, and which values of Sunwell's own environment count as secrets.

Commands get an allowlisted environment, not a scrubbed copy of Sunwell's: a heuristic over names let CI_JOB_JWT,
SLACK_WEBHOOK_URL, SSH_PRIVATE and SESSION_SIGNING through. The same allowlist decides what is redacted: every
value of Sunwell's environment that is not on it (and is long enough to be a secret) is masked in tool results,
events and the audit log, whatever its variable is called.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

COMMAND_ENV = frozenset({"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "USER", "SHELL", "TMPDIR", "TZ"})
MIN_SECRET_LENGTH = 8  # shorter values ("1", "true", "root") would redact half of every transcript

# Values that are not credentials even though their variable is not on the allowlist: absolute paths and path
# lists (PWD, VIRTUAL_ENV, SSH_AUTH_SOCK) and plain words (COLORTERM=truecolor, DEBIAN_FRONTEND=noninteractive).
# Redacting those would blank every path and common word in a transcript.
_NOT_A_SECRET = re.compile(r"(/[\w.+@-]*)+(:(/[\w.+@-]*)+)*/?|[a-z]+([-_][a-z]+)*")
# Endpoints are not secrets (an error that says which server failed must name it), unless they carry a password.
_ENDPOINT_NAME = re.compile(r"_(BASE_URL|HOST|API_BASE|ENDPOINT)$")
_PLAIN_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^@\s]*|[\w.-]+(:\d+)?", re.IGNORECASE)
# Names that say "secret" are redacted even when the user passes them through to commands.
_SECRET_NAME = re.compile(
    r"API_?KEY|TOKEN(?!IZER)|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|AUTH(?!OR)|ACCESS_?KEY"
    r"|PRIVATE|(^|_)KEY$|_(PAT|PASS|DSN|JWT)$",
    re.IGNORECASE,
)


def passes(name: str, passthrough: Iterable[str] = ()) -> bool:
    """Whether a command may see the variable `name`: the base allowlist, LC_*, or the user's `env_passthrough`."""
    return name in COMMAND_ENV or name.startswith("LC_") or name in set(passthrough)


def command_env(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The environment a command runs with: only the allowlisted variables of `environ`."""
    allowed = set(passthrough)
    return {name: value for name, value in environ.items() if passes(name, allowed)}


def secret_values(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> list[str]:
    """Values to redact, longest first (a longer secret may contain a shorter one)."""
    allowed = set(passthrough)
    found = {
        value for name, value in environ.items()
        if len(value) >= MIN_SECRET_LENGTH
        and (_SECRET_NAME.search(name) or not (passes(name, allowed) or _NOT_A_SECRET.fullmatch(value)
                                               or (_ENDPOINT_NAME.search(name) and _PLAIN_URL.fullmatch(value))))
    }  # fmt: skip
    return sorted(found, key=len, reverse=True)


_REMEMBERED: dict[str, None] = {}
_remembered_pattern: list[re.Pattern[str] | None] = [None]


def remember_secret(value: str) -> None:
    """Mask `value` from now on, like an environment secret: a learned API's credential (tools/learned/)."""
    if len(value) >= MIN_SECRET_LENGTH and value not in _REMEMBERED:
        _REMEMBERED[value] = None
        _remembered_pattern[0] = re.compile("|".join(map(re.escape, sorted(_REMEMBERED, key=len, reverse=True))))


@lru_cache(maxsize=8)  # made for each turn and each audit log, from an environment that rarely changes
def _secrets_pattern(environ: frozenset[tuple[str, str]], passthrough: frozenset[str]) -> re.Pattern[str] | None:
    values = secret_values(dict(environ), passthrough)
    return re.compile("|".join(map(re.escape, values))) if values else None


class EnvSecrets:
    """Masks the values `secret_values` finds, in a string or in the strings of a JSON-like value."""

    def __init__(self, environ: Mapping[str, str], passthrough: Iterable[str] = (),
                 replacement: str = "[REDACTED]") -> None:  # fmt: skip
        self._pattern = _secrets_pattern(frozenset(environ.items()), frozenset(passthrough))
        self._replacement = replacement

    def mask(self, value: Any) -> Any:
        if self._pattern is None and _remembered_pattern[0] is None:
            return value
        if isinstance(value, str):
            for pattern in (self._pattern, _remembered_pattern[0]):
                if pattern is None:
                    continue
                if "%" in value and pattern.search(decoded := unquote(unquote(value))):
                    value = decoded  # percent-encoded, as a URL carries it (`tok%2D5f3a`): masked decoded
                value = pattern.sub(self._replacement, value) if pattern.search(value) else value
            return value
        if isinstance(value, Mapping):
            return {self.mask(k): self.mask(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask(v) for v in value]
        return value
