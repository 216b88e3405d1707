"""Step3's calls: `<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="f"><steptml:parameter name="a">1
</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>` (calls apart by `<｜tool_sep｜>`; a call
may begin `function<｜tool_sep｜>f` before its invoke).

A value stands between the tags as it is: a string parameter keeps its whitespace (it is data, as vLLM's test says:
an edit's old text), any other is typed by the tool's schema.
"""

from __future__ import annotations

import re

from sunwell.models.arguments import written_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

CALL_END = "<｜tool_call_end｜>"
OPENERS = {"<｜tool_calls_begin｜>": "<｜tool_calls_end｜>", "<｜tool_call_begin｜>": CALL_END}

_INVOKE = re.compile(r'<steptml:invoke\s+name="([^"]+)"\s*>(.*?)</steptml:invoke>', re.DOTALL)
_PARAMETER = re.compile(r'<steptml:parameter\s+name="([^"]+)"\s*>(.*?)</steptml:parameter>', re.DOTALL)


def read_step3(span: str, tools: Offered) -> Extraction:
    calls = []
    for name, body in _INVOKE.findall(span):
        arguments = {key: written_value(text, parameter_schema(tools, name, key)) for key, text in _PARAMETER.findall(body)}
        calls.append(FoundCall(name.strip(), arguments))
    return Extraction(calls=calls)
