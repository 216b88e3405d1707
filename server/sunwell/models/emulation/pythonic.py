"""Calls written as Python: `Read_file(path="a.txt")`, Llama 3.2's and Llama 4's `[f(a=1), g(b=2)]`, LFM2's
`<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.

Read with `ast` only: the arguments must be literals (`ast.literal_eval`, with JSON's `true`, `false` and `null`
taken for Python's), so nothing is ever evaluated. A reply that is nothing but such calls is read by
`pythonic_calls`; the streaming detector (`call_detector.CallDetector`) holds a reply that begins like one
(`PYTHONIC_OPEN`) to its end, because prose may also start with `print(`. Calls on lines of their own between
prose, and inside a dialect's call markers, are found by `normalize.py` with `python_calls`. The calls carry
their arguments as objects: there is no JSON text to parse (`arguments.parse_arguments`) in a Python call.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import warnings
from collections.abc import Collection

from sunwell.models.emulation.found_calls import Extraction, FoundCall
from sunwell.vocabulary import canonical_tool_name

PYTHONIC_OPEN = re.compile(r"\s*\[?\s*[A-Za-z_][\w.]*\s*\(")
"""How a reply that is a Python call begins (`read_file(`, `[read_file(`)."""
PYTHONIC_PREFIX = re.compile(r"\s*\[?\s*(?:[A-Za-z_][\w.]*\s*)?")
"""Text that may still turn into `PYTHONIC_OPEN`."""
_PYTHONIC_MAX = 100_000
_JSON_WORDS = {"true": True, "false": False, "null": None}


def pythonic_calls(text: str, tool_names: Collection[str]) -> Extraction | None:
    """The calls when the whole `text` is Python calls of offered tools with literal keyword arguments
    (`Read_file(path="a.txt")`, Llama 3.2's `[f(a=1), g(b=2)]`), else None. Nothing is evaluated."""
    if not PYTHONIC_OPEN.match(text):
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) > 1 and all(PYTHONIC_OPEN.match(line) for line in lines):  # a call a line (Granite's test)
        each = [python_calls(line, tool_names) for line in lines]
        if all(each):
            return Extraction(calls=[c for calls in each for c in calls],
                              repairs=[f"read calls written as Python: {text.strip()[:80]}"])
    calls = python_calls(text, tool_names)
    if not calls:
        return None
    return Extraction(calls=calls, repairs=[f"read a call written as Python: {text.strip()[:80]}"])


def python_calls(text: str, tool_names: Collection[str], *, any_name: bool = False) -> list[FoundCall] | None:
    """The calls `text` consists of (one call, or a list of them), else None. Every item must be a call; unless
    `any_name` (inside a dialect's explicit call markers) a call counts only when it calls an offered tool, give or
    take its spelling. What a model's slips made invalid Python is mended (`_mended`), and a call whose arguments
    are no JSON values is dropped while its siblings count (vLLM's pythonic, LFM2 and Olmo 3 tests)."""
    if len(text) > _PYTHONIC_MAX:
        return None
    parsed = _parsed(text.strip())
    if parsed is None:
        return None
    body, keywords = parsed
    names = list(tool_names)
    calls = []
    nodes = body.elts if isinstance(body, ast.List) else [body]
    while len(nodes) == 1 and isinstance(nodes[0], ast.List):  # `[[f(a=1)]]` (LFM2, Ollama's test)
        nodes = nodes[0].elts
    if not all(isinstance(node, ast.Call) for node in nodes):
        return None  # prose or data in brackets, not calls
    for node in nodes:
        call = _call(node, names, keywords, any_name)
        calls += [call] if call is not None else []
    return calls or None


def _call(node: ast.expr, names: list[str], keywords: dict[str, str], any_name: bool) -> FoundCall | None:
    name = (_dotted(node.func) if isinstance(node, ast.Call) else None) or ""
    offered = any_name or name in names or canonical_tool_name(name, names) is not None  # the loop respells
    if not isinstance(node, ast.Call) or not name or not offered or node.args or any(k.arg is None for k in node.keywords):
        return None  # not a tool, a positional argument (which parameter?) or **kwargs
    try:
        arguments = {keywords.get(k.arg, k.arg): ast.literal_eval(_JsonWords().visit(k.value)) for k in node.keywords}
        # the JSON values the literals stand for: a tuple is an array; bytes and infinities are none
        arguments = json.loads(json.dumps(arguments, allow_nan=False))
        if keywords:  # a string that held `, from=` got the renaming too: give it back
            arguments = json.loads(json.dumps(arguments).replace(_KEYWORD_SUFFIX, ""))
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None  # not a literal (never evaluated), or no JSON value
    return FoundCall(name, arguments)


def _parsed(text: str) -> tuple[ast.expr, dict[str, str]] | None:
    """The expression `text` is, and the keyword parameters renamed to read it; mended if need be."""
    attempts = [text, *[m for m in (_mended(text),) if m != text]]
    for attempt in attempts:
        for source, keywords in ((attempt, {}), _keyword_arguments(attempt)):
            try:
                with warnings.catch_warnings():  # `'\,'` in a model's string is its text, not our bug to warn of
                    warnings.simplefilter("ignore", SyntaxWarning)
                    warnings.simplefilter("ignore", DeprecationWarning)
                    return ast.parse(source, mode="eval").body, keywords
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
    return None


_QUOTED_ARGUMENT = re.compile(r"""(\b[A-Za-z_]\w*\s*=\s*)(['"])(.*?)\2(?=\s*,\s*[A-Za-z_]\w*\s*=|\s*\)\s*(?:,|\]|\Z))""",
                              re.DOTALL)


def _mended(text: str) -> str:
    """Python a small model almost wrote: a string argument holding its own quote character or a raw line break
    (`command='sed -n '1,2p' f'`) is triple-quoted, a NUL byte escaped, an integer's leading zeros (`07`) dropped.
    A string ends at the quote followed by the next argument or the call's close."""
    def triple(m: re.Match[str]) -> str:
        quote = m[2] * 3
        body = m[3]
        if quote in body or body.endswith(m[2]):
            return m[0]
        return f"{m[1]}{quote}{body}{quote}"

    text = _QUOTED_ARGUMENT.sub(triple, text).replace("\x00", "\\x00")
    return re.sub(r"(=\s*)0+(?=\d)", r"\1", text)


_KEYWORD_ARGUMENT = re.compile(r"([(,]\s*)(" + "|".join(keyword.kwlist) + r")(\s*=(?!=))")
_KEYWORD_SUFFIX = "_sunwell_kw"


def _keyword_arguments(text: str) -> tuple[str, dict[str, str]]:
    """`text` with each parameter named like a Python keyword (`from="SFO"`, Olmo 3's test) renamed so `ast`
    reads it, and the names to give back."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        names[f"{m[2]}{_KEYWORD_SUFFIX}"] = m[2]
        return f"{m[1]}{m[2]}{_KEYWORD_SUFFIX}{m[3]}"

    return _KEYWORD_ARGUMENT.sub(rename, text), names


class _JsonWords(ast.NodeTransformer):
    """`true`, `false` and `null` as the constants they mean (models trained on JSON write them in calls); a set
    as the list it was written as (JSON has no sets)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(_JSON_WORDS[node.id]) if node.id in _JSON_WORDS else node

    def visit_Set(self, node: ast.Set) -> ast.AST:
        return ast.List(elts=[self.visit(e) for e in node.elts], ctx=ast.Load())


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return None
