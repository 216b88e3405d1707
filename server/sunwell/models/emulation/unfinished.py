"""Calls a reply ended inside (issue 47): what of them came whole. A call whose JSON or closing marker never came
is not a call, however the reply ended (vLLM's Hermes test: a brace left out is no call either); the complete calls
before it count, and the user is told of the rest.
"""

from __future__ import annotations

import json
import re

from sunwell.models.emulation import dialects, hunyuan, kimi_k3, minimax_m3, step3
from sunwell.models.emulation.gemma import OPENERS as GEMMA_OPENERS
from sunwell.models.emulation.gemma import read_gemma
from sunwell.models.emulation.span_scanner import _PY_LIST, FENCE_OPEN, _Balance, _skip_space

_ARGUMENTS_AT = (dialects.DEEPSEEK_SEP, "<|tool▁sep|>", dialects.KIMI_ARGS, dialects.HARMONY_MESSAGE, "[ARGS]")
_PER_CALL_END = (dialects.DEEPSEEK_CALL_END, "<|tool▁call▁end|>", dialects.KIMI_CALL_END, step3.CALL_END,
                 kimi_k3.CALL_END)


def complete_part(span: str) -> str | None:
    """Of a candidate the text ended inside, the part whose calls came whole (a JSON value that closed, a list's
    items that closed, the calls of a section whose own end marker came), or None when no call in it did."""
    for end_marker in _PER_CALL_END:
        if (k := span.rfind(end_marker)) >= 0:
            return span[: k + len(end_marker)]
    closer = next((c for m, c in dialects.CLOSED.items() if span.startswith(m)), "")
    if cut := next((n for n in range(len(closer) - 1, 0, -1) if span.endswith(closer[:n])), 0):
        span = span[:-cut]  # the closing marker began to come: the call before it is what counts
    if span.startswith(tuple(GEMMA_OPENERS)):
        return span if read_gemma(span, {}) is not None else None
    if span.startswith(("<tool_call>", "<minimax:tool_call>")) and span.rstrip().endswith(("</function>", "</invoke>")):
        return span  # Qwen3-Coder's or MiniMax's call closed; only the wrapper's tag is missing
    if span.startswith(tuple(minimax_m3.OPENERS)):
        k = span.rfind(minimax_m3.INVOKE_END)
        return span[: k + len(minimax_m3.INVOKE_END)] if k >= 0 else None  # MiniMax-M3's calls whose </invoke> came
    if span.startswith(("<tool_calls", *hunyuan.OPENERS)) and hunyuan.is_hunyuan(span):
        whole = [m.end() for m in re.finditer(r"</tool_call(?::[^<>\s]*)?>", span)]
        return span[: whole[-1]] if whole else None  # Hunyuan's calls whose own end came
    openers = (*dialects.CLOSED, *dialects.JSON_AFTER, dialects.FUNCTOOLS)
    body_at = next((len(m) for m in openers if span.startswith(m)), 0)
    if fence := FENCE_OPEN.match(span):
        body_at = fence.end()
    for marker in _ARGUMENTS_AT:
        if (k := span.find(marker, body_at)) >= 0:
            body_at = k + len(marker)
    if span.startswith("[TOOL_CALLS]") and (k := span.find("{", body_at)) >= 0 and "[" not in span[body_at:k]:
        body_at = k
    j = _skip_space(span, body_at)
    if j >= len(span) or span[j] not in "{[":
        return None
    python = span[j] == "[" and _PY_LIST.match(span, j) is not None
    end = _Balance(j, python).end(span)
    if end is not None:
        return span[:end]
    if span[j] != "[" or python:
        return None
    items, i = [], _skip_space(span, j + 1)  # a JSON list: the items that closed
    while i < len(span) and span[i] == "{" and (end := _Balance(i).end(span)) is not None:
        items.append(span[i:end])
        i = _skip_space(span, end)
        i = _skip_space(span, i + 1) if span[i : i + 1] == "," else i
    return f"{span[:j]}[{', '.join(items)}]" if items else None


def sibling_items(text: str) -> list[str] | None:
    """The items of a JSON list of two or more objects that is no JSON as a whole but whose items each close (so a
    broken one can be told from its siblings); None otherwise."""
    text = text.strip()
    if not text.startswith("[") or not text.endswith("]") or _parses(text):
        return None
    items, i = [], _skip_space(text, 1)
    while i < len(text) - 1:
        if text[i] != "{" or (end := _Balance(i).end(text)) is None:
            return None
        items.append(text[i:end])
        i = _skip_space(text, end)
        i = _skip_space(text, i + 1) if text[i : i + 1] == "," else i
    return items if len(items) > 1 else None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def cut_name(span: str) -> str:
    m = re.search(r"""(?:"name"\s*:\s*"|<function=|to=functions\.|call:|\[TOOL_CALLS\]\s*)([\w.\-]+)""", span)
    return m[1] if m else span.strip()[:40]
