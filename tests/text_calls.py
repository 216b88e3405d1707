"""Every tool call in a finished text, read as the product reads a reply: through the streaming `CallDetector`,
the whole text as one delta. The tests of the normalizer ask for an `Extraction` (calls, the text left, repairs,
thinking, calls cut off), which this rebuilds from the detector's events."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sunwell.models.base import Notice, TextDelta, ThinkingDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CUT_OFF_NOTICE, CallDetector
from sunwell.models.emulation.found_calls import Extraction, FoundCall, Offered
from sunwell.wire.messages import ToolSpec

_CUT_OFF_NAME = re.compile(r"cut off inside a call to (.*); it was not run\.", re.DOTALL)


def extract_tool_calls(text: str, tools: Iterable[str | ToolSpec] | Offered, *, cut_off: bool = False) -> Extraction:
    detector = CallDetector(tools)
    out = Extraction()
    for event in [*detector.feed(text), *detector.finish(cut_off=cut_off)]:
        match event:
            case TextDelta():
                out.remaining_text += event.text
            case ThinkingDelta():
                out.thinking += event.text
            case ToolCallDone():
                out.calls.append(FoundCall(event.name, event.parsed) if event.parsed is not None
                                 else FoundCall(event.name, {}, raw=event.arguments))
            case Notice(code="tool_call_repaired"):
                out.repairs.append(event.message)
            case Notice(code=code) if code == CUT_OFF_NOTICE:
                out.cut_off.append(_CUT_OFF_NAME.search(event.message)[1])
    return out
