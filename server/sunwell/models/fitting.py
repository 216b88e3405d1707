"""Make the offered tools fit a small context window.

`fit_tools` spends at most `budget_ratio` of the window on tool definitions (counted as a request counts them,
`tools_tokens`). When they do not fit, the expendable tools (the agent's conveniences: the plan, the time,
arithmetic, the key-value store) are left out first, least relevant first; then it gives up detail in this order,
each step applied to the least relevant tool first and stopped as soon as everything fits: descriptions cut to their
first sentence, optional parameters' descriptions dropped, optional parameters dropped, and last whole tools, least
relevant first. Relevance is word overlap between the user's text and a tool's name (counted double) and
description, so the tools the request is about keep their detail longest and are never the ones left out.

A session shows the tools one fitting chose (`Fitted`) again while the same tools are offered in the same window and
its requests are about none that fitting cut: tools come first in every request, and a list that changed with each
request's words would make the provider's prompt cache (a local server's KV cache) read the whole prompt again.

Each step changes one tool, and only that tool is counted again (`ToolsTally`): a learned API of 5,000 operations is
fitted in time linear in its tools, where counting the whole list after every step took minutes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sunwell.models.tokens import ToolsTally
from sunwell.wire.messages import ToolSpec

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "get", "give", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "please", "show", "that", "the", "them", "then", "this", "to", "use", "using", "want", "was", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your"})


def fit_tools(tools: list[ToolSpec], *, context_window: int, user_text: str, budget_ratio: float = 0.25,
              expendable: Collection[str] = (), topical: Collection[str] = ()) -> tuple[list[ToolSpec], list[str]]:
    """The tools, trimmed to fit `budget_ratio` of `context_window`, and a note per kind of trimming done. The
    `expendable` ones (by name: the plan, the time, arithmetic...) are left out first, before any other tool loses
    a word, least relevant first. The `topical` ones (a learned API's operations: many, each about one thing) that
    share no word with the request go with them; those it is about are trimmed like any other tool."""
    budget = int(context_window * budget_ratio)
    current = list(tools)
    tally = ToolsTally()  # every step below changes one tool: its own JSON is counted again, never the others'
    counts = [tally.add(tool) for tool in current]
    if tally.tokens <= budget:
        return current, []
    words = _words(user_text)
    scores = [relevance(tool, words) for tool in tools]
    order = sorted(range(len(tools)), key=lambda i: (scores[i], -i))  # least relevant first
    dropped: dict[int, None] = {}  # in the order they went, which the notes keep

    def fits() -> bool:
        return tally.tokens <= budget

    def drop(i: int) -> None:
        dropped[i] = None
        tally.remove(counts[i])

    notes: list[str] = []
    spare = [i for i in order if tools[i].name in expendable or (tools[i].name in topical and not scores[i])]
    for i in spare[:len(tools) - 1]:  # one tool always stays
        if fits():
            break
        drop(i)
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
                tally.remove(counts[i])
                current[i], counts[i] = trimmed, tally.add(trimmed)
                changed.append(trimmed.name)
        if changed:
            notes.append(note.format(names=", ".join(changed)))
        if fits():
            return _kept(current, dropped), notes
    left_out = []
    for i in [i for i in order if i not in dropped][:-1]:  # the most relevant tool always stays
        if fits():
            break
        drop(i)
        left_out.append(current[i].name)
    if left_out:
        notes.append(f"left out {', '.join(left_out)} (least relevant to the request) to fit the context window")
    return _kept(current, dropped), notes


def _kept(current: list[ToolSpec], dropped: Collection[int]) -> list[ToolSpec]:
    return [tool for i, tool in enumerate(current) if i not in dropped]


@dataclass(frozen=True)
class Fitted:
    """One fitting: the tools offered, the window, what the model is shown of them, and the notes of what was cut."""

    offered: tuple[ToolSpec, ...]
    window: int
    specs: list[ToolSpec]
    notes: tuple[str, ...]

    def holds_for(self, tools: Sequence[ToolSpec], window: int, user_text: str) -> bool:
        """Whether the model may be shown these again for `user_text`: the same tools in the same window, and each
        tool the text is about shown whole."""
        if window != self.window or tuple(tools) != self.offered:
            return False
        words, shown = _words(user_text), {spec.name: spec for spec in self.specs}
        return all(shown.get(tool.name) == tool for tool in tools if relevance(tool, words))


def fit_again(previous: Fitted | None, tools: list[ToolSpec], *, context_window: int, user_text: str,
              expendable: Collection[str] = (), topical: Collection[str] = ()) -> Fitted:
    """`previous` if it holds for this request, else the tools fitted for it (`fit_tools`)."""
    if previous is not None and previous.holds_for(tools, context_window, user_text):
        return previous
    specs, notes = fit_tools(tools, context_window=context_window, user_text=user_text, expendable=expendable,
                             topical=topical)
    return Fitted(tuple(tools), context_window, specs, tuple(notes))


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
