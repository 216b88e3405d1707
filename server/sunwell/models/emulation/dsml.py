"""DeepSeek's DSML calls: V3.2's `<｜DSML｜function_calls>` and V4's `<｜DSML｜tool_calls>` blocks of
`<｜DSML｜invoke name="f"><｜DSML｜parameter name="a" string="true">1</｜DSML｜parameter></｜DSML｜invoke>`, and an invoke
whose block's opening marker was left out (vLLM's V4 tests: one of an offered tool is read; the stray closing marker
after it is a control token)."""

from __future__ import annotations

import json
import re

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

V32_OPEN, V4_OPEN = "<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"
INVOKE = '<｜DSML｜invoke name="'
INVOKE_END = "</｜DSML｜invoke>"
BLOCKS = {V32_OPEN: "</｜DSML｜function_calls>", V4_OPEN: "</｜DSML｜tool_calls>", INVOKE: INVOKE_END}
_INVOKE = re.compile(r'<｜DSML｜invoke\s+name="([^"]+)"\s*>(.*?)</｜DSML｜invoke>', re.DOTALL)
_PARAMETER = re.compile(
    r'<｜DSML｜parameter\s+name="([^"]+)"(?:\s+string="(true|false)")?\s*>(.*?)</｜DSML｜parameter>', re.DOTALL)
_HEADER = re.compile(r'[^"<>\s]+"\s*>')
_HEADER_MAX = 200


def invoke_header(buf: str, at: int, final: bool) -> str:
    """Whether an invoke marker's name (from `at`, after `name="`) is one: `call`, `wait` or `text` (a marker quoted
    in prose, `<｜DSML｜invoke name=" literally`, is no call's)."""
    if _HEADER.match(buf, at):
        return "call"
    if not final and len(buf) - at < _HEADER_MAX and re.fullmatch(r'[^"<>\s]*"?\s*', buf[at:]):
        return "wait"
    return "text"


def read_dsml(span: str, tools: Offered) -> Extraction | None:
    """The calls of a block (or of one invoke). Each parameter says whether it is a string (`string="true"`); in
    V3.2's block the tool's schema types it either way (vLLM's and sglang's V3.2 tests), in V4's a string stays as
    written (vLLM's V4 tests); a string-only parameter keeps `null` as text, and without a schema `string="false"`
    is JSON (in V4, for a tool whose parameters are known, it stays text: nothing types it). A lone `arguments` or
    `input` parameter the tool does not take, holding an object of parameters it does take (or any object, when its
    parameters are not known), is the arguments (the model wrapped them); so is one JSON object in place of the
    parameters."""
    calls, v4 = [], span.startswith(V4_OPEN)
    for name, body in _INVOKE.findall(span):
        declared = (tools.get(name) or {}).get("properties")
        arguments = {k: _value(v, is_string, parameter_schema(tools, name, k), v4 and bool(declared))
                     for k, is_string, v in _PARAMETER.findall(body)}
        if not arguments and (whole := _object_or_none(body.strip())) is not None:
            arguments = whole  # the arguments as one JSON object inside the invoke (sglang's V3.2 test)
        if len(arguments) == 1 and (key := next(iter(arguments))) in ("arguments", "input"):
            inner = arguments[key] if isinstance(arguments[key], dict) else _object_or_none(arguments[key])
            if inner is not None and parameter_schema(tools, name, key) is None and (
                    not declared or set(inner) <= set(declared)):
                arguments = inner
        calls.append(FoundCall(name, arguments))
    return Extraction(calls=calls) if calls else None


def _value(text: str, is_string: str, schema: dict | None, as_written: bool) -> object:
    if as_written and (is_string == "true" or schema is None):
        return text
    if schema is not None:
        kinds = [k for k in ([schema.get("type")] if isinstance(schema.get("type"), str) else schema.get("type") or [])]
        if kinds == ["string"] and is_string == "false" and re.fullmatch(r'\s*"(?:[^"\\]|\\.)*"\s*', text):
            return json.loads(text)  # a string written as JSON, as `string="false"` says (GigaChat 3.5's test)
        return text if kinds == ["string"] else typed_value(text, schema)
    if is_string == "false":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _object_or_none(value: object) -> dict | None:
    try:
        loaded = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None
