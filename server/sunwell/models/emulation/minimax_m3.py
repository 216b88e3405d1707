"""MiniMax-M3 (llama.cpp's MiniMax-M3 template and tests): every tag of a call block is namespaced by `]<]minimax[>[`,
and a parameter is an element named by the parameter:

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="f">]<]minimax[>[<city>Tokyo]<]minimax[>[</city>]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

An object is one element per key, an array `<item>` elements; the schema types the rest, and a value whose type
admits a string is its text as written. Thinking is `<mm:think>…</mm:think>`; a turn without reasoning starts with a
bare `</mm:think>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

NS = "]<]minimax[>["
OPEN, CLOSE = NS + "<tool_call>", NS + "</tool_call>"
THINKING = {"<mm:think>": "</mm:think>"}
CONTROL = ("</mm:think>",)

_TAG = re.compile(re.escape(NS) + r'<(/?)([^\s<>/]+)(?:\s+name="([^"]*)")?>')


@dataclass
class _Element:
    tag: str
    name: str = ""
    start: int = 0
    raw: str = ""
    children: list[_Element] = field(default_factory=list)


def read(span: str, tools: Offered) -> Extraction | None:
    """The calls of a block; None when it holds none (its text stays)."""
    root = _tree(span.removeprefix(OPEN).removesuffix(CLOSE))
    calls = [
        FoundCall(
            invoke.name,
            {p.tag: _value(p, parameter_schema(tools, invoke.name, p.tag)) for p in invoke.children},
        )
        for invoke in root.children
        if invoke.tag == "invoke" and invoke.name
    ]
    return Extraction(calls=calls) if calls else None


def _tree(body: str) -> _Element:
    stack = [_Element("")]
    for m in _TAG.finditer(body):
        if not m[1]:
            element = _Element(m[2], m[3] or "", m.end())
            stack[-1].children.append(element)
            stack.append(element)
        elif len(stack) > 1 and stack[-1].tag == m[2]:
            stack[-1].raw = body[stack[-1].start : m.start()]
            stack.pop()
    return stack[0]


def _value(element: _Element, schema: dict | None) -> object:
    options = _options(schema)
    if any(o.get("type") == "string" for o in options):
        return element.raw  # as written, elements inside it too (llama.cpp's test)
    if not element.children:
        return typed_value(element.raw, schema)
    if all(child.tag == "item" for child in element.children):
        array = next((o for o in options if o.get("type") == "array"), {})
        return [_value(child, array.get("items")) for child in element.children]
    names = {child.tag for child in element.children}
    obj = next((o for o in options if names <= set(o.get("properties") or {})), {})
    return {
        child.tag: _value(child, (obj.get("properties") or {}).get(child.tag)) for child in element.children
    }


def _options(schema: dict | None) -> list[dict]:
    if not isinstance(schema, dict):
        return []
    return [o for o in (schema.get("anyOf") or schema.get("oneOf") or [schema]) if isinstance(o, dict)]
