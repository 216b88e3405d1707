"""Fitting tool definitions into a small context window."""

from __future__ import annotations

import pytest

from sunwell.models.fitting import fit_tools, relevance
from sunwell.models.tokens import tools_tokens
from sunwell.tools.registry import CORE_TOOLS
from sunwell.wire.messages import ToolSpec

FILE_TOOLS = ("list_files", "search_files", "read_file", "write_file", "edit_file", "run_command")
SPECS = [tool.spec for tool in CORE_TOOLS if tool.name in FILE_TOOLS]
"""The trimming steps are shown on the file tools; the agent's own tools are left out before them (below)."""
FULL = tools_tokens(SPECS)
READ = "Read a.txt and tell me what it says"


def names(tools):
    return [t.name for t in tools]


def by_name(tools, name):
    return next(t for t in tools if t.name == name)


def test_the_estimate_is_about_four_bytes_a_token():
    spec = ToolSpec(name="x", description="y" * 400, parameters={})
    assert 100 <= tools_tokens([spec]) <= 115


def test_tools_that_fit_are_returned_unchanged():
    tools, notes = fit_tools(SPECS, context_window=FULL * 4, user_text=READ)
    assert tools == SPECS and notes == []


def test_descriptions_are_trimmed_first_least_relevant_first():
    window = (FULL - 150) * 4  # a little too small: only some descriptions need trimming
    tools, notes = fit_tools(SPECS, context_window=window, user_text=READ)
    assert tools_tokens(tools) <= window // 4 and names(tools) == names(SPECS)
    assert len(notes) == 1 and notes[0].startswith("cut the descriptions of")
    # the tool the request is about keeps its whole description
    assert by_name(tools, "read_file").description == by_name(SPECS, "read_file").description
    trimmed = [t for t in tools if t.description != by_name(SPECS, t.name).description]
    assert trimmed and all(t.description.count(". ") == 0 for t in trimmed)


def test_then_optional_parameters_lose_their_descriptions_then_go():
    tools, notes = fit_tools(SPECS, context_window=2200, user_text=READ)
    assert tools_tokens(tools) <= 550 and names(tools) == names(SPECS)
    assert [n.split(" of ")[0] for n in notes] == ["cut the descriptions", "dropped the descriptions",
                                                    "dropped the optional parameters"]
    run = by_name(tools, "run_command")
    assert set(run.parameters["properties"]) == {"command"} and run.parameters["required"] == ["command"]
    # required parameters and their descriptions always stay
    assert by_name(tools, "read_file").parameters["properties"]["path"]["description"]


def test_least_relevant_tools_are_dropped_last_and_the_most_relevant_never():
    tools, notes = fit_tools(SPECS, context_window=1000, user_text=READ)
    assert tools_tokens(tools) <= 250
    assert "read_file" in names(tools) and names(tools) == [n for n in names(SPECS) if n in names(tools)]
    assert notes[-1].startswith("left out ") and "least relevant" in notes[-1]
    tools, _ = fit_tools(SPECS, context_window=10, user_text=READ)
    assert names(tools) == ["read_file"]


@pytest.mark.parametrize(("text", "best"), [
    (READ, "read_file"),
    ("run the tests with pytest", "run_command"),
    ("search for where load_config is defined", "search_files"),
    ("list the files in src", "list_files"),
    ("create a new file hello.py", "write_file"),
])
def test_relevance_is_word_overlap_with_name_and_description(text, best):
    from sunwell.models.fitting import _words

    scores = {spec.name: relevance(spec, _words(text)) for spec in SPECS}
    assert max(scores, key=scores.get) == best


def test_relevance_decides_which_tools_survive():
    tools, _ = fit_tools(SPECS, context_window=1000, user_text="run the tests with pytest")
    assert "run_command" in names(tools)


def test_the_input_is_not_modified():
    before = [spec.model_copy(deep=True) for spec in SPECS]
    fit_tools(SPECS, context_window=500, user_text=READ)
    assert SPECS == before


def test_the_agents_own_tools_are_left_out_before_any_file_tool_loses_a_word():
    every = [tool.spec for tool in CORE_TOOLS if tool.risk != "network"]
    expendable = {tool.name for tool in CORE_TOOLS if tool.expendable}
    assert expendable == {"update_plan", "ask_user", "task", "get_time", "math_eval", "kv_set", "kv_get", "diagnostics",
                          "find_symbol", "find_definition", "find_references"}
    # room for the file tools whole, not for the rest: the conveniences go, the file tools keep every word
    tools, notes = fit_tools(every, context_window=(FULL + 20) * 4, user_text="plan the fix, step by step",
                             expendable=expendable)
    assert tools == SPECS
    left_out = ", ".join(sorted(expendable, key=names(every).index, reverse=True))
    assert notes == [f"left out {left_out} (conveniences) to fit the context window"]
    # a little more room: the one the request is about stays, the least relevant go first
    size = tools_tokens([*SPECS, by_name(every, "update_plan")])
    tools, notes = fit_tools(every, context_window=(size + 20) * 4, user_text="make a plan and update it",
                             expendable=expendable)
    assert names(tools) == [*FILE_TOOLS, "update_plan"] and len(notes) == 1
    # without the word, update_plan is no more precious than the others
    tools, _ = fit_tools(every, context_window=(size + 20) * 4, user_text="what time is it in Tokyo",
                         expendable=expendable)
    assert names(tools) == [*FILE_TOOLS, "get_time"]


def test_a_window_too_small_even_for_one_tool_keeps_one_when_every_tool_is_expendable():
    tools, _ = fit_tools([t.spec for t in CORE_TOOLS if t.expendable], context_window=10,
                         user_text="compute 2 ** 10", expendable={t.name for t in CORE_TOOLS})
    assert names(tools) == ["math_eval"]


@pytest.mark.parametrize(("window", "offered"), [(2_000, False), (128_000, True)])
def test_sunwell_run_offers_the_conveniences_only_when_the_window_allows(sunwell, fake, env, tmp_path, window,
                                                                        offered):
    from fake_provider import Reply

    conveniences = {tool.name for tool in CORE_TOOLS if tool.expendable} - {
        "diagnostics", "find_symbol", "find_definition", "find_references"}  # the editor's: never in a terminal
    folder = tmp_path / "config" / "sunwell"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(f'models:\n  "openai:gpt-4o": {{context_window: {window}}}\n')
    fake.script(Reply(text="it says hello"))
    run = sunwell("run", READ, "--json", "--yes", "--model", "openai:gpt-4o")
    assert run.code == 0, run.stderr
    tools = {tool["function"]["name"] for tool in fake.requests[0].body.get("tools", [])}
    assert "read_file" in tools
    assert (conveniences & tools) == (conveniences if offered else set()), tools


def reference_fit(tools, *, context_window, user_text, expendable=(), topical=()):
    """The fitting as first written: the whole kept list counted again after every step (cubic in the tools). The
    fitting counts only what a step changed (`ToolsTally`); it must choose exactly what this chooses."""
    from sunwell.models.fitting import (
        _first_sentence,
        _without_optional_descriptions,
        _without_optional_parameters,
        _words,
    )

    budget = int(context_window * 0.25)
    words = _words(user_text)
    order = sorted(range(len(tools)), key=lambda i: (relevance(tools[i], words), -i))
    current, dropped = list(tools), []

    def kept():
        return [t for j, t in enumerate(current) if j not in dropped]

    def fits():
        return tools_tokens(kept()) <= budget

    if fits():
        return kept()
    for i in [i for i in order if tools[i].name in expendable
              or (tools[i].name in topical and not relevance(tools[i], words))][:len(tools) - 1]:
        if fits():
            break
        dropped.append(i)
    for trim in (_first_sentence, _without_optional_descriptions, _without_optional_parameters):
        for i in order:
            if fits():
                break
            if i not in dropped:
                current[i] = trim(current[i])
        if fits():
            return kept()
    for i in [i for i in order if i not in dropped][:-1]:
        if fits():
            break
        dropped.append(i)
    return kept()


WORDS = ["read", "file", "pokemon", "type", "berry", "list", "search", "get", "42", "héllo", "x-y", "page"]


def random_tool(rng, i):
    def text(n):
        return " ".join(rng.choice(WORDS) for _ in range(n)) + rng.choice([".", ". More words here.", "! And 7."])

    props = {f"p{j}": {"type": rng.choice(["string", "integer"]), "description": text(rng.randint(1, 8))}
             for j in range(rng.randint(0, 4))}
    required = [name for name in props if rng.random() < 0.4]
    name = f"{rng.choice(WORDS).replace('é', 'e').replace('-', '_')}_{i}"
    return ToolSpec(name=name, description=text(rng.randint(0, 20)),
                    parameters={"type": "object", "properties": props, "required": required})


@pytest.mark.parametrize("seed", range(12))
def test_the_fitting_chooses_what_the_reference_chooses(seed):
    import random

    from sunwell.models.tokens import ToolsTally

    rng = random.Random(seed)
    tools = [random_tool(rng, i) for i in range(rng.randint(1, 60))]
    tally = ToolsTally()
    for tool in tools:
        tally.add(tool)
    assert tally.tokens == tools_tokens(tools)  # the running sums count exactly what the request's JSON costs
    expendable = {t.name for t in tools if rng.random() < 0.2}
    topical = {t.name for t in tools if rng.random() < 0.5}
    text = " ".join(rng.choice(WORDS) for _ in range(3))
    for window in (40, 400, 2_000, 8_000, rng.randint(10, 4 * tools_tokens(tools) + 40)):
        fitted, _ = fit_tools(tools, context_window=window, user_text=text, expendable=expendable, topical=topical)
        assert fitted == reference_fit(tools, context_window=window, user_text=text, expendable=expendable,
                                       topical=topical), (seed, window)
