"""Qwen3-Coder's calls read by their structure, so a value may hold the format's own tags as text (a file written
that is itself a parser's fixture or a chat template: vLLM's shared Qwen3 tests).

A value ends at the `</parameter>` that closes it: one at depth 0 (a `<parameter=…>` written inside the value opens
a level, its `</parameter>` closes it) that is followed by a parameter the tool takes or by `</function>`. The call
ends at the `</function>` after its last value, and `<tool_call>` at the `</tool_call>` after that. Where no such
end can be found (a closing tag left out: `<parameter=city>\nDallas\n<parameter=state>`), the first closing tags
count, as before.

`UNDECIDED` means the text so far cannot tell (more may come); None that the text is not of this shape.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

UNDECIDED = -1
FUNCTION = re.compile(r"<function=([^<>\s](?:[^<>\n]*[^<>\s])?)\s*>")  # a name as written, spaces and all (Ollama's)
_PARAMETER = re.compile(r"<parameter=([^<>\s](?:[^<>\n]*[^<>\s])?)\s*>")
_TOKEN = re.compile(r"<parameter=[^<>\s][^<>\n]*>|</parameter>")
_SPACE = re.compile(r"\s*")


def marked(marker: str, buf: str, pos: int, final: bool, tools: Offered) -> tuple[str, int] | None:
    """The scanner's step for a `<tool_call>` or `<function=` at `pos` read by structure: `wait` while the text so
    far cannot tell, else the candidate; None where the first closing marker decides (another shape, or the reply
    ended with no structural end)."""
    if marker not in ("<tool_call>", "<function="):
        return None
    if marker == "<function=" and _no_header(buf, pos):
        return ("wait", pos) if not final and "\n" not in buf[pos:] else ("text", pos + len(marker))
    end = tool_call_end(buf, pos + len(marker), tools) if marker == "<tool_call>" else function_end(buf, pos, tools)
    if end is None or (end == UNDECIDED and final):
        return None
    return ("wait", pos) if end == UNDECIDED else ("candidate", end)


def _no_header(buf: str, pos: int) -> bool:
    """`<function=` whose `>` has not come on its line: prose about the tag (`the tag <function=foo is …`)."""
    line = buf[pos:].split("\n", 1)[0]
    return ">" not in line


def tool_call_end(buf: str, body: int, tools: Offered) -> int | None:
    """Where `<tool_call>` (ending at `body`) closes, read by structure; None for another shape or no structure."""
    at = _SPACE.match(buf, body).end()
    if not buf.startswith("<function=", at):
        return UNDECIDED if "<function=".startswith(buf[at:]) else None
    walked = _walk(buf, at, tools)
    if walked is None or walked == UNDECIDED:
        return walked
    j = _SPACE.match(buf, walked[0]).end()
    if buf.startswith("</tool_call>", j):
        return j + len("</tool_call>")
    return UNDECIDED if "</tool_call>".startswith(buf[j:]) else None


def function_end(buf: str, at: int, tools: Offered) -> int | None:
    """Where the `<function=…>` at `at` closes, read by structure (`UNDECIDED`, None: see the module)."""
    walked = _walk(buf, at, tools)
    return walked if walked is None or walked == UNDECIDED else walked[0]


def read_function(span: str, tools: Offered) -> Extraction | None:
    """The call a whole `<function=name>…</function>` span says, read by structure; None when it has none."""
    walked = _walk(span, 0, tools)
    if walked is None or walked == UNDECIDED:
        return None
    name = FUNCTION.match(span)[1]
    arguments = {key: typed_value(value, parameter_schema(tools, name, key)) for key, value in walked[1]}
    return Extraction(calls=[FoundCall(name, arguments)])


def _walk(buf: str, at: int, tools: Offered) -> tuple[int, list[tuple[str, str]]] | int | None:
    m = FUNCTION.match(buf, at)
    if m is None:
        return UNDECIDED if ">" not in buf[at:] else None
    names = _parameters(tools, m[1])
    pos, values = m.end(), []
    while True:
        pos = _SPACE.match(buf, pos).end()
        if buf.startswith("</function>", pos):
            return pos + len("</function>"), values
        p = _PARAMETER.match(buf, pos)
        if p is None:
            rest = buf[pos:]
            return UNDECIDED if _may_go_on(rest) else None
        end = _value_end(buf, p.end(), names)
        if end is None or end == UNDECIDED:
            return end
        values.append((p[1], buf[p.end() : end]))
        pos = end + len("</parameter>")


def _value_end(buf: str, start: int, names: Collection[str] | None) -> int | None:
    depth = 0
    for t in _TOKEN.finditer(buf, start):
        if t[0] != "</parameter>":
            depth += 1
            continue
        if depth:
            depth -= 1
            continue
        j = _SPACE.match(buf, t.end()).end()
        rest = buf[j:]
        if rest.startswith("</function>") or ((p := _PARAMETER.match(buf, j)) and (names is None or p[1] in names)):
            return t.start()
        if _may_go_on(rest):
            return UNDECIDED
    return UNDECIDED


def _may_go_on(rest: str) -> bool:
    """Whether the text after a value may still become `</function>` or a parameter's opening tag."""
    return "</function>".startswith(rest) or ("<parameter=".startswith(rest[:11]) and ">" not in rest)


def _parameters(tools: Offered, name: str) -> Collection[str] | None:
    properties = (tools.get(name) or {}).get("properties") if isinstance(tools, dict) else None
    return set(properties) if isinstance(properties, dict) and properties else None
