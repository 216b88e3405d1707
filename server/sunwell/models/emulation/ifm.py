"""K2 Horizon's calls: a group `<ifm|tool_calls>…</ifm|tool_calls>` of calls in `<ifm|tool_call>…</ifm|tool_call>`,
each written as JSON (`{"name": …, "arguments": …}`) or in GLM's form with the family's own tag names
(`f<ifm|arg_key>k</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type><ifm|arg_value>2</ifm|arg_value>`).

The group is read as the same calls written in plain tags (`<tool_call>`, `<arg_key>`), which the GLM and JSON
readers know; a value's written type is left out, the offered schema types it (vLLM's k2_horizon parser does too).
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<ifm|tool_calls>", "</ifm|tool_calls>"
_TYPE = re.compile(r"<ifm\|arg_type>.*?</ifm\|arg_type>", re.DOTALL)


def plain_calls(span: str) -> str:
    """The group's calls in plain tags: `<tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`."""
    body = span.removeprefix(OPEN).removesuffix(CLOSE)
    return _TYPE.sub("", body).replace("</ifm|", "</").replace("<ifm|", "<")
