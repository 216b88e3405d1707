"""Make the offered tools fit a small context window, and keep their names apart.

`fit_tools` spends at most `budget_ratio` of the window on tool definitions (about 4 characters a token). When
they do not fit it gives up detail in this order, each step applied to the least relevant tool first and stopped
as soon as everything fits: descriptions cut to their first sentence, optional parameters' descriptions dropped,
optional parameters dropped, and last whole tools, least relevant first. Relevance is word overlap between the
user's text and a tool's name (counted double) and description, so the tools the request is about keep their
detail longest and are never the ones left out.

`namespace_clashes` gives a skill the `<lens>__` prefix when its name is already taken by a core tool or by
another lens' skill; names that do not clash stay as they are (a prefix costs a small model accuracy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import is_dataclass, replace
from typing import Any, TypeVar

from sunwell.wire.messages import ToolSpec

CHARS_PER_TOKEN = 4
NAME_LIMIT = 64
"""OpenAI's limit on a tool name (and `^[a-zA-Z0-9_-]+$`)."""
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "get", "give", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "please", "show", "that", "the", "them", "then", "this", "to", "use", "using", "want", "was", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your"})


def estimate_tokens(tools: Sequence[ToolSpec]) -> int:
    """Roughly what the definitions cost in a prompt: their JSON at ~4 characters a token."""
    chars = sum(len(json.dumps(t.model_dump(), ensure_ascii=False, separators=(",", ":"))) for t in tools)
    return -(-chars // CHARS_PER_TOKEN)


def fit_tools(tools: list[ToolSpec], *, context_window: int, user_text: str, budget_ratio: float = 0.25,
              expendable: Collection[str] = (), topical: Collection[str] = ()) -> tuple[list[ToolSpec], list[str]]:
    """The tools, trimmed to fit `budget_ratio` of `context_window`, and a note per kind of trimming done. The
    `expendable` ones (by name: the plan, the time, arithmetic...) are left out first, before any other tool loses
    a word, least relevant first. The `topical` ones (a learned API's operations: many, each about one thing) that
    share no word with the request go with them; those it is about are trimmed like any other tool."""
    budget = int(context_window * budget_ratio)
    if estimate_tokens(tools) <= budget:
        return list(tools), []
    words = _words(user_text)
    order = sorted(range(len(tools)), key=lambda i: (relevance(tools[i], words), -i))  # least relevant first
    current = list(tools)
    dropped: list[int] = []

    def kept() -> list[ToolSpec]:
        return [t for j, t in enumerate(current) if j not in dropped]

    def fits() -> bool:
        return estimate_tokens(kept()) <= budget

    notes: list[str] = []
    spare = [i for i in order if tools[i].name in expendable
             or (tools[i].name in topical and not relevance(tools[i], words))]
    for i in spare[:len(tools) - 1]:  # one tool always stays
        if fits():
            break
        dropped.append(i)
    if dropped:
        what = "conveniences" if all(tools[i].name in expendable for i in dropped) else "not about the request"
        notes.append(f"left out {', '.join(tools[i].name for i in dropped)} ({what}) to fit the context window")
    steps: list[tuple[Callable[[ToolSpec], ToolSpec], str]] = [
        (_first_sentence, "cut the descriptions of {names} to their first sentence"),
        (_without_optional_descriptions, "dropped the descriptions of optional parameters of {names}"),
        (_without_optional_parameters, "dropped the optional parameters of {names}"),
    ]
    for trim, note in steps:
        changed = []
        for i in order:
            if fits():
                break
            if i in dropped:
                continue
            trimmed = trim(current[i])
            if trimmed != current[i]:
                current[i] = trimmed
                changed.append(current[i].name)
        if changed:
            notes.append(note.format(names=", ".join(changed)))
        if fits():
            return kept(), notes
    left_out = []
    for i in [i for i in order if i not in dropped][:-1]:  # the most relevant tool always stays
        if fits():
            break
        dropped.append(i)
        left_out.append(current[i].name)
    if left_out:
        notes.append(f"left out {', '.join(left_out)} (least relevant to the request) to fit the context window")
    return kept(), notes


def relevance(tool: ToolSpec, words: set[str]) -> int:
    """Shared words of the user's text with the tool's name (x2) and description."""
    name = _words(tool.name.replace("_", " ").replace("-", " "))
    return 2 * len(words & name) + len(words & _words(tool.description))


def _words(text: str) -> set[str]:
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()  # readFile -> read file
    return {_stem(w) for w in _WORD.findall(text) if w not in _STOP and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def first_sentence(text: str) -> str:
    text = text.strip()
    match = re.search(r"(?<=[.!?])\s", text)
    return text[:match.start()] if match else text


def _first_sentence(tool: ToolSpec) -> ToolSpec:
    return tool.model_copy(update={"description": first_sentence(tool.description)})


def _without_optional_descriptions(tool: ToolSpec) -> ToolSpec:
    return _map_optional(tool, lambda spec: {k: v for k, v in spec.items() if k != "description"})


def _without_optional_parameters(tool: ToolSpec) -> ToolSpec:
    return _map_optional(tool, lambda spec: None)


def _map_optional(tool: ToolSpec, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> ToolSpec:
    props = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or [])
    new_props = {}
    for name, spec in props.items():
        kept = spec if name in required or not isinstance(spec, dict) else change(spec)
        if kept is not None:
            new_props[name] = kept
    if new_props == props:
        return tool
    return tool.model_copy(update={"parameters": {**tool.parameters, "properties": new_props}})


# --- names --------------------------------------------------------------------------------------------------

T = TypeVar("T")


def namespace_clashes(core: Sequence[Any], skills: Sequence[tuple[str, Sequence[T]]]) -> tuple[list[T], list[str]]:
    """Every lens' skill tools, a clashing one renamed `<lens>__<name>`, and a note per rename.

    `core` are the core tools (never renamed); `skills` pairs a lens name with its skill tools (`Tool` or
    `ToolSpec`). A skill clashes when a core tool or a skill of another lens has its name; then every lens
    that has it gets the prefix, so no skill silently wins over another.
    """
    taken = {tool.name for tool in core}
    owners: dict[str, set[str]] = {}
    for lens, tools in skills:
        for tool in tools:
            owners.setdefault(tool.name, set()).add(lens)
    out: list[T] = []
    notes: list[str] = []
    for lens, tools in skills:
        for tool in tools:
            if tool.name in taken or len(owners[tool.name]) > 1:
                new = namespaced(lens, tool.name)
                what = "a core tool" if tool.name in taken else "a skill of another lens"
                notes.append(f"skill {tool.name} of lens {lens} is offered as {new} ({what} has its name)")
                tool = _renamed(tool, new)
            out.append(tool)
    return out, notes


def namespaced(lens: str, name: str) -> str:
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", lens)[:30]
    return f"{prefix}__{name}"[:NAME_LIMIT]


def _renamed(tool: T, name: str) -> T:
    if is_dataclass(tool):
        return replace(tool, name=name)
    return tool.model_copy(update={"name": name})  # type: ignore[attr-defined]
