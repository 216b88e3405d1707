"""A learned API's credentials: asked of the user once, kept out of the model's reach.

Looked up, in order: what VS Code passes from its secret storage (`SUNWELL_LEARNED_CREDENTIALS` in the sidecar's
environment: `{"API": {"SCHEME": "value"}}`), the OS keyring (service `sunwell`, user `learned:API:SCHEME`), then
`<data>/credentials.json`, a file only the user may read (0600, in a 0700 folder), when no keyring is usable.
Every value found is remembered by the redactor (tools/policy/environment.py `remember_secret`), so it is masked
wherever it would appear: results, errors, events, the session log, the audit.

A value is what the scheme sends: an API key or a bearer token as it is, `user:password` for basic, and
`client_id:client_secret` for OAuth2 client credentials. keyring is imported when a credential is first looked up:
finding its backends costs start-up time every session would pay.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from sunwell.tools.policy.environment import remember_secret

log = logging.getLogger(__name__)
SERVICE = "sunwell"
FROM_EDITOR = "SUNWELL_LEARNED_CREDENTIALS"


def _keyring():
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
            return None
        return keyring
    except Exception:  # noqa: BLE001 - a broken keyring install is no keyring
        return None


class Credentials:
    def __init__(self, data_dir: Path, environ: Mapping[str, str] = os.environ) -> None:
        self.file = data_dir / "credentials.json"
        try:
            given = json.loads(environ.get(FROM_EDITOR) or "{}")
        except ValueError:
            given = {}
        self.editor: dict[str, dict[str, str]] = given if isinstance(given, dict) else {}
        for schemes in self.editor.values():  # masked from the start, before any call reads them
            for value in (schemes.values() if isinstance(schemes, dict) else ()):
                if isinstance(value, str):
                    remember_secret(value)

    def get(self, api: str, scheme: str) -> str | None:
        value = (self.editor.get(api) or {}).get(scheme)
        if not value and (ring := _keyring()) is not None:
            try:
                value = ring.get_password(SERVICE, _user(api, scheme))
            except Exception as exc:  # noqa: BLE001
                log.info("keyring lookup failed: %s", exc)
        if not value:
            value = self._read().get(api, {}).get(scheme)
        if value:
            remember_secret(value)
        return value or None

    def where(self) -> str:
        """Where `set` keeps a value: what `sunwell tools learn` tells the user."""
        return "the OS keyring" if _keyring() is not None else str(self.file)

    def set(self, api: str, scheme: str, value: str) -> None:
        remember_secret(value)
        if (ring := _keyring()) is not None:
            try:
                ring.set_password(SERVICE, _user(api, scheme), value)
                return
            except Exception as exc:  # noqa: BLE001 - fall back to the file
                log.info("keyring store failed: %s; using %s", exc, self.file)
        stored = self._read()
        stored.setdefault(api, {})[scheme] = value
        self._write(stored)

    def forget(self, api: str, schemes: list[str]) -> None:
        if (ring := _keyring()) is not None:
            for scheme in schemes:
                try:
                    ring.delete_password(SERVICE, _user(api, scheme))
                except Exception:  # noqa: BLE001, S110 - nothing stored there
                    pass
        stored = self._read()
        if stored.pop(api, None) is not None:
            self._write(stored)

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, dict[str, str]]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.file.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(self.file.with_suffix(".tmp"), 0o600)
        os.replace(self.file.with_suffix(".tmp"), self.file)


def _user(api: str, scheme: str) -> str:
    return f"learned:{api}:{scheme}"
