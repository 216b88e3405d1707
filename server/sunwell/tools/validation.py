"""Check a call's arguments against its tool's JSON Schema, fix what is unambiguous, and say precisely what is wrong.

`coerce_arguments` runs first and repairs only what has a single reading: `"5"` for an integer, `"2.5"` for a
number, `"true"`/`"false"` for a boolean, an array or object sent as JSON text, a single value where an array of
such values is expected, an enum value in the wrong case, and `null` for an optional parameter that cannot be null
(OpenAI's strict mode teaches models to write `null` for "not given"). A number is never turned into a string:
`{"path": 5}` is more likely a confused call than a file named 5.

`validate_arguments` reports every problem at once (a small model fixes one round's worth at a time), each naming
the parameter, the expected and the received type, the allowed values, or the missing parameter's description.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match, relevance

from sunwell.wire.messages import ToolError

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")
_MAX_PROBLEMS = 5


# --- coercion -----------------------------------------------------------------------------------------------

def coerce_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`arguments` with the unambiguous type slips fixed, and one human-readable note per fix.

    The input is not modified; when nothing needs fixing, equal values come back with no notes.
    """
    notes: list[str] = []
    value = _coerce_object(schema, arguments, "", notes)
    return value, notes


def _coerce(schema: dict[str, Any], value: Any, where: str, notes: list[str]) -> Any:
    if not isinstance(schema, dict) or _valid(schema, value):
        return _descend(schema, value, where, notes) if isinstance(schema, dict) else value
    if isinstance(value, str) and (fixed := _enum_case(schema, value)) is not None:
        notes.append(f"parameter '{where}': used the allowed value {json.dumps(fixed)} for {json.dumps(value)}")
        return fixed
    for kind in _types(schema):
        converted = _convert(kind, schema, value)
        if converted is _NO:
            continue
        converted = _descend(schema, converted, where, [])
        if _valid(schema, converted):
            notes.append(f"parameter '{where}': converted {_describe_value(value)} to {kind} "
                         f"{_short(converted)}")
            return converted
    return _descend(schema, value, where, notes)


_NO = object()


def _convert(kind: str, schema: dict[str, Any], value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if kind == "integer" and _INTEGER.fullmatch(value):
            return int(text)
        if kind == "number" and _NUMBER.fullmatch(value):
            if _INTEGER.fullmatch(value):
                return int(text)
            number = float(text)
            return number if math.isfinite(number) else _NO
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if kind in ("array", "object") and text[:1] in "[{":
            try:
                loaded = json.loads(text)
            except ValueError:
                return _NO
            return loaded if isinstance(loaded, list if kind == "array" else dict) else _NO
    if kind == "array" and not isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        item = value if _valid(items, value) else _coerce(items, value, "", [])
        return [item] if _valid(items, item) else _NO
    return _NO


def _descend(schema: dict[str, Any], value: Any, where: str, notes: list[str]) -> Any:
    """Coerce inside an object's properties or an array's items."""
    if isinstance(value, dict) and ("properties" in schema or "object" in _types(schema)):
        return _coerce_object(schema, value, where, notes)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(schema["items"], item, _join(where, str(i)), notes) for i, item in enumerate(value)]
    return value


def _coerce_object(schema: dict[str, Any], value: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = props.get(key)
        if not isinstance(sub, dict):
            out[key] = item
        elif item is None and key not in required and not _valid(sub, None):
            notes.append(f"parameter '{_join(where, key)}': dropped null (optional, treated as not given)")
        else:
            out[key] = _coerce(sub, item, _join(where, key), notes)
    return out


def _enum_case(schema: dict[str, Any], value: str) -> Any:
    options = [v for v in schema.get("enum") or [] if isinstance(v, str) and v.lower() == value.strip().lower()]
    return options[0] if len(options) == 1 else None


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    # integer before number: "5" for ["number"] reads as 5 either way, but for ["integer", "string"] it is 5
    return sorted(kinds, key=lambda k: ["integer", "number", "boolean", "array", "object"].index(k)
                  if k in ("integer", "number", "boolean", "array", "object") else 9)


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _describe_value(value: Any) -> str:
    return f"{_type_name(value)} {_short(value)}"


# --- unknown tools ------------------------------------------------------------------------------------------

def unknown_tool_error(name: str, arguments: dict[str, Any], tools: Sequence[Any]) -> ToolError:
    """`unknown_tool` for a call to `name`, pointing at the offered tool the model most likely meant."""
    names = [tool.name for tool in tools]
    guess = suggest_tool(name, arguments, tools)
    hint = ""
    if guess is not None:
        fits = "your arguments fit it" if _fits(guess, arguments) else "the closest name"
        hint = f"did you mean '{guess.name}' ({fits})? "
    return ToolError(code="unknown_tool", message=f"no tool named '{name}' is offered",
                     suggestion=f"{hint}available tools: {', '.join(names) or 'none'}")


def suggest_tool(name: str, arguments: dict[str, Any], tools: Sequence[Any]) -> Any:
    """The offered tool (anything with `name` and `parameters`) a call to an unknown `name` most likely meant.

    The tool whose schema takes the call's arguments wins (small models put a description or a file name where
    the tool name belongs, but keep the right arguments); among several, or when none fits, the closest name.
    """
    fitting = [tool for tool in tools if arguments and _fits(tool, arguments)]
    pool = fitting or list(tools)
    close = difflib.get_close_matches(name, [tool.name for tool in pool], n=1, cutoff=0.0 if fitting else 0.6)
    if close:
        return next(tool for tool in pool if tool.name == close[0])
    return fitting[0] if len(fitting) == 1 else None


def _fits(tool: Any, arguments: dict[str, Any]) -> bool:
    props = tool.parameters.get("properties") or {}
    if not set(arguments) <= set(props):
        return False
    coerced, _ = coerce_arguments(tool.parameters, arguments)
    return validate_arguments(tool.parameters, coerced) is None


# --- validation ---------------------------------------------------------------------------------------------

def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> ToolError | None:
    """None when `arguments` fit `schema`; else one `validation` error listing every problem found."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(arguments), key=relevance, reverse=True)
    if not errors:
        return None
    problems = list(dict.fromkeys(_describe(error, schema) for error in errors))
    message = "; ".join(problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        message += f"; and {len(problems) - _MAX_PROBLEMS} more"
    return ToolError(code="validation", message=message, suggestion=signature(schema))


def _describe(error: ValidationError, schema: dict[str, Any]) -> str:
    if error.validator in ("anyOf", "oneOf") and error.context:
        error = best_match(error.context)  # the closest alternative says the most
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        spec = (error.schema.get("properties") or {}).get(missing, {})
        details = ", ".join(filter(None, [_expected(spec), spec.get("description")]))
        return f"missing required parameter '{_join(where, missing)}'" + (f" ({details})" if details else "")
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties") or {})
        extra = sorted(set(error.instance) - set(allowed))
        hints = [f"did you mean '{m[0]}'?" for e in extra if (m := difflib.get_close_matches(e, allowed, 1))]
        noun = "parameter" if len(extra) == 1 else "parameters"
        names = ", ".join(f"'{_join(where, e)}'" for e in extra)
        return (f"unknown {noun} {names}; allowed: {', '.join(allowed) or 'none'}"
                + (f" ({' '.join(hints)})" if hints else ""))
    if error.validator == "type":
        return (f"parameter '{where or '(arguments)'}' must be {_expected(error.schema)}, "
                f"got {_describe_value(error.instance)}")
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"parameter '{where}' must be one of {allowed}; got {_short(error.instance)}"
    if error.validator == "const":
        return f"parameter '{where}' must be {json.dumps(error.validator_value)}; got {_short(error.instance)}"
    return f"parameter '{where or '(arguments)'}': {error.message}"


def _expected(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(json.dumps(v) for v in spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(spec.get("items"), dict) and "type" in spec["items"]:
        return f"array of {_expected(spec['items'])}"
    return kind or ""


def signature(schema: dict[str, Any]) -> str:
    """The arguments a schema takes, one line: what an invalid call's suggestion shows."""
    required = set(schema.get("required", []))
    parts = [
        f"{name}{'' if name in required else '?'}: {_expected(spec) or 'any'}"
        for name, spec in (schema.get("properties") or {}).items()
    ]
    return "expected arguments: {" + ", ".join(parts) + "} (? = optional)"


def _type_name(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
