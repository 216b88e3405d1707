"""GLM's calls (GLM-4.5 to 4.7 and the families that took its form: Laguna, iQuest-Coder V2, LongCat, K2 Horizon):
`name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>` inside the family's call tags, `name\n{JSON}`, or mlx-lm's
`name a=1 b=2`."""

from __future__ import annotations

import json
import re

from sunwell.models.arguments import parse_arguments, typed_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>(?:\s|\\n)*(<arg_value>)?(.*?)(?:</arg_value>|(?=<arg_key>)|\Z)", re.DOTALL)
"""A key and its value; a value whose own tag is missing runs to the next key or the end (Ollama's GLM-4.6 repair)."""
_GLM_WORDS = re.compile(r"([A-Za-z_][\w.\-]*)((?:\s+[\w.\-]+=\S+)+)")


def read_glm(body: str, tools: Offered, strict: bool = False) -> Extraction | None:
    """`name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>` inside `<tool_call>` (or `name\n{JSON}`); a bare offered
    name is a call without arguments. A line break may arrive escaped (`\\n`, sglang's test of GLM-4.6 output). In a
    call whose end came, a value's missing tag is repaired (Ollama's GLM-4.6 reader), except where `strict` (iQuest-Coder
    V2's own tags: vLLM's test reads no call)."""
    if m := _GLM_WORDS.fullmatch(body.strip()):  # `name a=1 b=2` (mlx-lm's glm47 reader takes it)
        arguments = {k: _glm_value(v, parameter_schema(tools, m[1], k)) for k, v in re.findall(r"([\w.\-]+)=(\S+)", m[2])}
        return Extraction(calls=[FoundCall(m[1], arguments)])
    head = re.split(r"\n|\\n|<arg_key>", body.strip(), maxsplit=1)[0].strip()
    pairs = [(k, v) for k, opened, v in _GLM_ARG.findall(body) if opened or not strict]
    if strict and body.count("<arg_value>") != body.count("</arg_value>"):
        return None  # a value never closed, though the call's end came: no call (vLLM's iQuest-Coder V2 test)
    if not re.fullmatch(r"[^\W\d][\w.\-]*", head) or not (pairs or head in tools):
        return None
    rest = body.strip()[len(head):].strip()
    if not pairs and rest.startswith("{"):  # the name on its line, its arguments a JSON object (Ollama's Laguna)
        parsed, _ = parse_arguments(rest)
        return Extraction(calls=[FoundCall(head, parsed)]) if parsed is not None else None
    arguments = {k.strip(): _glm_value(v, parameter_schema(tools, head, k.strip())) for k, v in pairs}
    return Extraction(calls=[FoundCall(head, arguments)])


def _unescaped(word: str) -> str:
    """JSON the model wrote escaped as a string's content (`[{\\"task\\": \\"C:\\\\\\\\x\\"}]`): every escape undone once."""
    try:
        return json.loads(f'"{word}"')
    except ValueError:
        return word.replace('\\"', '"')


def _glm_value(text: str, schema: dict | None) -> object:
    """GLM's template writes a string as it is (spaces kept: vLLM's test) and any other value as JSON, so without a
    schema a JSON number or boolean is one; a string the model wrote as JSON (`"London"`) is read as one (mlx-lm's
    glm47 test), and JSON whose quotes came escaped (`[{\\"id\\": …}]`) too."""
    if schema is None and re.fullmatch(r"\s*(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)\s*", text):
        return json.loads(text)
    value = typed_value(text, schema)
    if isinstance(value, str) and text.strip():
        value = text  # as written: GLM's template puts no space or line break around a value
    if not isinstance(value, str):
        return value
    word = value.strip()
    if len(word) > 1 and word[0] == word[-1] == '"':
        try:
            decoded = json.loads(word)
        except ValueError:
            return value
        return decoded if isinstance(decoded, str) else value
    if '\\"' in word and word[:1] in "[{":
        unescaped = typed_value(_unescaped(word), schema)
        return value if isinstance(unescaped, str) else unescaped
    return value
