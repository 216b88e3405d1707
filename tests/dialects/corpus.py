"""The dialect corpus (issue 16): model outputs written from each open-model family's documented call format, each
with the calls it holds, the text a user should see, and the thinking it carries.

One YAML file per format; each case has `text` (the model's output), `calls` (a list of `{name: arguments}`),
`shown` (the visible answer; compared with whitespace collapsed), optionally `thinking`, and `cut_off: true` when
the reply ended by length (then no call may run). `tools.yaml` holds the offered tools' schemas.

`ported/` (issue 32) holds the cases the public parsers test their own servers with (one file per project; its
README says how they were ported and where the projects disagree). A file there has its own `tools` (name ->
schema) and `cases`; a case also names its `source` (file and test) and `format`, and may offer only some of the
file's tools (`tools: [names]`). Files whose name starts with `heldout_` were gathered after the tuning and are
reported apart.
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
    "｜DSML｜",
    "<start_function_call>",
    "<|tool_call>",
    "<function_calls>",
    "<longcat_",
    "<TOOLCALL>",
    "<|tools_prefix|>",
    "<|action_start|>",
    "<|action_end|>",
    "functools[{",
    "<seed:tool_call>",
    "<tools>",
    "<iquestcoder_tool_call>",
    "<tool_sep>",
    ":opensource>",
    "<steptml:",
    "<param name=",
    "<paramname=",
    "]<]minimax[>[<",
    "<｜tool_call",
    "<seed:think>",
    "<|close|>message<|sep|>",
    "<|open|>call tool=",
    "<|open|>argument",
    "]<]minimax[>[",
    "<ifm|",
    "<minimax:",
    "<invoke",
    '"arguments"',
    "```json",
    "<|START_ACTION|>",
    "<|START_THINKING|>",
    "<|START_RESPONSE|>",
    "<|START_TEXT|>",
    "<|open|>tools<|sep|>",
    "<atem:function_calls>",
    "<|eom|>",
    "<|eot|>",
    "<|open|>call",
    "<|open|>response<|sep|>",
    "<|close|>call<|sep|>",
    "<|END_TEXT|>",
    "<dots_function_call>",
    "<tool:",
    "<function_call>",
    "<|function_call|>",
    "<|role_sep|>",
    "｜GCML｜",
    "<|plamo:",
    "<|im_end|>",
    "<|plugin|>",
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
    tools: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    """The tools offered (name -> schema)."""
    source: str = "sunwell"
    """Where the case comes from: `sunwell` (written from the documentation) or the project it was ported from."""
    held_out: bool = False
    skip_reason: str = ""
    """Why the case is kept but not read (it tests a parser's internals, or its template's state does not apply)."""
    known_miss: str = ""
    """Why Sunwell does not yet read the case as expected (read, reported, expected to fail until the reader learns it)."""
    template_state: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the upstream test set up besides the text (thinking opened by the template, the last message)."""


def tools() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((HERE / "tools.yaml").read_text(encoding="utf-8"))


def cases() -> list[Case]:
    """The cases written from each family's documentation (the top folder)."""
    offered = tools()
    out = []
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "tools.yaml":
            continue
        for name, case in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            out.append(_case(name, case, fmt=path.stem, offered=offered))
    return out


def ported_cases(*, held_out: bool | None = None, skipped: bool = False) -> list[Case]:
    """The public parsers' own cases (`ported/`, a project's file or a folder of its test files); `held_out` picks
    the tuning set (False) or the held-out one; `skipped` adds the cases kept with a `skip_reason`."""
    out = []
    for path in sorted((HERE / "ported").glob("**/*.yaml")):
        project = path.parent.name if path.parent.name != "ported" else path.stem
        apart = project.startswith("heldout_")
        if held_out is not None and apart != held_out:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        schemas = data.get("tools") or {}
        for name, case in data["cases"].items():
            if case.get("skip_reason") and not skipped:
                continue
            listed = case.get("tools", schemas)
            offered = listed if isinstance(listed, dict) else {n: schemas[n] for n in listed}
            out.append(_case(f"{path.stem}: {name}" if project != path.stem else name, case, fmt=case["format"],
                             offered=offered, source=project.removeprefix("heldout_"), held_out=apart,
                             skip_reason=case.get("skip_reason", ""), known_miss=case.get("known_miss", ""),
                             template_state=case.get("template_state") or {}))
    return out


def _case(name: str, case: dict[str, Any], *, fmt: str, offered: dict[str, Any], **more: Any) -> Case:
    shown = case.get("shown", "")
    return Case(
        format=fmt,
        name=name,
        text=case.get("text", ""),
        calls=[next(iter(call.items())) for call in case.get("calls") or []],
        shown=shown,
        thinking=case.get("thinking", ""),
        cut_off=case.get("cut_off", False),
        allowed=tuple(m for m in LEAK_MARKERS if m in shown),
        tools=offered,
        **more,
    )


def leaks(case: Case, shown: str) -> list[str]:
    return [m for m in LEAK_MARKERS if m in shown and m not in case.allowed]


def collapsed(text: str) -> str:
    return " ".join(text.split())
