"""A reply that is nothing but Python calls: `Read_file(path="a.txt")`, Llama 3.2's `[f(a=1), g(b=2)]`.

Read with `ast` and `ast.literal_eval` only when the whole reply is such calls of offered tools with literal keyword
arguments; nothing is ever evaluated. The streaming detector (`call_detector.CallDetector`) holds a reply that begins
like one (`PYTHONIC_OPEN`) to its end, because prose may also start with `print(`. The calls carry their arguments
as objects: there is no JSON text to parse (`arguments.parse_arguments`) in a Python call.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection

from sunwell.models.normalize import Extraction, FoundCall
from sunwell.vocabulary import canonical_tool_name

PYTHONIC_OPEN = re.compile(r"\s*\[?\s*[A-Za-z_][\w.]*\s*\(")
"""How a reply that is a Python call begins (`read_file(`, `[read_file(`)."""
PYTHONIC_PREFIX = re.compile(r"\s*\[?\s*(?:[A-Za-z_][\w.]*\s*)?")
"""Text that may still turn into `PYTHONIC_OPEN`."""
_PYTHONIC_MAX = 100_000


def pythonic_calls(text: str, tool_names: Collection[str]) -> Extraction | None:
    """The calls when the whole `text` is Python calls of offered tools with literal keyword arguments
    (`Read_file(path="a.txt")`, Llama 3.2's `[f(a=1), g(b=2)]`), else None. Nothing is evaluated."""
    if not PYTHONIC_OPEN.match(text) or len(text) > _PYTHONIC_MAX:
        return None
    try:
        body = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = list(tool_names)
    calls = []
    for node in body.elts if isinstance(body, ast.List) else [body]:
        name = (_dotted(node.func) if isinstance(node, ast.Call) else None) or ""
        offered = name in names or canonical_tool_name(name, names) is not None  # the loop repairs the spelling
        if not offered or node.args or any(k.arg is None for k in node.keywords):
            return None  # not a tool, a positional argument (which parameter?) or **kwargs
        try:
            arguments = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            # the JSON values the literals stand for: a tuple is an array (a set or bytes is no JSON value)
            arguments = json.loads(json.dumps(arguments))
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return None  # not a literal (never evaluated), or no JSON value (a set, bytes)
        calls.append(FoundCall(name, arguments))
    if not calls:
        return None
    return Extraction(calls=calls, repairs=[f"read a call written as Python: {text.strip()[:80]}"])


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return None
