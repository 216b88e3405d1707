"""The text between calls that is neither a call nor the answer: the `;` Llama 3 writes between its calls, and the
body LFM2 writes again after a call's end marker."""

from __future__ import annotations

import re

from sunwell.models.emulation.found_calls import Extraction
from sunwell.models.emulation.span_scanner import Kind


class Echo:
    """LFM2 may write a call's body again after its end marker (`<|tool_call_start|>[f()]<|tool_call_end|>[f()]
    <|tool_call_end|>`, vLLM's test): the repeat is neither a second call nor the answer."""

    def __init__(self) -> None:
        self.bodies: set[str] = set()

    def repeats(self, kind: Kind, span: str) -> bool:
        return kind == "candidate" and span.strip() in self.bodies

    def saw(self, span: str, found: Extraction | None) -> None:
        if found is not None and found.calls and span.startswith("<|tool_call_start|>"):
            self.bodies.add(span.removeprefix("<|tool_call_start|>").removesuffix("<|tool_call_end|>").strip())


class Separator:
    """The `;` Llama 3 writes between calls (`{…}; {…}`), dropped when a call follows it: text after a call that
    may be one is held (`held`) until what comes next says."""

    def __init__(self) -> None:
        self.after_call = False
        self.held = ""

    def text(self, span: str) -> str:
        """What of a text span to show now."""
        if self.after_call and _SEPARATOR.fullmatch(self.held + span):
            self.held += span
            return ""
        out, self.held, self.after_call = self.held + span, "", False
        return out

    def found(self, found: Extraction) -> str:
        """What held text to show before a span that held calls (or thinking, or a control token)."""
        out = "" if found.calls and ";" in self.held else self.held
        self.held, self.after_call = "", bool(found.calls) or (self.after_call and not found.remaining_text)
        return out


_SEPARATOR = re.compile(r"\s*;?\s*")
