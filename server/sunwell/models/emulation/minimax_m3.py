"""MiniMax-M3's calls: every tag carries the namespace `]<]minimax[>[`, and a call's arguments are elements, nested
as the schema nests them: `NS<tool_call>NS<invoke name="f">NS<city>Paris NS</city>NS<items>NS<item>…NS</item>NS</items>
NS</invoke>NS</tool_call>` (NS standing for the namespace).

An element holding elements is an object (a tag written twice is a list of its values), or, where the schema says
array, the list of its children's values; an element holding text is typed by its schema, as every family's bare
values are. Where the schema is a union (anyOf, oneOf), elements take its array alternative when each is an
`<item>`, else its object one; a union with a string alternative is a string, the element's text as written
(llama.cpp's tests).
"""

from __future__ import annotations

import re
from typing import Any

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered

NS = "]<]minimax[>["
OPENERS = {f"{NS}<tool_call>": f"{NS}</tool_call>"}
INVOKE_END = f"{NS}</invoke>"

_INVOKE = re.compile(rf'<invoke\s+name="([^"]+)"\s*>(.*?)(?:{re.escape(NS)})?</invoke>', re.DOTALL)
_TAG = re.compile(rf"(?:{re.escape(NS)})?<(/?)([A-Za-z_][\w.\-]*)>")


def read_minimax_m3(span: str, tools: Offered) -> Extraction:
    calls = []
    for name, body in _INVOKE.findall(span):
        arguments = _value(body, tools.get(name) or {"type": "object"})
        calls.append(FoundCall(name.strip(), arguments if isinstance(arguments, dict) else {}))
    return Extraction(calls=calls)


def _value(text: str, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else {}  # `true`, JSON Schema's "anything", says no type
    children = _children(text)
    if not children:
        return typed_value(text.replace(NS, ""), schema or None)
    schema = _alternative(schema, children)
    if schema is None:
        return text
    if schema.get("type") == "array":
        return [_value(inner, schema.get("items") or {}) for _, inner in children]
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    extra = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else {}
    out: dict[str, Any] = {}
    repeated: set[str] = set()
    for tag, inner in children:
        value = _value(inner, properties.get(tag, extra))
        if tag in out:
            out[tag] = (out[tag] if tag in repeated else [out[tag]]) + [value]
            repeated.add(tag)
        else:
            out[tag] = value
    return out


def _alternative(schema: dict[str, Any], children: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The alternative of a union that elements fill (None: the union takes a string, which they are written as)."""
    options = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(options, list):
        return schema
    kinds: dict[str, dict[str, Any]] = {}
    for option in options:
        types = option.get("type") if isinstance(option, dict) else None
        for kind in types if isinstance(types, list) else [types]:
            if isinstance(kind, str):
                kinds.setdefault(kind, option)
    if "string" in kinds:
        return None
    if "array" in kinds and all(tag == "item" for tag, _ in children):
        return kinds["array"]
    return kinds.get("object", schema)


def _children(text: str) -> list[tuple[str, str]]:
    """The top-level elements of `text` (tag, inner text); none when it holds no whole elements."""
    out, depth, tag, start = [], 0, "", 0
    for m in _TAG.finditer(text):
        if not m[1]:
            if depth == 0:
                tag, start = m[2], m.end()
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                return []
            if depth == 0:
                out.append((tag, text[start : m.start()]))
    return out if depth == 0 else []
