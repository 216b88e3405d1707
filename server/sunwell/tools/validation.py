"""Check a call's arguments against its tool's JSON Schema and say precisely what is wrong."""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from sunwell.messages import ToolError

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> ToolError | None:
    validator = jsonschema.Draft202012Validator(schema)
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    return ToolError(code="validation", message=_describe(error, schema), suggestion=_signature(schema))


def _describe(error: ValidationError, schema: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    props = schema.get("properties", {})
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        description = props.get(missing, {}).get("description")
        return f"missing required parameter '{missing}'" + (f" ({description})" if description else "")
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"unknown parameter {', '.join(repr(e) for e in extra)}"
    if error.validator == "type":
        got = _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
        if error.instance is None:
            got = "null"
        return f"parameter '{where}' must be {error.validator_value}, got {got} {_short(error.instance)}"
    if error.validator == "enum":
        allowed = ", ".join(repr(v) for v in error.validator_value)
        return f"parameter '{where}' must be one of {allowed}, got {_short(error.instance)}"
    return f"parameter '{where or '(arguments)'}': {error.message}"


def _signature(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = [
        f"{name}: {spec.get('type', 'any')}{'' if name in required else ' (optional)'}"
        for name, spec in schema.get("properties", {}).items()
    ]
    return "expected arguments: {" + ", ".join(parts) + "}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
