"""A learned API's credentials: asked of the user once, kept out of the model's reach.

Looked up, in order: what VS Code passes from its secret storage (`SUNWELL_LEARNED_CREDENTIALS` in the sidecar's
environment: `{"API": {"SCHEME": "value"}}`), then the secret store (tools/secret_store.py): the OS keyring
(service `sunwell`, user `learned:API:SCHEME`), else `<data>/credentials.json`, a file only the user may read.
Every value found is remembered by the redactor, so it is masked wherever it would appear.

A value is what the scheme sends: an API key or a bearer token as it is, `user:password` for basic, and
`client_id:client_secret` for OAuth2 client credentials.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from sunwell.tools.policy.environment import remember_secret
from sunwell.tools.secret_store import SecretStore

FROM_EDITOR = "SUNWELL_LEARNED_CREDENTIALS"


class Credentials:
    def __init__(self, data_dir: Path, environ: Mapping[str, str] = os.environ) -> None:
        self.store = SecretStore(data_dir / "credentials.json", "learned")
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
        return value if value else self.store.get(api, scheme)

    def where(self) -> str:
        """Where `set` keeps a value: what `sunwell tools learn` tells the user."""
        return self.store.where()

    def set(self, api: str, scheme: str, value: str) -> None:
        self.store.set(api, scheme, value)

    def forget(self, api: str, schemes: list[str]) -> None:
        self.store.forget(api, schemes)
