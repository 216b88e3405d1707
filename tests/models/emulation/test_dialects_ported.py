"""Issues 32 and 47: the cases the public parsers (sglang, vLLM, mlx-lm, Ollama, llama.cpp) test their own servers with, read by
Sunwell complete and streamed in any chunking: exactly the calls, no call text in the answer, the prose around the
calls kept (whitespace aside: the projects trim it around calls each their own way), and no call from a reply that
ended inside one. A case kept as a `known_miss` (a format Sunwell does not read yet, saying why) is read and expected
to fail. The corpus is tests/dialects/ported/ (its README says how the cases were ported and where the
projects disagree); a case kept with a `skip_reason` is loaded, counted and not read."""

from __future__ import annotations

import random

import pytest

from dialects.corpus import Case, leaks, ported_cases
from sunwell.models.base import TextDelta, ToolCallDone
from sunwell.models.emulation.call_detector import CallDetector
from text_calls import extract_tool_calls

CASES = ported_cases(held_out=False)
KEPT = ported_cases(held_out=False, skipped=True)
READ = [pytest.param(c, marks=pytest.mark.xfail(reason=c.known_miss, strict=False)) if c.known_miss else c for c in CASES]


def by_id(case: Case) -> str:
    return f"{case.source}: {case.name}"


def same_text(shown: str, expected: str) -> bool:
    return "".join(shown.split()) == "".join(expected.split())


def streamed(case: Case, cuts: list[int]) -> tuple[list, str]:
    detector = CallDetector(case.tools)
    events = []
    for a, b in zip([0, *cuts], [*cuts, len(case.text)], strict=True):
        events += detector.feed(case.text[a:b])
    events += detector.finish(cut_off=case.cut_off)
    calls = [(e.name, e.parsed or {}) for e in events if isinstance(e, ToolCallDone)]  # raw arguments: {}
    return calls, "".join(e.text for e in events if isinstance(e, TextDelta))


def test_every_source_is_ported():
    assert {c.source for c in CASES} >= {"sglang", "vllm", "mlx_lm", "ollama", "llamacpp"}
    assert len(CASES) >= 450


def test_a_skipped_case_keeps_its_data_and_says_why():
    skipped = [c for c in KEPT if c.skip_reason]
    assert len(skipped) >= 100
    assert all(c.source and len(c.skip_reason) > 30 for c in skipped)
    assert {c.name for c in skipped}.isdisjoint({c.name for c in CASES})


@pytest.mark.parametrize("case", READ, ids=by_id)
def test_a_complete_reply(case):
    out = extract_tool_calls(case.text, case.tools, cut_off=case.cut_off)
    assert [(c.name, c.arguments) for c in out.calls] == case.calls
    assert same_text(out.remaining_text, case.shown)
    assert leaks(case, out.remaining_text) == []


@pytest.mark.parametrize("case", READ, ids=by_id)
def test_a_reply_streamed_in_random_chunks(case):
    rng = random.Random(case.name)
    n = len(case.text)
    chunkings = [list(range(1, n)), list(range(3, n, 3))]
    chunkings += [sorted(rng.sample(range(1, n), min(n - 1, rng.randint(1, 30)))) for _ in range(6) if n > 1]
    for cuts in chunkings:
        calls, shown = streamed(case, cuts)
        assert calls == case.calls, cuts
        assert same_text(shown, case.shown), cuts
        assert leaks(case, shown) == [], cuts
