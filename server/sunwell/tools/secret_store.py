"""Secrets Sunwell keeps for the user on this machine: a learned API's credentials (tools/learned/credentials.py), an
MCP server's OAuth tokens (tools/mcp/token_vault.py). Never in a config file, never in a log.

The OS keyring first (service `sunwell`, user `PREFIX:GROUP:NAME`); when no keyring is usable (a headless Linux
without a Secret Service, a broken install), a JSON file `{GROUP: {NAME: value}}` only the user may read (0600, in a
0700 folder). Every value read or written is remembered by the redactor (tools/policy/environment.py
`remember_secret`), so it is masked wherever it would appear: results, errors, events, the session log, the audit.

keyring is imported when a secret is first looked up: finding its backends costs start-up time every session would
pay.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from sunwell.tools.policy.environment import remember_secret

log = logging.getLogger(__name__)
SERVICE = "sunwell"


def usable_keyring():
    """The keyring module when a real backend is there, else None."""
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
            return None
        return keyring
    except Exception:  # noqa: BLE001 - a broken keyring install is no keyring
        return None


class SecretStore:
    def __init__(self, file: Path, prefix: str) -> None:
        self.file, self.prefix = file, prefix

    def where(self) -> str:
        """Where `set` keeps a value, as the user is told."""
        return "the OS keyring" if usable_keyring() is not None else str(self.file)

    def get(self, group: str, name: str) -> str | None:
        value = None
        if (ring := usable_keyring()) is not None:
            try:
                value = ring.get_password(SERVICE, self._user(group, name))
            except Exception as exc:  # noqa: BLE001
                log.info("keyring lookup failed: %s", exc)
        if not value:
            value = self._read().get(group, {}).get(name)
        if value:
            remember_secret(value)
        return value or None

    def set(self, group: str, name: str, value: str) -> None:
        remember_secret(value)
        if (ring := usable_keyring()) is not None:
            try:
                ring.set_password(SERVICE, self._user(group, name), value)
                return
            except Exception as exc:  # noqa: BLE001 - fall back to the file
                log.info("keyring store failed: %s; using %s", exc, self.file)
        stored = self._read()
        stored.setdefault(group, {})[name] = value
        self._write(stored)

    def forget(self, group: str, names: list[str]) -> bool:
        """Drop what `group` holds under `names`; whether anything was there."""
        found = False
        if (ring := usable_keyring()) is not None:
            for name in names:
                try:
                    ring.delete_password(SERVICE, self._user(group, name))
                    found = True
                except Exception:  # noqa: BLE001, S110 - nothing stored there
                    pass
        stored = self._read()
        if stored.pop(group, None) is not None:
            self._write(stored)
            found = True
        return found

    def _user(self, group: str, name: str) -> str:
        return f"{self.prefix}:{group}:{name}"

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, dict[str, str]]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = self.file.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(temp, 0o600)
        os.replace(temp, self.file)
