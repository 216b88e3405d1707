"""Kimi K3's XTML (llama.cpp's Kimi-K3 template and tests): tags built from `<|open|>NAME …<|sep|>` and
`<|close|>NAME<|sep|>`. A message is sections: the thinking (`think`, which the template opens itself), the answer
(`response`) and the calls:

    <|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>
    <|open|>argument key="a" type="number"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>

An argument's `type` says how its text is read: `string` as written, any other as the schema types it (JSON when
there is none).
"""

from __future__ import annotations

import json
import re

from sunwell.models.arguments import typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

TOOLS, TOOLS_END = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
THINKING = {"<|open|>think<|sep|>": "<|close|>think<|sep|>"}
CONTROL = ("<|open|>response<|sep|>", "<|close|>response<|sep|>")
"""The answer's section tags: the text between them is the answer."""

_CALL = re.compile(r'<\|open\|>call tool="([^"]+)"[^|]*<\|sep\|>(.*?)<\|close\|>call<\|sep\|>', re.DOTALL)
_ARGUMENT = re.compile(
    r'<\|open\|>argument key="([^"]+)"(?: type="([^"]*)")?<\|sep\|>(.*?)<\|close\|>argument<\|sep\|>',
    re.DOTALL,
)


def read(span: str, tools: Offered) -> Extraction | None:
    """The calls in a tools section; None when it holds none (its text stays)."""
    calls = [
        FoundCall(
            name,
            {
                key: _value(text, kind, parameter_schema(tools, name, key))
                for key, kind, text in _ARGUMENT.findall(body)
            },
        )
        for name, body in _CALL.findall(span.removeprefix(TOOLS).removesuffix(TOOLS_END))
    ]
    return Extraction(calls=calls) if calls else None


def _value(text: str, kind: str, schema: dict | None) -> object:
    if kind == "string":
        return text
    if schema is not None:
        return typed_value(text, schema)
    try:
        return json.loads(text)
    except ValueError:
        return text
