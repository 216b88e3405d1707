"""K2 Horizon's (and K2-V3's) calls: a group `<ifm|tool_calls>…</ifm|tool_calls>` of calls in
`<ifm|tool_call>…</ifm|tool_call>` (or such a call alone), each written as JSON (`{"name": …, "arguments": …}`) or in GLM's form with the family's own tag names
(`f<ifm|arg_key>k</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type><ifm|arg_value>2</ifm|arg_value>`).

The group is read as the same calls written in plain tags (`<tool_call>`, `<arg_key>`), which the GLM and JSON
readers know; a value's written type is left out, the offered schema types it (vLLM's k2_horizon parser does too),
except that a value written as a `string` stays one where no schema says (sglang's K2-V3 reader). Thinking stands in
`<ifm|think>` (or `<ifm|think_fast>`, `<ifm|think_faster>`: the effort the prompt asked for).
"""

from __future__ import annotations

import json
import re

OPEN, CLOSE = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL = "<ifm|tool_call>"
OPENERS = {OPEN: CLOSE, CALL: "</ifm|tool_call>"}
THINKING = {f"<ifm|{effort}>": f"</ifm|{effort}>" for effort in ("think", "think_fast", "think_faster")}
_TYPE = re.compile(r"<ifm\|arg_type>.*?</ifm\|arg_type>", re.DOTALL)
_STRING = re.compile(r"<ifm\|arg_type>\s*string\s*</ifm\|arg_type>\s*<ifm\|arg_value>(.*?)</ifm\|arg_value>", re.DOTALL)


def plain_calls(span: str) -> str:
    """The group's calls in plain tags: `<tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`."""
    body = span.removeprefix(OPEN).removesuffix(CLOSE)
    body = _STRING.sub(lambda m: f"<ifm|arg_value>{_quoted(m[1])}</ifm|arg_value>", body)
    return _TYPE.sub("", body).replace("</ifm|", "</").replace("<ifm|", "<")


def _quoted(value: str) -> str:
    """A string value as JSON, which the GLM reader takes as that string whatever it looks like (`12345`)."""
    return value if len(value) > 1 and value[0] == value[-1] == '"' else json.dumps(value, ensure_ascii=False)
