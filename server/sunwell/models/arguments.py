"""Tool-call arguments as models write them: JSON text, often slightly broken, read into an object.

`parse_arguments` is the one reader for every path a call takes: native calls streamed by a provider (read in the
loop), calls found in a model's text (`normalize.py`, for emulation and recovery); a Python-style call has no JSON
to read (`pythonic.py`). `load_json` is the reader underneath, for any JSON value a model wrote.
"""

from __future__ import annotations

import json
from typing import Any

import json_repair


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The arguments object in `raw` and what had to be repaired to read it.

    Empty text is `{}`. None when `raw` holds no JSON object even after repair (then the call keeps `raw` as the
    model wrote it, and is answered with a validation error).
    """
    text = raw.strip()
    if not text:
        return {}, []
    loaded = load_json(text)
    if loaded is None or not isinstance(loaded[0], dict):
        return None, []
    value, repair = loaded
    return value, [repair] if repair else []


def load_json(text: str) -> tuple[Any, str | None] | None:
    """The JSON value in `text` and, if it had to be repaired (by `json_repair`), what was done; None when even a
    repair finds no non-empty object or array in it."""
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        pass
    try:
        value, log = json_repair.loads(text, logging=True)
    except Exception:  # noqa: BLE001 - the repair library failing on garbage (say, deep nesting) means "not JSON"
        return None
    if not isinstance(value, dict | list) or not value:
        return None
    details = list(dict.fromkeys(entry.get("text", "") for entry in log if isinstance(entry, dict)))
    return value, "repaired malformed JSON" + (f" ({'; '.join(details[:3])})" if details else "")
