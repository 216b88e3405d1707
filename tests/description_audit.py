"""The tool description audit: does a tool's description give a model what it needs to call the tool well?

Five checks, each scored 0 to 1; a tool's score is their mean:
1. purpose — the first sentence says what the tool does (a real sentence: 4 to 40 words, not just the name);
2. when to use — it says when or why to reach for it ("Use it to…", "before…", "instead of…");
3. parameters — every parameter is documented (a description in the schema, or named in the text) and typed;
4. example — it shows a call ("Example: {…}", "e.g."), the single best help for a small model;
5. limits — it states limits or failure modes (sizes, what it cannot do, what happens on error).
Small models lean on descriptions more than large ones; a built-in tool must score at least 0.6 (a test).
"""

from __future__ import annotations

import re
from typing import Any

from sunwell.wire.messages import ToolSpec

PASSING_SCORE = 0.6
_USAGE = re.compile(
    r"\buse (?:it|this|them)\b|\buse (?:when|for|to|before|after|instead)\b|\bwhen you\b|\bbefore\b|"
    r"\binstead\b|\bprefer\b|\bin order to\b|\bso (?:that|you)\b|\buseful (?:for|to|when)\b|\bto (?:find|check|see|"
    r"learn|know)\b", re.IGNORECASE)
_EXAMPLE = re.compile(r"\bexamples?\b|\be\.g\.|\bfor instance\b|\{\s*\"", re.IGNORECASE)
_LIMITS = re.compile(
    r"\bat most\b|\bup to\b|\blimit|\bmaximum\b|\bmax\b|\bcannot\b|\bcan't\b|\bcan ?not\b|\bnever\b|\berror|"
    r"\bfail|\bnot allowed\b|\bonly\b|\bmust\b|\btruncat|\bcut\b|\bskipped\b|\bblocked\b|\btimeout\b|"
    r"\bis not\b|\bare not\b|\bdoes not\b|\bno (?:network|input)\b", re.IGNORECASE)


def audit_tool(spec: ToolSpec) -> tuple[float, list[str]]:
    """(score in 0..1, one finding per check that is not fully met)."""
    checks = [_purpose(spec), _usage(spec), _parameters(spec), _example(spec), _limits(spec)]
    score = round(sum(s for s, _ in checks) / len(checks), 2)
    return score, [finding for s, finding in checks if s < 1 and finding]


def _first_sentence(text: str) -> str:
    match = re.search(r"(?<=[.!?])\s", text.strip())
    return text.strip()[:match.start()] if match else text.strip()


def _purpose(spec: ToolSpec) -> tuple[float, str]:
    first = _first_sentence(spec.description)
    words = re.findall(r"[\w'-]+", first)
    if not words:
        return 0.0, "purpose: the description is empty; start with one sentence saying what the tool does"
    if {w.lower() for w in words} <= set(re.split(r"[_\W]+", spec.name.lower())):
        return 0.0, "purpose: the description only repeats the tool's name"
    if len(words) < 4:
        return 0.5, f"purpose: the first sentence ({first!r}) is too short to say what the tool does"
    if len(words) > 40:
        return 0.5, "purpose: the first sentence is long; say what the tool does in one short sentence first"
    return 1.0, ""


def _usage(spec: ToolSpec) -> tuple[float, str]:
    if _USAGE.search(spec.description):
        return 1.0, ""
    return 0.0, "when to use: say when to call it (e.g. 'Use it to find … before reading')"


def _parameters(spec: ToolSpec) -> tuple[float, str]:
    props: dict[str, Any] = spec.parameters.get("properties") or {}
    if not props:
        return 1.0, ""
    missing, untyped, score = [], [], 0.0
    for name, schema in props.items():
        schema = schema if isinstance(schema, dict) else {}
        described = bool(str(schema.get("description", "")).strip()) or re.search(
            rf"(?<![\w]){re.escape(name)}(?![\w])", spec.description) is not None
        typed = any(k in schema for k in ("type", "enum", "const", "anyOf", "oneOf", "$ref"))
        score += (0.5 if described else 0) + (0.5 if typed else 0)
        if not described:
            missing.append(name)
        if not typed:
            untyped.append(name)
    problems = ([f"undocumented: {', '.join(missing)}"] if missing else []) + (
        [f"no type: {', '.join(untyped)}"] if untyped else [])
    return score / len(props), ("parameters: " + "; ".join(problems)) if problems else ""


def _example(spec: ToolSpec) -> tuple[float, str]:
    if _EXAMPLE.search(spec.description):
        return 1.0, ""
    props = (spec.parameters.get("properties") or {}).values()
    if any(isinstance(p, dict) and ("examples" in p or _EXAMPLE.search(str(p.get("description", ""))))
           for p in props):
        return 0.5, "example: only parameters have examples; add a whole call, e.g. 'Example: {\"path\": …}'"
    return 0.0, "example: show one call, e.g. 'Example: {\"path\": \"src/app.py\"}'"


def _limits(spec: ToolSpec) -> tuple[float, str]:
    if _LIMITS.search(spec.description):
        return 1.0, ""
    if "default" in spec.description.lower() or any(
            isinstance(p, dict) and "default" in p for p in (spec.parameters.get("properties") or {}).values()):
        return 0.5, "limits: only defaults are stated; say what it cannot do, its size limits, how it fails"
    return 0.0, "limits: say what it cannot do, its size limits, and how it fails"
