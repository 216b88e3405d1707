"""The tool description audit: five checks, and every built-in tool passes."""

from __future__ import annotations

import pytest

from description_audit import PASSING_SCORE, audit_tool
from sunwell.tools.registry import CORE_TOOLS
from sunwell.wire.messages import ToolSpec

PARAMS = {"type": "object", "properties": {"path": {"type": "string", "description": "File to read."}},
          "required": ["path"]}
GOOD = ("Read a text file from the workspace. Use it before answering questions about a file. "
        "At most 2,000 lines; binary files cannot be read. Example: {\"path\": \"src/app.py\"}.")


def audit(description, parameters=PARAMS, name="read_file"):
    return audit_tool(ToolSpec(name=name, description=description, parameters=parameters))


@pytest.mark.parametrize("tool", CORE_TOOLS, ids=lambda t: t.name)
def test_every_built_in_tool_scores_at_least_the_passing_score(tool):
    score, findings = audit_tool(tool.spec)
    assert score >= PASSING_SCORE, findings


def test_a_complete_description_scores_one():
    assert audit(GOOD) == (1.0, [])


def test_an_empty_description_fails_every_text_check():
    score, findings = audit("", {"type": "object", "properties": {"x": {}}})
    assert score == 0.0
    assert [f.split(":")[0] for f in findings] == ["purpose", "when to use", "parameters", "example", "limits"]


def test_a_description_that_repeats_the_name_says_nothing():
    _, findings = audit("Read file.")
    assert findings[0].startswith("purpose: the description only repeats")


@pytest.mark.parametrize(("description", "check"), [
    ("Reads it. Use it before answering. At most 2,000 lines. Example: {\"path\": \"a\"}.", "purpose"),
    ("Read a text file from the workspace. At most 2,000 lines. Example: {\"path\": \"a\"}.", "when to use"),
    ("Read a text file from the workspace. Use it before answering. At most 2,000 lines.", "example"),
    ("Read a text file from the workspace. Use it before answering. Example: {\"path\": \"a\"}.", "limits"),
])
def test_each_check_finds_what_is_missing(description, check):
    score, findings = audit(description)
    assert [f.split(":")[0] for f in findings] == [check]
    assert 0.6 <= score < 1


def test_parameters_must_be_described_and_typed():
    parameters = {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"description": "Lines"},
                                                   "mode": {"enum": ["a", "b"]}}}
    score, findings = audit(GOOD.replace('{"path": "src/app.py"}', "{}"), parameters)
    assert findings == ["parameters: undocumented: path, mode; no type: limit"] and score == 0.9


def test_a_parameter_named_in_the_description_is_documented():
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    assert audit("Read a file by its `path` from the workspace. Use it first. At most 10 lines. e.g. x",
                 parameters) == (1.0, [])


def test_a_tool_without_parameters_documents_them_all():
    assert audit(GOOD, {"type": "object", "properties": {}}) == (1.0, [])


def test_examples_only_in_parameters_count_half():
    parameters = {"type": "object", "properties": {"glob": {"type": "string", "description": "e.g. \"*.py\""}}}
    score, findings = audit("List files in the workspace. Use it first. At most 2,000 entries.", parameters)
    assert score == 0.9 and findings[0].startswith("example: only parameters")


def test_defaults_alone_are_half_a_limit():
    parameters = {"type": "object", "properties": {"n": {"type": "integer", "description": "How many",
                                                         "default": 5}}}
    score, findings = audit("Count the lines of a file here. Use it to size a file. Example: {\"n\": 3}.",
                            parameters)
    assert score == 0.9 and findings[0].startswith("limits: only defaults")
