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
import math
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
_PRECEDENCE = ("boolean", "bool", "integer", "int", "number", "float", "object", "array", "dict", "list")
"""A union is read as its most specific type the text is (Ollama's and vLLM's Qwen3-Coder readers agree): `42.5`
under string|number is a number, `hello` the string."""


def written_value(text: str, schema: dict[str, Any] | None) -> Any:
    """A value between its own tags, for a dialect that writes a string parameter as it is (Step3's, Glimmer's): a
    string parameter keeps every character of it (whitespace is data: an edit's old text), any other is typed."""
    if schema is not None and schema.get("type") == "string":
        return text
    return typed_value(text, schema)


def typed_value(text: str, schema: dict[str, Any] | None) -> Any:
    """One argument written as bare text, as the type `schema` gives it (a string when it has none).

    Only the line breaks the template writes around a value are taken off (`_trimmed`); a value on one line of its
    own, however indented, is trimmed whole. `null` is null whatever the type (a model writes it for "no value").
    Numbers, booleans, objects and arrays are read when the schema asks for them (objects and arrays as JSON or as
    Python literals, `ast.literal_eval`: nothing is evaluated); of a union, the most specific type the text is.
    Text that is not of the type stays text, for the schema check to report.
    """
    value = _trimmed(text)
    kinds = _schema_types(schema)
    if value.strip().lower() == "null" or (("null" in kinds) and value.strip().lower() == "none"):
        return None
    kinds = [k for k in kinds if k != "null"]
    if not kinds:  # no schema: JSON containers are read, the rest is text (the XML emulation format)
        return _container(value) if value.lstrip()[:1] in ("{", "[") else value
    for kind in sorted(kinds, key=lambda k: _PRECEDENCE.index(k) if k in _PRECEDENCE else len(_PRECEDENCE)):
        if kind in _STRING_TYPES:
            return value
        read = _as_type(kind, value.strip())
        if read is not _NOT:
            return read
    return value


_NOT = object()


def _as_type(kind: str, word: str) -> Any:
    if re.fullmatch(r"u?int\d+", kind):  # a schema's sized type names (`uint32`, `int64`: vLLM's HY V4 test)
        kind = "integer"
    elif re.fullmatch(r"(?:float|double)\d*", kind):
        kind = "number"
    if kind in ("integer", "int"):
        return int(word) if re.fullmatch(r"[-+]?\d+", word) else _NOT
    if kind in ("number", "float"):
        try:
            number = float(word)
        except ValueError:
            return _NOT
        if not math.isfinite(number):
            return _NOT  # `inf`, `1e999`, `nan`: no JSON number (sglang's and vLLM's tests), so the text stays
        return int(number) if number.is_integer() and re.fullmatch(r"[-+]?\d+(?:\.0*)?", word) else number
    if kind in ("boolean", "bool"):
        return {"true": True, "false": False}.get(word.lower(), _NOT)
    read = _container(word)
    if read is word:
        return _NOT
    wanted = {"object": dict, "dict": dict, "array": list, "list": list}.get(kind)
    return read if wanted is None or isinstance(read, wanted) else _NOT


def _trimmed(text: str) -> str:
    """The value without the line break the template puts after the opening tag and before the closing one (a
    block keeps the rest of its whitespace). A value alone on its line is trimmed whole when the closing tag is
    indented too (the XML was laid out, sglang's test); between the template's bare line breaks a line of code keeps
    its indent (llama.cpp's Qwen3.5 test). A block written right after the opening tag keeps its last line break."""
    if "\n" not in text:
        return text.strip() if text.strip() else text
    if not text.startswith("\n"):  # no line break after the tag: a block's last one is its own, a line's the model's
        return text if "\n" in text.removesuffix("\n") else text.removesuffix("\n")
    laid_out = re.search(r"\n[ \t]+\Z", text) is not None
    body = re.sub(r"\n[ \t]*\Z", "", text[1:])
    if "\n" not in body:
        return body.strip() if laid_out or not body.strip() else body.rstrip()
    return body


def _schema_types(schema: dict[str, Any] | None) -> list[str]:
    """Every type `schema` names, in order (`enum` for an untyped enumeration)."""
    if not isinstance(schema, dict):
        return []
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    kinds: list[str] = []
    for option in options:
        kind = option.get("type") if isinstance(option, dict) else None
        kinds += kind if isinstance(kind, list) else [kind] if kind else []
        if isinstance(option, dict) and "enum" in option and not kind:
            kinds.append("enum")
    return [str(k).lower() for k in kinds]


def _container(text: str) -> Any:
    """`text` read as a JSON or Python-literal object or array, else `text` itself (the same object)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return text
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        inner = _container(value)  # written as a JSON string of itself (a template's `json.dumps(str(dict))`)
        return text if inner is value else inner
    try:
        # a tuple is an array; a set, an infinity or NaN is no JSON value
        value = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return text
    return value if isinstance(value, dict | list) else text
