"""Lens files: schema errors at exact positions, editor features, the registry on real files, `lens check`."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

from sunwell.lens.check import check_files
from sunwell.lens.language import code_lenses, completions, hover, symbols
from sunwell.lens.loader import Range, load_lens
from sunwell.lens.registry import LensRegistry, narrow
from sunwell.lens.schema import ToolPolicy, render_command
from sunwell.lens.vocabulary import CORE_TOOLS, CommandDoc
from sunwell.tools.base import Trust

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "code-review.lens"

GOOD = """\
name: reviewer
description: Reviews code.
skills:
  - name: review
    description: Review a file.
    parameters:
      type: object
      properties:
        path: {type: string}
  - name: tests
    description: Run tests.
    command: pytest {path}
    parameters:
      type: object
      properties:
        path: {type: string}
tool_policy:
  trust_level: read_only
  allowed_tools: [read_file, review]
"""


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def only(text: str, known_tools: tuple[str, ...] = ()):
    result = load_lens(dedent(text), "t.lens", known_tools)
    assert result.lens is None
    assert len(result.diagnostics) == 1, result.diagnostics
    return result.diagnostics[0]


def cursor(text: str) -> tuple[str, int, int]:
    """The text without its `‸` marker, and the marker's line and column."""
    text = dedent(text)
    index = text.index("‸")
    before = text[:index]
    return text[:index] + text[index + 1:], before.count("\n"), index - (before.rfind("\n") + 1)


def labels(text: str, **options) -> list[str]:
    return [item.label for item in completions(*cursor(text), **options)]


# -- loading ---------------------------------------------------------------------------------------------------


def test_good_lens_loads_with_positions():
    result = load_lens(GOOD, "good.lens")
    assert result.diagnostics == []
    assert result.lens.name == "reviewer" and [s.name for s in result.lens.skills] == ["review", "tests"]
    assert result.positions.name == Range(0, 6, 0, 14)
    first, second = result.positions.skills
    assert first.name_range == Range(3, 10, 3, 16)
    assert first.range == Range(3, 4, 8, 28)
    assert second.name_range == Range(9, 10, 9, 15)


def test_example_lens_loads_without_diagnostics():
    result = load_lens(EXAMPLE.read_text(), str(EXAMPLE))
    assert result.diagnostics == []
    assert result.lens.name == "code-review"
    assert result.lens.skill("run_tests").command == "python -m pytest -q {target}"
    assert result.lens.skill("review_file").parameters["required"] == ["path"]
    assert result.lens.tool_policy.trust_level == "shell"


def test_missing_key_points_at_parent_key():
    d = only("""
        name: x
        description: d
        tool_policy:
          rate_limits:
            bogus_limit: 3
        skills:
          - name: a
    """.replace("            bogus_limit: 3\n", "            shell_per_min: 3\n"))
    assert (d.code, d.message) == ("missing-key", "Missing required key 'description' in skills[0]")
    assert (d.line, d.col, d.end_line, d.end_col) == (6, 4, 6, 8)  # the item's first key, `name`


def test_missing_top_level_key():
    d = only("name: x\n")
    assert (d.code, d.line, d.col, d.end_col) == ("missing-key", 0, 0, 4)
    assert "description" in d.message


def test_extra_key_points_at_the_key():
    d = only("""
        name: x
        description: d
        tool_policy:
          rate_limits:
            shel_per_min: 3
    """)
    assert d.code == "unknown-key"
    assert (d.line, d.col, d.end_line, d.end_col) == (4, 4, 4, 16)
    assert "did you mean 'shell_per_min'" in d.message


def test_wrong_value_points_at_the_value():
    d = only("""
        name: x
        description: d
        tool_policy:
          trust_level: root
    """)
    assert (d.code, d.line, d.col, d.end_line, d.end_col) == ("schema", 3, 15, 3, 19)
    assert d.message.startswith("tool_policy.trust_level: Input should be 'discovery'")


def test_bad_skill_name_and_bad_list_item():
    d = only("""
        name: x
        description: d
        skills:
          - name: 9lives
            description: d
    """)
    assert (d.line, d.col, d.end_col) == (3, 10, 16) and "start with a letter" in d.message
    d = only("""
        name: x
        description: d
        tool_policy:
          blocked_paths: [a, {b: c}]
    """)
    assert (d.line, d.col, d.end_col) == (3, 21, 27) and d.message.startswith("tool_policy.blocked_paths[1]")


def test_yaml_syntax_error_position():
    d = only("""
        name: x
        description: d: e
    """)
    assert (d.code, d.line, d.col, d.end_line, d.end_col) == ("yaml-syntax", 1, 14, 1, 15)
    assert d.message == "YAML syntax error: mapping values are not allowed here"
    result = load_lens("", "t.lens")
    assert result.lens is None and result.diagnostics[0].code == "empty-file"


def test_unknown_tool_is_an_error():
    d = only("""
        name: x
        description: d
        skills:
          - name: lint
            description: d
        tool_policy:
          allowed_tools:
            - lint
            - read_file
            - reed_file
    """)
    assert (d.code, d.severity, d.line, d.col, d.end_col) == ("unknown-tool", "error", 9, 6, 15)
    assert "did you mean 'read_file'" in d.message
    result = load_lens(dedent("""
        name: x
        description: d
        tool_policy: {allowed_tools: [fetch_url]}
    """), "t.lens", known_tools=("fetch_url",))
    assert result.diagnostics == [] and result.lens is not None


def test_invalid_parameters_schema():
    d = only("""
        name: x
        description: d
        skills:
          - name: a
            description: d
            parameters:
              type: object
              properties:
                path: {type: strin}
    """)
    assert d.code == "invalid-parameters"
    assert (d.line, d.col, d.end_line, d.end_col) == (8, 21, 8, 26)  # `strin`, inside the parameters node
    d = only("""
        name: x
        description: d
        skills:
          - name: a
            description: d
            parameters: {type: string}
    """)
    assert (d.code, d.line, d.col, d.end_col) == ("invalid-parameters", 5, 23, 29)
    assert "type must be 'object'" in d.message


def test_duplicate_skill_at_the_second_one():
    d = only("""
        name: x
        description: d
        skills:
          - name: a
            description: d
          - name: b
            description: d
          - name: a
            description: d
    """)
    assert (d.code, d.line, d.col, d.end_col) == ("duplicate-skill", 7, 10, 11)


def test_duplicate_key_is_an_error():
    d = only("""
        name: x
        description: d
        tool_policy:
          trust_level: shell
          trust_level: full
    """)
    assert (d.code, d.line, d.col, d.end_line, d.end_col) == ("duplicate-key", 4, 2, 4, 13)
    assert "first on line 4" in d.message


def test_merge_keys_are_not_duplicates():
    result = load_lens(dedent("""
        name: x
        description: d
        skills:
          - &base {name: a, description: d}
          - {<<: *base, name: b}
    """), "t.lens")
    assert result.diagnostics == [] and [s.name for s in result.lens.skills] == ["a", "b"]


def test_unknown_placeholder_points_inside_the_command():
    d = only("""
        name: x
        description: d
        skills:
          - name: a
            description: d
            command: grep -rn {pattern} ${HOME} {a,b}
            parameters: {type: object, properties: {pattern: {type: string}}}
          - name: b
            description: d
            command: echo {nothing}
    """)
    assert (d.code, d.line, d.col, d.end_col) == ("unknown-placeholder", 9, 18, 27)
    assert d.message == "Placeholder {nothing} names no parameter (declared: none)"


def test_version_number_stays_text_and_alias_bombs_are_refused():
    result = load_lens("name: x\ndescription: d\nversion: 1.10\n", "t.lens")
    assert result.lens.version == "1.10"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
    result = load_lens(bomb, "t.lens")
    assert [d.code for d in result.diagnostics] == ["too-complex"]


def test_render_command_quotes_arguments():
    assert render_command("grep -n {pattern} {path} ${HOME}", {"pattern": "a b; rm -rf /", "path": None}) == \
        "grep -n 'a b; rm -rf /'  ${HOME}"


# -- completion ------------------------------------------------------------------------------------------------


def test_top_level_key_completion_skips_present_keys():
    found = labels("""
        name: x
        ‸
        description: d
    """)
    assert found == ["version", "instructions", "skills", "tool_policy"]
    item = next(i for i in completions(*cursor("name: x\nsk‸\n")) if i.label == "skills")
    assert (item.label, item.insert_text, item.replace_from_col, item.kind) == ("skills", "skills:", 0, "key")
    assert "Skills the model can call" in item.documentation


def test_skill_key_completion_mid_typing():
    # not valid YAML (an item with an unfinished key), yet the context is clear from the indentation
    text = """
        name: x
        skills:
          - name: a
            descr‸
        tool_policy:
    """
    assert labels(text) == ["description", "instructions", "parameters", "command"]
    assert labels("skills:\n  - name: a\n    description: b\n  - ‸\n") == \
        ["name", "description", "instructions", "parameters", "command"]
    assert labels("skills:\n- name: a\n  ‸\n") == ["description", "instructions", "parameters", "command"]


def test_tool_policy_and_rate_limit_keys():
    assert labels("tool_policy:\n  trust_level: shell\n  ‸") == \
        ["allowed_tools", "blocked_paths", "command_allowlist", "rate_limits"]
    assert labels("tool_policy:\n  rate_limits:\n    writes_per_min: 1\n    ‸") == \
        ["tool_calls_per_min", "shell_per_min", "bytes_written"]


def test_trust_level_values():
    items = completions(*cursor("tool_policy:\n  trust_level: wo‸"))
    assert [i.label for i in items] == ["discovery", "read_only", "workspace", "shell", "full"]
    assert items[0].kind == "value" and items[0].replace_from_col == 15


def test_tool_names_in_allowed_tools():
    text = """
        skills:
          - name: lint
            description: d
        tool_policy:
          allowed_tools:
            - read_file
            - ‸
    """
    assert labels(text) == [*CORE_TOOLS, "lint"]
    assert labels("tool_policy:\n  allowed_tools: [read_file, wr‸", known_tools=("fetch",)) == [*CORE_TOOLS, "fetch"]
    items = completions(*cursor("tool_policy:\n  allowed_tools:\n    ‸"))
    assert items[0].insert_text == "- list_files" and items[0].kind == "tool"


def test_command_completion_only_inside_instructions():
    block = """
        name: x
        instructions: |
          First read the files.
          Then tell the user about ::sk‸
    """
    items = completions(*cursor(block))
    assert [i.label for i in items][:3] == ["::help", "::skills", "::lens"]
    assert items[1].kind == "command" and items[1].replace_from_col == 27 and items[1].detail == "::skills"
    assert labels("skills:\n  - name: a\n    instructions: Use ::‸") [0] == "::help"
    assert labels("name: x\ndescription: see ::‸") == []
    assert labels("instructions: |\n  std::‸") == []
    own = (CommandDoc("hello", "::hello", "Say hello."),)
    assert labels("instructions: ::‸", commands=own) == ["::hello"]


# -- hover, symbols, code lenses -------------------------------------------------------------------------------


def test_hover_on_keys_tools_trust_and_commands():
    text = GOOD + "instructions: Try ::skills first.\n"
    assert hover(text, 17, 4).startswith("**`trust_level`** — tool_policy key\n\nCap on the trust level")
    assert "Tool name of the skill" in hover(text, 3, 6)  # `name` inside a skill
    assert "Name of the lens" in hover(text, 0, 1)
    tool = hover(text, 18, 20)
    assert tool.startswith("**`read_file`** — core tool") and "Needs trust `read_only`" in tool
    assert hover(text, 17, 17).startswith("**`read_only`** — trust level")
    assert hover(text, 18, 32) == "**`review`** — skill of this lens\n\nReview a file."
    assert hover(text, 19, 20).startswith("**`::skills`** — chat command")
    assert hover(text, 7, 8) is None  # `properties` belongs to JSON Schema, not to the lens format


def test_symbols():
    (lens,) = symbols(GOOD)
    assert (lens.name, lens.kind, lens.detail) == ("reviewer", "module", "Reviews code.")
    assert lens.range == Range(0, 0, 18, 36) and lens.selection_range == Range(0, 6, 0, 14)
    assert [(s.name, s.kind, s.selection_range) for s in lens.children] == [
        ("review", "function", Range(3, 10, 3, 16)), ("tests", "function", Range(9, 10, 9, 15))]
    assert lens.children[1].range == Range(9, 4, 15, 28)
    assert symbols("name: [") == []


def test_code_lenses():
    items = code_lenses(GOOD, "/w/good.lens")
    assert [(i.title, i.command, i.arguments, i.range.line) for i in items] == [
        ("Use this lens", "sunwell.useLens", ["/w/good.lens"], 0),
        ("Run skill", "sunwell.runSkill", ["/w/good.lens", "review"], 3),
        ("Run skill", "sunwell.runSkill", ["/w/good.lens", "tests"], 9)]


# -- narrowing -------------------------------------------------------------------------------------------------


def test_narrow_never_widens():
    assert narrow(None, Trust.workspace, None) == (Trust.workspace, None)
    assert narrow(ToolPolicy(trust_level="full"), Trust.read_only, None) == (Trust.read_only, None)
    assert narrow(ToolPolicy(trust_level="discovery"), Trust.shell, None) == (Trust.discovery, None)
    wide = ToolPolicy(allowed_tools=["read_file", "write_file", "run_command"])
    assert narrow(wide, Trust.full, ["read_file"]) == (Trust.full, {"read_file"})
    assert narrow(wide, Trust.full, None) == (Trust.full, {"read_file", "write_file", "run_command"})
    assert narrow(ToolPolicy(), Trust.shell, ["list_files"]) == (Trust.shell, {"list_files"})
    assert narrow(ToolPolicy(allowed_tools=[]), Trust.shell, ["list_files"]) == (Trust.shell, set())


# -- registry --------------------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))
    return path


def test_registry_finds_workspace_and_user_lenses(tmp_path):
    ws, user = tmp_path / "ws", tmp_path / "config" / "lenses"
    write(ws / "a.lens", "name: alpha\ndescription: d\n")
    write(ws / "deep" / "er" / "b.lens", "name: beta\ndescription: d\n")
    write(ws / "node_modules" / "x" / "c.lens", "name: hidden\ndescription: d\n")
    write(ws / ".git" / "d.lens", "name: hidden\ndescription: d\n")
    write(user / "u.lens", "name: alpha\ndescription: from the user\n")
    write(user / "v.lens", "name: user-only\ndescription: d\n")
    registry = LensRegistry(ws, user)
    assert [p.name for p in registry.paths()] == ["a.lens", "b.lens", "u.lens", "v.lens"]
    assert registry.get("alpha").description == "d"  # the workspace wins a name clash
    assert registry.get("user-only") is not None and registry.get("hidden") is None
    assert registry.get("deep/er/b.lens").name == "beta"
    assert registry.get(user / "u.lens").description == "from the user"
    outside = write(tmp_path / "elsewhere" / "o.lens", "name: outside\ndescription: d\n")
    assert registry.get(str(outside)).name == "outside"


def test_registry_keeps_last_valid_version(tmp_path):
    path = write(tmp_path / "r.lens", "name: review\ndescription: first\n")
    registry = LensRegistry(tmp_path)
    assert registry.get("review").description == "first"

    path.write_text("name: review\ndescription: second\ntool_policy: {allowed_tools: [nope]}\n")
    result = registry.reload(path)
    assert result.lens is None
    assert registry.get("review").description == "first"  # the bad edit is not activated
    assert [(d.code, d.line) for d in registry.diagnostics(path)] == [("unknown-tool", 2)]

    path.write_text("name: review\ndescription: third\n")
    assert registry.reload(path).lens.description == "third"
    assert registry.get("review").description == "third" and registry.diagnostics(path) == []

    path.unlink()
    assert registry.reload(path) is None and registry.get("review") is None and registry.paths() == []


async def test_watch_reloads_on_disk_change(tmp_path):
    path = write(tmp_path / "w.lens", "name: watched\ndescription: before\n")
    registry = LensRegistry(tmp_path)
    stop, seen = asyncio.Event(), asyncio.Event()
    changes = []

    def on_change(changed, result):
        changes.append((changed, result))
        if result is not None and result.lens is not None and result.lens.description == "after":
            seen.set()

    task = asyncio.create_task(registry.watch(stop, on_change, debounce=200))
    try:
        for _ in range(20):  # the watcher starts in the background: write until it sees a change
            path.write_text("name: watched\ndescription: after\n")
            try:
                await asyncio.wait_for(seen.wait(), 0.5)
                break
            except TimeoutError:
                continue
        assert seen.is_set()
        assert registry.get("watched").description == "after"
        assert changes[-1][0] == path.resolve()
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


# -- lens check ------------------------------------------------------------------------------------------------


def test_check_files_format(tmp_path):
    bad = write(tmp_path / "bad.lens", """
        name: x
        description: d
        tool_policy:
          trust_level: root
    """)
    lines, had_error = check_files([EXAMPLE, bad, tmp_path / "missing.lens"])
    assert had_error
    assert lines[0] == (f"{bad}:4:16: error: tool_policy.trust_level: Input should be 'discovery', 'read_only', "
                        "'workspace', 'shell' or 'full'")
    assert lines[1] == f"{tmp_path / 'missing.lens'}:1:1: error: cannot read: No such file or directory"
    assert check_files([EXAMPLE]) == ([], False)
