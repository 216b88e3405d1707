"""Argument validation feedback and the coercion of unambiguous type slips."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sunwell.tools.registry import CORE_TOOLS
from sunwell.tools.validation import coerce_arguments, suggest_tool, unknown_tool_error, validate_arguments
from sunwell.vocabulary import canonical_tool_name

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to read, relative to the workspace root."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines."},
        "ratio": {"type": "number"},
        "recursive": {"type": "boolean"},
        "unit": {"type": "string", "enum": ["Celsius", "Fahrenheit"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "options": {"type": "object", "properties": {"depth": {"type": "integer"}}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


# --- coercion -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("given_args", "coerced"), [
    ({"limit": "5"}, {"limit": 5}),
    ({"limit": " 3 "}, {"limit": 3}),
    ({"ratio": "2.5"}, {"ratio": 2.5}),
    ({"ratio": "7"}, {"ratio": 7}),
    ({"ratio": "1e3"}, {"ratio": 1000.0}),
    ({"recursive": "true"}, {"recursive": True}),
    ({"recursive": "False"}, {"recursive": False}),
    ({"tags": '["a", "b"]'}, {"tags": ["a", "b"]}),
    ({"tags": "a.txt"}, {"tags": ["a.txt"]}),
    ({"sizes": "3"}, {"sizes": [3]}),
    ({"sizes": '[1, "2"]'}, {"sizes": [1, 2]}),
    ({"sizes": ["1", 2]}, {"sizes": [1, 2]}),
    ({"options": '{"depth": "2"}'}, {"options": {"depth": 2}}),
    ({"options": {"depth": "2"}}, {"options": {"depth": 2}}),
    ({"unit": "celsius"}, {"unit": "Celsius"}),
    ({"limit": None}, {}),
])
def test_unambiguous_slips_are_coerced_with_a_note_each(given_args, coerced):
    arguments, notes = coerce_arguments(SCHEMA, {"path": "a.txt", **given_args})
    assert arguments == {"path": "a.txt", **coerced}
    assert len(notes) == 1
    name = next(iter(given_args))
    assert notes[0].startswith(f"parameter '{name}")
    assert validate_arguments(SCHEMA, arguments) is None


def test_the_note_says_what_was_converted_to_what():
    _, notes = coerce_arguments(SCHEMA, {"path": "a.txt", "limit": "5"})
    assert notes == ["parameter 'limit': converted string \"5\" to integer 5"]


@pytest.mark.parametrize("given_args", [
    {"path": 5},  # a number is never turned into a string: more likely a confused call than a file named 5
    {"limit": "five"},
    {"limit": "5.5"},
    {"limit": "2.0"},
    {"limit": "-3"},  # converts, but still breaks `minimum`: the model gets the validator's message instead
    {"recursive": "yes"},
    {"recursive": 1},
    {"ratio": "nan"},
    {"ratio": "1e999"},
    {"tags": "[not json"},
    {"tags": '{"a": 1}'},
    {"sizes": "x"},
    {"unit": "kelvin"},
    {"note": None},  # null is allowed here: nothing to fix
    {"extra": "1"},  # unknown parameters are left to the validator
])
def test_ambiguous_or_valid_values_are_left_alone(given_args):
    original = {"path": "a.txt", **given_args}
    arguments, notes = coerce_arguments(SCHEMA, dict(original))
    assert arguments == original and notes == []


def test_a_required_null_is_not_dropped():
    arguments, notes = coerce_arguments(SCHEMA, {"path": None})
    assert arguments == {"path": None} and notes == []


def test_the_input_is_not_modified():
    original = {"path": "a.txt", "limit": "5", "options": {"depth": "2"}}
    coerce_arguments(SCHEMA, original)
    assert original == {"path": "a.txt", "limit": "5", "options": {"depth": "2"}}


def test_an_enum_with_two_case_insensitive_matches_is_ambiguous():
    schema = {"type": "object", "properties": {"mode": {"enum": ["fast", "FAST"]}}}
    assert coerce_arguments(schema, {"mode": "Fast"}) == ({"mode": "Fast"}, [])


def test_integer_wins_over_string_in_a_type_union_only_when_the_string_is_invalid():
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "string"]}}}
    assert coerce_arguments(schema, {"n": "5"}) == ({"n": "5"}, [])  # valid as a string: left alone


@given(st.dictionaries(st.sampled_from(list(SCHEMA["properties"])),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                 st.text(max_size=8), st.lists(st.text(max_size=3), max_size=3))))
def test_coercion_never_breaks_a_valid_call_and_never_invents_parameters(arguments):
    coerced, notes = coerce_arguments(SCHEMA, arguments)
    assert set(coerced) <= set(arguments)
    if validate_arguments(SCHEMA, arguments) is None:
        assert coerced == arguments and notes == []
    changed = [k for k, v in arguments.items() if k not in coerced or coerced[k] != v or type(coerced[k]) != type(v)]
    assert all(any(f"'{k}" in note for note in notes) for k in changed)


def test_core_tools_coerce_the_classic_small_model_slips():
    read_file = next(t for t in CORE_TOOLS if t.name == "read_file")
    arguments, notes = coerce_arguments(read_file.parameters, {"path": "a.txt", "offset": "10", "limit": "20"})
    assert arguments == {"path": "a.txt", "offset": 10, "limit": 20} and len(notes) == 2
    edit_file = next(t for t in CORE_TOOLS if t.name == "edit_file")
    arguments, _ = coerce_arguments(edit_file.parameters,
                                    {"path": "a", "old_text": "x", "new_text": "y", "replace_all": "true"})
    assert arguments["replace_all"] is True


# --- feedback -----------------------------------------------------------------------------------------------

def message(arguments):
    error = validate_arguments(SCHEMA, arguments)
    assert error is not None and error.code == "validation"
    return error.message


def test_valid_arguments_pass():
    assert validate_arguments(SCHEMA, {"path": "a.txt", "limit": 3, "note": None}) is None


def test_wrong_type_names_expected_and_received():
    assert message({"path": "a.txt", "limit": "five"}) == \
        "parameter 'limit' must be integer, got string \"five\""
    assert message({"path": 5}) == "parameter 'path' must be string, got integer 5"
    assert "must be array of string, got object" in message({"path": "a", "tags": {"a": 1}})


def test_enum_lists_the_allowed_values():
    assert message({"path": "a.txt", "unit": "kelvin"}) == \
        "parameter 'unit' must be one of \"Celsius\", \"Fahrenheit\"; got \"kelvin\""


def test_missing_parameter_gives_its_type_and_description():
    assert message({}) == \
        "missing required parameter 'path' (string, File to read, relative to the workspace root.)"


def test_unknown_parameter_lists_the_allowed_names_and_a_close_match():
    text = message({"path": "a.txt", "lmit": 3})
    assert text.startswith("unknown parameter 'lmit'; allowed: path, limit, ratio, recursive, unit")
    assert "did you mean 'limit'?" in text


def test_every_problem_is_reported_at_once_most_relevant_first():
    text = message({"pth": "a.txt", "limit": 0})
    assert text.startswith("missing required parameter 'path'")
    assert "unknown parameter 'pth'" in text and "did you mean 'path'?" in text
    assert "parameter 'limit': 0 is less than the minimum of 1" in text


def test_nested_problems_name_their_path():
    assert message({"path": "a", "sizes": [1, "x"]}) == "parameter 'sizes.1' must be integer, got string \"x\""
    assert message({"path": "a", "options": {"depth": "deep"}}) == \
        "parameter 'options.depth' must be integer, got string \"deep\""


def test_the_suggestion_is_the_signature():
    error = validate_arguments(SCHEMA, {})
    assert error.suggestion.startswith("expected arguments: {path: string, limit?: integer, ratio?: number, ")
    assert "unit?: one of \"Celsius\", \"Fahrenheit\"" in error.suggestion
    assert "tags?: array of string" in error.suggestion


def test_long_values_are_shortened():
    text = message({"path": "a", "limit": "x" * 200})
    assert len(text) < 120 and "x" * 60 not in text and text.endswith("...")


def test_many_problems_are_capped():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(8)}}
    error = validate_arguments(schema, {f"p{i}": "x" for i in range(8)})
    assert error.message.count("must be integer") == 5 and error.message.endswith("and 3 more")


@pytest.mark.parametrize(("problems", "listed", "more"), [(4, 4, ""), (5, 5, ""), (6, 5, "1 more")])
def test_the_cap_lists_five_problems_and_counts_the_rest(problems, listed, more):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(problems)}}
    error = validate_arguments(schema, {f"p{i}": "x" for i in range(problems)})
    shown, _, rest = error.message.partition("; and ")
    each = {f"parameter 'p{i}' must be integer, got string \"x\"" for i in range(problems)}
    assert len(set(shown.split("; ")) & each) == len(shown.split("; ")) == listed and rest == more


def test_the_schemas_of_the_core_tools_are_valid_json_schema():
    for tool in CORE_TOOLS:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)


# --- unknown tools ------------------------------------------------------------------------------------------

def test_an_unknown_name_with_arguments_that_fit_one_tool_points_at_it():
    error = unknown_tool_error("vegetarian_pasta", {"command": "ls"}, CORE_TOOLS)
    assert error.code == "unknown_tool" and error.message == "no tool named 'vegetarian_pasta' is offered"
    assert error.suggestion.startswith("did you mean 'run_command' (your arguments fit it)? available tools: ")


def test_a_file_name_in_place_of_the_tool_name_points_at_the_closest_fitting_tool():
    # read_file and list_files both take {"path": ...}; the name decides among the tools that fit
    assert suggest_tool("read_fil", {"path": "a.txt"}, CORE_TOOLS).name == "read_file"
    assert suggest_tool("list", {"path": "src"}, CORE_TOOLS).name == "list_files"


def test_a_misspelt_name_without_fitting_arguments_gets_the_closest_name():
    error = unknown_tool_error("readfile", {"file": "a.txt"}, CORE_TOOLS)
    assert error.suggestion.startswith("did you mean 'read_file' (the closest name)?")


def test_nothing_close_lists_the_tools_only():
    error = unknown_tool_error("zzz", {}, CORE_TOOLS)
    assert error.suggestion == "available tools: " + ", ".join(t.name for t in CORE_TOOLS)
    assert unknown_tool_error("x", {}, []).suggestion == "available tools: none"


@pytest.mark.parametrize(("written", "meant"), [
    ("Travel itinerary Generator", "travel_itinerary_generator"),
    ("functions.read_file", "read_file"),
    ("math.factorial", "math_factorial"),
    ("Read-File", "read_file"),
    ("read_file", None),  # already right: nothing to repair
    ("read_files", None),  # a different word is not a spelling variant
])
def test_tool_names_that_differ_only_in_spelling_are_recognised(written, meant):
    assert canonical_tool_name(written, ["read_file", "travel_itinerary_generator", "math_factorial"]) == meant


def test_an_ambiguous_spelling_is_not_repaired():
    assert canonical_tool_name("Read File", ["read_file", "READ_FILE"]) is None
