"""Print the JSON Schema of Sunwell's wire models, for scripts/gen-protocol-types.mjs to turn into TypeScript.

The TypeScript side of the protocol is generated from these models so it is declared once (STYLE.md 3). To expose
another model, add one line to SOURCES: (module, name), or (module, "*") for every public model the module defines
(its `__all__` when it has one); a Literal alias (`TrustName`) becomes a union type and a constant with its values
(`Vocabulary.TrustName`). A module that does not exist yet is skipped with a note on stderr; any other import error
fails the run, so a broken model never silently drops out of the generated file.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

INPUT_BASES: list[tuple[str, str]] = [("sunwell.wire.protocol", "Params")]
"""Models the client sends (params, initializationOptions): a field with a default may be left out of them."""

SOURCES: list[tuple[str, str]] = [
    ("sunwell.vocabulary", "TrustName"),
    ("sunwell.vocabulary", "ApprovalMode"),
    ("sunwell.vocabulary", "Decision"),
    ("sunwell.vocabulary", "DecidedBy"),
    ("sunwell.vocabulary", "ErrorCode"),
    ("sunwell.vocabulary", "NoticeCode"),
    ("sunwell.vocabulary", "Risk"),
    ("sunwell.vocabulary", "TurnStatus"),
    ("sunwell.vocabulary", "NoticeLevel"),
    ("sunwell.wire.approval", "*"),
    ("sunwell.wire.events", "Event"),
    ("sunwell.wire.messages", "Message"),
    ("sunwell.wire.messages", "Usage"),
    ("sunwell.wire.messages", "ToolError"),
    ("sunwell.wire.results", "ResultData"),
    ("sunwell.wire.options", "*"),
    ("sunwell.wire.protocol", "*"),
    ("sunwell.wire.user_requests", "*"),
    ("sunwell.wire.events", "SessionEvent"),
    ("sunwell.wire.events", "UserMessageEvent"),
    ("sunwell.wire.usage", "SessionUsage"),
    ("sunwell.wire.processes", "*"),
    ("sunwell.wire.worktrees", "*"),
]


def _public_names(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
    ]


def collect() -> dict[str, Any]:
    """name -> the object to build a schema from (a model class or a type alias such as a discriminated union)."""
    found: dict[str, Any] = {}
    for module_name, name in SOURCES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                print(f"gen-protocol-types: {module_name} does not exist yet; skipped", file=sys.stderr)
                continue
            raise
        for each in _public_names(module) if name == "*" else [name]:
            found[each] = getattr(module, each)
    return found


def methods() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Method-name constants (`CHAT = "sunwell/chat"`) and `REQUESTS` (method -> params and result model names) of
    every SOURCES module that has them, so the TypeScript side names no method by hand either."""
    names: dict[str, str] = {}
    requests: dict[str, list[str]] = {}
    for module_name in dict.fromkeys(m for m, _ in SOURCES):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and value.startswith("sunwell/"):
                names[name] = value
        for method, pair in getattr(module, "REQUESTS", {}).items():
            requests[method] = [model.__name__ for model in pair]
    return dict(sorted(names.items())), dict(sorted(requests.items()))


def vocabulary(objects: dict[str, Any]) -> dict[str, list[str]]:
    """The values of every exported Literal alias (`TrustName`…), in order: the TypeScript side gets them as
    constants too, for pickers and for checking what a user typed."""
    return {name: list(get_args(obj)) for name, obj in sorted(objects.items()) if get_origin(obj) is Literal}


def _strip_titles(node: Any, keep: bool = False) -> Any:
    """Drop pydantic's per-field titles ("Callid"): json-schema-to-typescript would turn each into a named alias."""
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title" and not keep:
            continue
        if key in ("properties", "$defs", "patternProperties"):  # maps of names (a field may be called "title")
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


def _input_models(objects: dict[str, Any]) -> set[str]:
    bases = tuple(getattr(sys.modules[m], n) for m, n in INPUT_BASES if m in sys.modules and hasattr(sys.modules[m], n))
    return {obj.__name__ for obj in objects.values() if bases and isinstance(obj, type) and issubclass(obj, bases)}


def _require_serialized_defaults(defs: dict[str, Any], inputs: set[str]) -> None:
    """What Python sends carries every field (model_dump), so there a field with a default is still required for
    the reader; a field whose default is null may be left out (DoneEvent.error: "string or absent"), so it stays
    optional. What the client sends (`inputs`) keeps its defaults optional."""
    for name, schema in defs.items():
        props = schema.get("properties")
        if name in inputs:
            continue
        if not props:
            continue
        required = set(schema.get("required", []))
        required |= {k for k, v in props.items() if v.get("default", None) is not None}
        schema["required"] = [k for k in props if k in required]


def build() -> dict[str, Any]:
    objects = collect()
    models = [(obj, "serialization") for obj in objects.values() if isinstance(obj, type) and issubclass(obj, BaseModel)]
    _, schema = models_json_schema(models, by_alias=True, ref_template="#/$defs/{model}") if models else ({}, {})
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    roots: dict[str, Any] = {}
    for name, obj in objects.items():
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            roots[name] = {"$ref": f"#/$defs/{obj.__name__}"}
            continue
        alias = TypeAdapter(obj).json_schema(by_alias=True, mode="serialization", ref_template="#/$defs/{model}")
        defs.update(alias.pop("$defs", {}))
        defs[name] = {"title": name, **alias}
        roots[name] = {"$ref": f"#/$defs/{name}"}
    defs = {k: _strip_titles(v, keep=True) | {"title": k} for k, v in sorted(defs.items())}
    _require_serialized_defaults(defs, _input_models(objects))
    method_names, requests = methods()
    return {
        "title": "SunwellProtocol",
        "description": "Every exported wire type, generated from the Python models.",
        "type": "object",
        "properties": dict(sorted(roots.items())),
        "additionalProperties": False,
        "$defs": defs,
        "x-methods": method_names,
        "x-requests": requests,
        "x-vocabulary": vocabulary(objects),
    }


if __name__ == "__main__":
    json.dump(build(), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
