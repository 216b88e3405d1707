"""Hunyuan's (HY V3, HY V4) calls: GLM's argument tags inside a block of calls,
`<tool_calls><tool_call>f<tool_sep><arg_key>a</arg_key><arg_value>1</arg_value></tool_call></tool_calls>`.

HY V4 writes no `<tool_sep>` and may carry a checkpoint's suffix on every tag (`<tool_calls:opensource>`); the
block ends at the closing tag with the same suffix, and the suffix is read off. The block is read strictly, as
vLLM's HY V4 reader does: a call whose name is missing, a key without its value, or text between the tags that is no
tag makes the whole block unreadable (no call, a notice), since half a block read is worse than none. A value is typed by the tool's schema, as GLM's are.
"""

from __future__ import annotations

import re

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

SUFFIXED = "<tool_calls:"
OPENERS = {SUFFIXED: "</tool_calls:"}
"""The block with a checkpoint's suffix, whichever it is (`:opensource` on the published HY V4; vLLM learns it from
the tokenizer's vocabulary). The plain `<tool_calls>` is in `dialects.CLOSED`: MiniMax-M1 uses it too."""
_SUFFIX = re.compile(r"[^<>\s]*>")

_TAG = re.compile(r"<(/?)(tool_calls|tool_call|tool_sep|arg_key|arg_value)(?::[^<>\s]*)?>")
_VALUE = r"<arg_value>((?:(?!</arg_value>).)*)</arg_value>"  # a value never runs past its own closing tag
_CALL = re.compile(rf"\s*<tool_call>([^<]*?)(?:<tool_sep>)?\s*((?:<arg_key>[^<]*</arg_key>\s*{_VALUE}\s*)*)</tool_call>\s*",
                   re.DOTALL)
_PAIR = re.compile(rf"<arg_key>([^<]*)</arg_key>\s*{_VALUE}", re.DOTALL)
_NAME = re.compile(r"[^\W\d][\w.\-:/]*")


def is_hunyuan(span: str) -> bool:
    """A block of Hunyuan's calls (not MiniMax-M1's JSON lines, which share `<tool_calls>`)."""
    body = _TAG.sub(_plain, span).removeprefix("<tool_calls>").lstrip()
    return span.startswith(tuple(OPENERS)) or body.startswith("<tool_call>")


def block(buf: str, pos: int, final: bool) -> tuple[str, int]:
    """The scanner's step at `<tool_calls:`: through `</tool_calls:SUFFIX>`, the suffix its opening tag gave."""
    m = _SUFFIX.match(buf, pos + len(SUFFIXED))
    if m is None:
        if re.fullmatch(r"[^<>\s]*", buf[pos + len(SUFFIXED):]):  # the suffix still coming
            return ("partial", len(buf)) if final else ("wait", pos)
        return "text", pos + len(SUFFIXED)
    closer = f"</tool_calls:{m[0]}"
    if (k := buf.find(closer, m.end())) >= 0:
        return "candidate", k + len(closer)
    return ("partial", len(buf)) if final else ("wait", pos)


def read_hunyuan(span: str, tools: Offered) -> Extraction:
    """The calls of a block, or none when any part of it is not a call's."""
    text = _TAG.sub(_plain, span)
    body = text.removeprefix("<tool_calls>").removesuffix("</tool_calls>")
    calls, pos = [], 0
    while pos < len(body) and body[pos:].strip():
        m = _CALL.match(body, pos)
        if m is None or not _NAME.fullmatch(name := m[1].strip()):
            return Extraction()
        arguments = {k.strip(): typed_value(v, parameter_schema(tools, name, k.strip())) for k, v in _PAIR.findall(m[2])}
        calls.append(FoundCall(name, arguments))
        pos = m.end()
    return Extraction(calls=calls)


def _plain(m: re.Match) -> str:
    return f"<{m[1]}{m[2]}>"
