"""The dialect corpus (issue 16): model outputs written from each open-model family's documented call format, each
with the calls it holds, the text a user should see, and the thinking it carries.

One YAML file per format; each case has `text` (the model's output), `calls` (a list of `{name: arguments}`),
`shown` (the visible answer; compared with whitespace collapsed), optionally `thinking`, and `cut_off: true` when
the reply ended by length (then no call may run). `tools.yaml` holds the offered tools' schemas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
LEAK_MARKERS = (
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|python_start|>",
    "<|python_end|>",
    "<|python_tag|>",
    "<tool_call>",
    "</tool_call>",
    "<function",
    "<parameter",
    "<arg_key>",
    "<arg_value>",
    "<|channel|>",
    "<|message|>",
    "<|call|>",
    "<|start|>",
    "<|end|>",
    "<|return|>",
    "<|constrain|>",
    "to=functions",
    "<｜tool",
    "<|tool_call",
    "<|tool_calls",
    "<minimax:",
    "<invoke",
    '"arguments"',
    "```json",
)
"""Text that only a call (or a dialect's control token) writes: seen in the answer, the call leaked."""


@dataclass(frozen=True)
class Case:
    format: str
    name: str
    text: str
    calls: list[tuple[str, dict[str, Any]]]
    shown: str
    thinking: str = ""
    cut_off: bool = False
    allowed: tuple[str, ...] = field(default=())
    """Leak markers the expected answer itself contains (an example in backticks)."""


def tools() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((HERE / "tools.yaml").read_text(encoding="utf-8"))


def cases() -> list[Case]:
    out = []
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "tools.yaml":
            continue
        for name, case in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            calls = [next(iter(call.items())) for call in case.get("calls") or []]
            shown = case.get("shown", "")
            out.append(
                Case(
                    format=path.stem,
                    name=name,
                    text=case["text"],
                    calls=calls,
                    shown=shown,
                    thinking=case.get("thinking", ""),
                    cut_off=case.get("cut_off", False),
                    allowed=tuple(m for m in LEAK_MARKERS if m in shown),
                )
            )
    return out


def leaks(case: Case, shown: str) -> list[str]:
    return [m for m in LEAK_MARKERS if m in shown and m not in case.allowed]


def collapsed(text: str) -> str:
    return " ".join(text.split())
