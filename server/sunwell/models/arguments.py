"""Tool-call arguments as models write them: JSON text, often slightly broken, read into an object.

`parse_arguments` is the one reader for every path a call takes: native calls streamed by a provider (read in the
loop), calls found in a model's text (`normalize.py`, for emulation and recovery); a Python-style call has no JSON
to read (`pythonic.py`). `load_json` is the reader underneath, for any JSON value a model wrote. `typed_value` reads
one argument written as bare text (Qwen3-Coder's `<parameter=p>`, GLM's `<arg_value>`, MiniMax's `<parameter
name=p>`) as the type the tool's schema gives it.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import json_repair

from sunwell.models.encodable import encodable


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
    repair finds no non-empty object or array in it.

    A repair never invents a value: `{"path": "a", "content":` reads as `{"path": "a"}`, not with an empty
    content, so a call cut short is answered "content is required" instead of writing an empty file. An escaped
    lone surrogate (`"\\ud800"`) is read as U+FFFD (`encodable`): no writer takes it.
    """
    try:
        return encodable(json.loads(text)), None
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        pass
    try:
        value, log = json_repair.loads(text, logging=True)
    except Exception:  # noqa: BLE001 - the repair library failing on garbage (say, deep nesting) means "not JSON"
        return None
    invented = _drop_invented(value, text)
    if not isinstance(value, dict | list) or not value:
        return None
    details = list(dict.fromkeys(entry.get("text", "") for entry in log if isinstance(entry, dict)))
    details += [f"dropped {key!r}: the text gives it no value" for key in invented]
    return encodable(value), "repaired malformed JSON" + (f" ({'; '.join(details[:3])})" if details else "")


def _drop_invented(value: Any, text: str) -> list[str]:
    """Removes (in place) the empty strings `json_repair` put where the text has a key but no value."""
    dropped: list[str] = []
    if isinstance(value, list):
        for item in value:
            dropped += _drop_invented(item, text)
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            written = rf"""["']?{re.escape(key)}["']?\s*:\s*(?:""|'')"""
            if item == "" and not re.search(written, text):
                del value[key]
                dropped.append(key)
            else:
                dropped += _drop_invented(item, text)
    return dropped


_STRING_TYPES = {"string", "str", "text", "enum"}


def typed_value(text: str, schema: dict[str, Any] | None) -> Any:
    """One argument written as bare text, as the type `schema` gives it (a string when it has none).

    A one-line value is trimmed; a block (file content) only loses the newline the template puts after the
    opening tag and before the closing one. Numbers, booleans and null are read when the schema asks for them;
    objects and arrays as JSON or as Python literals (`ast.literal_eval`: nothing is evaluated). Text that is
    not of the type stays text, for the schema check to report.
    """
    value = _trimmed(text)
    kind, nullable = _schema_type(schema)
    if nullable and value.strip().lower() in ("null", "none"):
        return None
    if kind is None:  # no schema: JSON containers are read, the rest is text (the XML emulation format)
        return _container(value) if value[:1] in "{[" else value
    if kind in _STRING_TYPES:
        return value
    word = value.strip()
    if word.lower() in ("null", "none"):
        return None
    if kind in ("integer", "int"):
        return int(word) if re.fullmatch(r"[-+]?\d+", word) else value
    if kind in ("number", "float"):
        try:
            number = float(word)
        except ValueError:
            return value
        return int(number) if number.is_integer() and re.fullmatch(r"[-+]?\d+(?:\.0*)?", word) else number
    if kind in ("boolean", "bool"):
        return {"true": True, "false": False}.get(word.lower(), value)
    read = _container(word)
    return read if read is not word else value


def _trimmed(text: str) -> str:
    if "\n" not in text.strip():  # one line, however indented the template wrote it
        return text.strip()
    return re.sub(r"\n[ \t]*\Z", "", text.removeprefix("\n"))


def _schema_type(schema: dict[str, Any] | None) -> tuple[str | None, bool]:
    """The first non-null type `schema` names, and whether it admits null."""
    if not isinstance(schema, dict):
        return None, False
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    kinds: list[str] = []
    for option in options:
        kind = option.get("type") if isinstance(option, dict) else None
        kinds += kind if isinstance(kind, list) else [kind] if kind else []
        if isinstance(option, dict) and "enum" in option and not kind:
            kinds.append("enum")
    first = next((str(k).lower() for k in kinds if k != "null"), None)
    return first, "null" in kinds


def _container(text: str) -> Any:
    """`text` read as a JSON or Python-literal object or array, else `text` itself (the same object)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return text
        try:
            value = json.loads(json.dumps(value))  # a tuple is an array; a set is no JSON value
        except (TypeError, ValueError):
            return text
    return value if isinstance(value, dict | list) else text
