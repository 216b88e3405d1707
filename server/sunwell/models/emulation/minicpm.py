"""MiniCPM5's calls: `<function name="f"><param name="a">1</param></function>`, as its tokenizer may also spell
them (`<function\u0120name=` with the byte-level space marker, or `<functionname=` with none). A value may stand in
`<![CDATA[…]]>`; it is typed by the tool's schema. A lone `arguments`, `properties` or `input` parameter the tool
does not take, holding an object, is the arguments themselves (the model wrapped them).

The arguments are read as vLLM's MiniCPM5 reader (the dialect's own) reads them: a parameter the tool does not take
is dropped, and a call that misses a required one, or whose parameter has no name or is given twice, is no call (its
text stays the answer)."""

from __future__ import annotations

import re

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

OPENERS = {"<function\u0120name=": "</function>", "<functionname=": "</function>"}
"""The tokenizer's spellings of `<function name=` (which `dialects.CLOSED` holds: other formats use it too)."""

_FUNCTION = re.compile(r"""<function(?:\s+|\u0120)?name=["']([^"'>]+)["']\s*>(.*?)(?:</function>|\Z)""", re.DOTALL)
_PARAM = re.compile(  # a CDATA value may hold `</param>` itself
    r"""<param(?:\s+|\u0120)?name=["']([^"'>]+)["']\s*>(\s*<!\[CDATA\[.*?\]\]>\s*(?=</param>)|.*?)</param>""", re.DOTALL)
_ANY_PARAM = re.compile(r"<param[\s\u0120>n]")
CDATA = re.compile(r"\s*<!\[CDATA\[(.*)\]\]>\s*", re.DOTALL)
_WRAPPERS = ("arguments", "properties", "input")


def is_minicpm(span: str) -> bool:
    return span.startswith(tuple(OPENERS)) or (span.startswith("<function name=") and _PARAM.search(span) is not None)


def read_minicpm(span: str, tools: Offered) -> Extraction | None:
    m = _FUNCTION.match(span)
    if m is None:
        return None
    name = m[1].strip()
    params = _PARAM.findall(m[2])
    if len(_ANY_PARAM.findall(m[2])) != len(params) or len({key for key, _ in params}) != len(params):
        return None  # a parameter without a name, or one given twice
    arguments = {}
    for key, text in params:
        cdata = CDATA.fullmatch(text)
        schema = parameter_schema(tools, name, key)
        arguments[key] = cdata[1] if cdata and (schema or {}).get("type", "string") == "string" else typed_value(
            cdata[1] if cdata else text, schema)
    if len(arguments) == 1 and (key := next(iter(arguments))) in _WRAPPERS and parameter_schema(tools, name, key) is None:
        inner = arguments[key]
        if isinstance(inner, str):
            inner = typed_value(inner, {"type": "object"})
        if isinstance(inner, dict):
            arguments = inner
    tool = tools.get(name) or {}
    if isinstance(properties := tool.get("properties"), dict):
        arguments = {k: v for k, v in arguments.items() if k in properties}
        if not set(tool.get("required") or []) <= set(arguments):
            return None
    return Extraction(calls=[FoundCall(name, arguments)])
