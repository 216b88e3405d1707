"""Glimmer's messages: each a header, `<|start|>assistant to=RECIPIENT<|message|>` (the template wrote the reply's
first `<|start|>assistant`, so a reply begins ` to=RECIPIENT<|message|>`), then its body up to `<|eom|>`, `<|eot|>`
(the turn's end) or the next header. A message to `self` is thinking; to `user` (or anyone else) its body is the
answer, and a call in it stands in ATEM's XML: `<atem:function_calls><atem:invoke name="f"><atem:parameter
name="a">1</atem:parameter></atem:invoke></atem:function_calls>`, a call when it is its message's whole body (a
block with prose before or after it in the message is quoted markup, the answer's text: Ollama's and llama.cpp's
tests agree).

A value is typed by the tool's schema (a string stays as written, spaces and all); a `<|message|>` the model fumbled
into an invoke's name is no part of it; `ns.f` names the offered `f` when `ns` is `f`'s own namespace (the template
offers each tool as `ns.*`). Ollama's parser is the reference.
"""

from __future__ import annotations

import re

from sunwell.models.arguments import written_value
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered, parameter_schema

MESSAGE, START, END_MESSAGE, END_TURN = "<|message|>", "<|start|>", "<|eom|>", "<|eot|>"
OPEN, CLOSE = "<atem:function_calls>", "</atem:function_calls>"
OPENERS = {OPEN: CLOSE}
CONTROL = (END_MESSAGE, END_TURN)
_ENDS = (END_MESSAGE, END_TURN, START)
_HEADER = re.compile(r"\s?to=([^\s<]*)<\|message\|>|<\|message\|>")
_INVOKE = re.compile(r'<atem:invoke\s+name="(.*?)(?:">|(?=<atem:parameter))(.*?)</atem:invoke>', re.DOTALL)
_PARAMETER = re.compile(r'<atem:parameter\s+name="([^"]*)"\s*>(.*?)</atem:parameter>', re.DOTALL)
_MESSAGE_END = re.compile(r"<\|eom\|>|<\|eot\|>|(?=<\|start\|>assistant)")


def header_at_start(buf: str, pos: int, final: bool) -> tuple[str, int] | None:
    """The scanner's step for a reply that begins with a Glimmer header (` to=user<|message|>`): `wait` while it
    may still become one, the header itself (the body streams as the answer), or a message to `self` whole."""
    if m := _HEADER.match(buf, pos):
        return message(buf, pos, m.end(), m[1], final)
    return ("wait", pos) if not final and _may_become_header(buf[pos:]) else None


def _may_become_header(rest: str) -> bool:
    text = rest[1:] if rest[:1] == " " else rest
    if not text:
        return bool(rest)
    if MESSAGE.startswith(text) or "to=".startswith(text):
        return True
    m = re.match(r"to=[^\s<]*", text)
    return m is not None and MESSAGE.startswith(text[m.end():])


def message(buf: str, pos: int, body: int, recipient: str | None, final: bool) -> tuple[str, int]:
    """A message from its header: to `self` it is thinking through its end; else only the header is taken."""
    if recipient != "self":
        return "candidate", body
    if m := _MESSAGE_END.search(buf, body):
        return "candidate", m.end()
    return ("candidate", len(buf)) if final else ("wait", pos)


def block(buf: str, pos: int, final: bool, message_open: bool) -> tuple[str, int]:
    """The scanner's step at `<atem:function_calls>`: a candidate through its close when nothing but whitespace
    came before it in its message (`message_open`) and nothing but whitespace follows it to the message's end;
    else the opener is text."""
    if not message_open:
        return "text", pos + len(OPEN)
    close = buf.find(CLOSE, pos)
    if close < 0:
        return ("partial", len(buf)) if final else ("wait", pos)
    end = close + len(CLOSE)
    rest = buf[end:].lstrip()
    if not rest:
        return ("candidate", end) if final else ("wait", pos)
    if rest.startswith(_ENDS):
        return "candidate", end
    if not final and any(marker.startswith(rest) for marker in _ENDS):
        return "wait", pos
    return "text", pos + len(OPEN)


def opens_message(span: str) -> bool:
    """Whether a consumed span leaves the scanner where a message's body begins (or goes on after its call)."""
    return span.endswith(MESSAGE) or span.startswith(OPEN) or span.strip() in CONTROL


def is_header(span: str) -> bool:
    return _HEADER.match(span) is not None or (span.startswith(START) and MESSAGE in span and "<|channel|>" not in span)


def read_message(span: str) -> Extraction:
    """A header (nothing to keep) or a message to `self` (thinking)."""
    at = span.find(MESSAGE) + len(MESSAGE)
    if re.search(r"to=self\s*<\|message\|>", span[:at]):
        return Extraction(thinking=re.sub(r"(?:<\|eom\|>|<\|eot\|>)\Z", "", span[at:]))
    return Extraction()


def read_calls(span: str, tools: Offered) -> Extraction:
    calls = []
    for raw_name, body in _INVOKE.findall(span):
        name = _resolved(raw_name.replace(MESSAGE, "").strip(), tools)
        arguments = {key: written_value(text, parameter_schema(tools, name, key)) for key, text in _PARAMETER.findall(body)}
        calls.append(FoundCall(name, arguments))
    return Extraction(calls=calls)


def _resolved(name: str, tools: Offered) -> str:
    namespace, _, rest = name.partition(".")
    if name not in tools and rest in tools and rest.split(".", 1)[0] == namespace:
        return rest
    return name
