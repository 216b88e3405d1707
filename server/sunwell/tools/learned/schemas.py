"""An operation's parameters as the one JSON schema a tool takes: its path, query and header parameters (auth
headers and cookies excepted: credentials are Sunwell's to send, never the model's), and a JSON body as `body`.

Schemas are walked through SchemaPath, which resolves each `$ref` as it is stepped into; the walk inlines them into
plain JSON Schema, since a tool's parameters travel in one piece. A reference met again deeper than MAX_REF_DEPTH
along one branch (a tree node whose children are tree nodes) stops there as "any value"; the whole schema is capped
at MAX_NODES nodes, so a document whose references fan out (ten properties each referring to a schema of ten...)
cannot make a tool larger than that. Only the keywords a model uses to write a call are kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema_path import SchemaPath

MAX_REF_DEPTH = 3
MAX_NODES = 400
MAX_TEXT = 200
AUTH_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie",
                          # what the connection is: never the model's to set (`Host` would pick another site)
                          "host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "trailer",
                          "expect", "keep-alive", "proxy-connection"})
KEPT = ("type", "format", "enum", "const", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern", "minItems", "maxItems", "required", "nullable")
NESTED = ("items", "additionalProperties", "not")
LISTS = ("allOf", "anyOf", "oneOf")
V2_INLINE = ("type", "format", "enum", "default", "minimum", "maximum", "items", "pattern")


def tool_parameters(params: dict[tuple[str, str], SchemaPath], op: SchemaPath, v2: bool,
                    auth: set[tuple[str, str]]) -> tuple[dict[str, Any], list[tuple[str, str, str]], str | None]:
    """(the tool's JSON schema, the parameters it sends as (name, location, argument), the body's content type or
    None, or "unsupported" when the body is not JSON)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    sent: list[tuple[str, str, str]] = []
    body: str | None = None
    budget = _Budget()
    names = [name for name, _ in params]
    for (name, location), node in params.items():
        if location == "body" and v2:
            body = "application/json"
            properties["body"] = _inline(node / "schema", budget, 0) if "schema" in node else {}
            if node.read_value().get("required"):
                required.append("body")
            continue
        if location not in ("path", "query", "header") or (name.lower(), location) in auth:
            continue
        value = node.read_value()
        key = name if names.count(name) == 1 else f"{name}_{location}"
        if v2:
            schema = {k: value[k] for k in V2_INLINE if k in value}
            if "items" in schema:
                schema["items"] = _inline(node / "items", budget, 0)
        else:
            schema = _inline(node / "schema", budget, 0) if "schema" in node else {"type": "string"}
        if value.get("description"):
            schema = {**schema, "description": _text(value["description"])}
        properties[key] = schema
        if value.get("required") or location == "path":
            required.append(key)
        sent.append((name, location, key))
    if not v2 and "requestBody" in op:
        request = op / "requestBody"
        content = request / "content" if "content" in request else None
        types = list(content.keys()) if content is not None else []
        json_type = next((t for t in types if t == "application/json" or t.endswith("+json")), None)
        if json_type is None and types:
            return {}, [], "unsupported"
        if json_type is not None:
            media = content / json_type
            schema = _inline(media / "schema", budget, 0) if "schema" in media else {}
            if (said := request.read_value().get("description")) and "description" not in schema:
                schema = {**schema, "description": _text(said)}
            properties["body"] = schema
            body = json_type
            if request.read_value().get("required"):
                required.append("body")
    tool_schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required,
                                   "additionalProperties": False}
    return tool_schema, sent, body


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_NODES


def _inline(node: SchemaPath, budget: _Budget, depth: int) -> Any:
    """The schema at `node` with its references inlined (module docstring)."""
    budget.left -= 1
    if budget.left < 0:
        return {"description": "(too large to show; any value the API accepts)"}
    value = node.read_value()
    if not isinstance(value, dict):
        return {} if value is True or not isinstance(value, bool) else {"not": {}}
    out: dict[str, Any] = {k: value[k] for k in KEPT if k in value and k != "nullable"}
    if value.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]  # OpenAPI 3.0's `nullable` in JSON Schema's words
    if "description" in value:
        out["description"] = _text(value["description"])
    if isinstance(value.get("additionalProperties"), bool):
        out["additionalProperties"] = value["additionalProperties"]
    for key, child in _children(value):
        if budget.left <= 0:  # what is left is not shown: one word for it, not a placeholder per child
            out["description"] = (out.get("description", "") + " (more not shown)").strip()
            break
        if key == "properties":
            shown = {}
            for name, spec in child.items():
                if budget.left <= 0:
                    break
                shown[name] = _step(node / key / name, spec, budget, depth)
            out[key] = shown
        elif key in LISTS:
            out[key] = [_step(node / key / index, item, budget, depth) for index, item in enumerate(child)]
        else:
            out[key] = _step(node / key, child, budget, depth)
    return out


def _step(node: SchemaPath, raw: Any, budget: _Budget, depth: int) -> Any:
    """The child schema at `node` (`raw` as written: a `$ref` counts one more hop on this branch)."""
    hops = depth + (1 if isinstance(raw, dict) and "$ref" in raw else 0)
    if hops > MAX_REF_DEPTH:
        budget.left -= 1
        return {"description": "(nested further; any value the API accepts)"}
    return _inline(node, budget, hops)


def _children(value: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(key, value[key]) for key in (*NESTED, "properties", *LISTS)
            if isinstance(value.get(key), list if key in LISTS else dict)]


def _text(text: Any) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"
