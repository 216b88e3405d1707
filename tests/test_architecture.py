"""The floors of server/sunwell and which way their imports point (README "Architecture"), and the size of a module.

Every import counts, the ones inside functions and under `if TYPE_CHECKING:` too: a function-local import still ties
the two modules together, it only hides it, and a type-only import is a dependency a reader must follow all the same.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SERVER

PACKAGE = SERVER / "sunwell"
BOTTOM = {"sunwell.vocabulary", "sunwell.errors", "sunwell.clipping", "sunwell.wire", "sunwell.config",
          "sunwell.commands_spec", "sunwell.model_strings", "sunwell.hidden_text"}
FRONT = ("sunwell.cli", "sunwell.lsp", "sunwell.__main__")
# floor -> what it must never import
FORBIDDEN = {
    "sunwell.models": ("sunwell.tools", "sunwell.lens", "sunwell.agent", *FRONT),
    "sunwell.tools": ("sunwell.models", "sunwell.lens", "sunwell.agent", *FRONT),
    "sunwell.lens": ("sunwell.models", "sunwell.tools", "sunwell.agent", *FRONT),
    "sunwell.agent": FRONT,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SERVER).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The sunwell modules `path` imports, wherever in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("sunwell"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sunwell"):
            found.add(node.module)
            # `from sunwell.tools import base` imports the module sunwell.tools.base
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if (PACKAGE.parent / f"{node.module}.{alias.name}".replace(".", "/")).with_suffix(".py")
                         .exists())  # fmt: skip
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


MODULES = {module_name(path): imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("floor", sorted(FORBIDDEN))
def test_imports_point_down(floor):
    wrong = sorted(f"{module} imports {target}" for module, targets in MODULES.items() if within(module, floor)
                   for target in targets if any(within(target, banned) for banned in FORBIDDEN[floor]))
    assert wrong == []


def on_the_bottom(module: str) -> bool:
    return any(within(module, bottom) for bottom in BOTTOM)


def test_the_bottom_floor_imports_only_itself():
    wrong = sorted(f"{module} imports {target}" for module, targets in MODULES.items() if on_the_bottom(module)
                   for target in targets if not on_the_bottom(target))
    assert wrong == []


def test_no_import_cycles():
    """Between modules, function-local imports included: a cycle means two modules that cannot be read apart."""
    graph = {module: {t for t in targets if t in MODULES and t != module} for module, targets in MODULES.items()}
    # a package's __init__ re-exporting its modules is not a cycle with them
    graph = {m: {t for t in ts if not within(m, t)} for m, ts in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)
    assert [" -> ".join(cycle) for cycle in cycles] == []


def test_the_checker_sees_imports_inside_functions_and_for_types(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sunwell.lsp import server\n"
                      "def f():\n    from sunwell.agent.engine import Engine\n")
    assert imports(source) == {"sunwell.agent.engine", "sunwell.lsp", "sunwell.lsp.server"}


ENGINE_FLOOR = ("sunwell.agent", "sunwell.tools", "sunwell.lens", "sunwell.models", "sunwell.config")
DEFERRED = {
    "sunwell.agent.engine": ("sunwell.agent", "sunwell.lens", "sunwell.models.factory", "sunwell.tools"),
    "sunwell.agent.model_access": ("sunwell.models.factory",),
    "sunwell.cli.main": ("sunwell.cli", "sunwell.lsp.server", "sunwell.errors", "sunwell.agent.logs", "logging"),
    "sunwell.cli.terminal_input": ("readline",),
    "sunwell.config.loading": ("yaml",),
    "sunwell.hooks.runner": ("sunwell.tools.mcp.launch",),
    "sunwell.lens.registry": ("watchfiles",),
    "sunwell.lsp.catalog": ENGINE_FLOOR,
    "sunwell.lsp.chat": ENGINE_FLOOR,
    "sunwell.lsp.configuration": (*ENGINE_FLOOR, "sunwell.lsp.client"),
    "sunwell.lsp.lens_features": ("sunwell.lens",),
    "sunwell.lsp.mcp": ENGINE_FLOOR,
    "sunwell.lsp.processes": ENGINE_FLOOR,
    "sunwell.lsp.worktrees": (*ENGINE_FLOOR, "sunwell.lsp.client", "sunwell.lsp.configuration"),
    "sunwell.lsp.sessions": ENGINE_FLOOR,
    "sunwell.models.providers.anthropic_messages": ("anthropic",),
    "sunwell.models.providers.openai_chat": ("openai",),
    "sunwell.models.providers.window": ("urllib",),
    "sunwell.tools.mcp.hub": ("sunwell.tools.mcp.server",),
    "sunwell.tools.images": ("PIL",),
    "sunwell.tools.learned.document": ("jsonschema_path", "openapi_spec_validator", "referencing"),
    "sunwell.tools.network.convert": ("bs4", "markdownify", "charset_normalizer"),
    "sunwell.tools.secret_store": ("keyring",),
    "sunwell.tools.workspace.file_lock": ("fcntl", "msvcrt"),
}
"""The edges, the only modules that import inside functions, and what each may import there: what start-up must
not pay for (the sidecar answers `initialize`, then `sunwell/models`, before it needs the engine floor, a turn's
machinery, the lens schema, an SDK, the MCP SDK; `sunwell serve` imports none of the CLI's commands). Each module
says why, at the import or in its docstring. Anywhere else an import inside a function only hides a dependency."""


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import inside a function of `path`."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                found.append((child.lineno, "." * child.level + (child.module or "")))
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def misplaced_imports(module: str, path: Path) -> list[str]:
    allowed = DEFERRED.get(module, ())
    return [f"{module}:{line} imports {target} inside a function" for line, target in function_imports(path)
            if not any(within(target, edge) for edge in allowed)]


def test_the_sidecar_answers_initialize_before_it_imports_the_engine_floor():
    """The editor waits for `initialize` (lsp/server.py): the server and its feature modules load nothing of the
    engine floor, YAML or an SDK before it (bench_sidecar.py measures the start)."""
    code = ("import importlib, sys, sunwell.lsp.server as s\n"
            "for name in s.FEATURES: importlib.import_module(name)\n"
            "print(*sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'openai', 'anthropic', 'mcp')"
            f" or any(m == f or m.startswith(f + '.') for f in {ENGINE_FLOOR!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert out.stdout.split() == []


def test_the_sidecar_reads_no_package_metadata_for_pydantic_plugins():
    """Pydantic looks for plugins in every installed package's entry points (~35 ms a start); Sunwell uses none."""
    code = ("import importlib.metadata as m\ncalls = []\nscan = m.entry_points\n"
            "m.entry_points = lambda **kw: calls.append(kw) or scan(**kw)\n"
            "import importlib, sunwell.lsp.server as s, sunwell.agent.engine\n"
            "for name in s.FEATURES: importlib.import_module(name)\nprint(calls)")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**env, "PYTHONPATH": str(PACKAGE.parent)})
    assert out.stdout.strip() == "[]"


def test_an_engine_is_built_without_the_learned_apis_or_the_http_client(tmp_path):
    """The sidecar builds its engine before it answers `sunwell/models`: the learned APIs (with YAML and the HTTP
    client) and the web tools load at a turn's first use, not then."""
    code = ("import sys\nfrom pathlib import Path\nfrom sunwell.agent.engine import Engine\n"
            "from sunwell.config import Settings\n"
            f"engine = Engine(Settings(data_dir={str(tmp_path)!r}), Path({str(tmp_path)!r}))\n"
            "loaded = lambda: sorted(m for m in sys.modules if m.split('.')[0] in ('httpx2', 'yaml')\n"
            "                        or m.startswith(('sunwell.tools.learned', 'sunwell.tools.network.fetch')))\n"
            "print(*loaded())\nprint('--')\nengine.learned.tool_patterns()\nprint(*loaded())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    before, after = out.stdout.split("--")
    assert before.split() == []
    assert "sunwell.tools.learned.registry" in after.split()  # loaded when asked for


def test_imports_are_at_the_top_but_at_the_edges():
    wrong = [problem for path in sorted(PACKAGE.rglob("*.py")) for problem in misplaced_imports(module_name(path), path)]
    assert wrong == []
    idle = sorted(module for module in DEFERRED
                  if not function_imports(PACKAGE.parent / (module.replace(".", "/") + ".py")))
    assert idle == []  # an edge that defers nothing any more leaves the list


def test_the_checker_sees_an_import_inside_a_function(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os\nclass C:\n    def f(self):\n        import json\n        from . import x\n"
                      "async def g():\n    def h():\n        from yaml import safe_load\n")
    assert function_imports(source) == [(4, "json"), (5, "."), (8, "yaml")]
    assert misplaced_imports("sunwell.config.loading", source) == [
        "sunwell.config.loading:4 imports json inside a function", "sunwell.config.loading:5 imports . inside a function"]
    engine = (PACKAGE / "agent" / "engine.py").read_text(encoding="utf-8")
    planted = tmp_path / "engine.py"
    planted.write_text(engine.replace("    def release(self, session: str) -> None:\n",
                                      "    def release(self, session: str) -> None:\n        import json\n", 1))
    assert misplaced_imports("sunwell.agent.engine", planted) == [
        f"sunwell.agent.engine:{engine[:engine.index('    def release(')].count(chr(10)) + 2} imports json inside a function"]


MAX_LINES = 400
"""A module one reads whole (STYLE.md 10); past this it holds two things, and wants a folder of its own."""


def test_no_module_needs_scrolling():
    long = sorted(f"{path.relative_to(PACKAGE)}: {n} lines" for path in PACKAGE.rglob("*.py")
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert long == []


POLICY = ("sunwell.agent.gate", "sunwell.agent.orchestrator")
"""Where calls are judged and run: they read what a tool declares a call touches, never its arguments."""


def argument_names() -> set[str]:
    from sunwell.tools.registry import CORE_TOOLS

    return {name for tool in CORE_TOOLS for name in tool.parameters["properties"]}


def named_arguments(path: Path, names: set[str]) -> list[str]:
    """Every string constant of `path` that is one of `names`: `args.get("path")`, `args["content"]`, a key..."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"line {node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]


@pytest.mark.parametrize("module", POLICY)
def test_the_gate_and_the_orchestrator_name_no_tool_argument_and_not_the_shell(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    assert named_arguments(path, argument_names()) == []
    assert sorted(t for t in MODULES[module] if within(t, "sunwell.tools.handlers.shell")) == []


def test_the_checker_sees_an_argument_named(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('def f(call):\n    """The path."""\n    return call.arguments.get("path"), call.arguments["new_text"], '
                      'f"{call.name} content"\n')
    assert named_arguments(source, argument_names()) == ["line 3: 'path'", "line 3: 'new_text'"]


def test_every_code_the_engine_writes_is_in_the_vocabulary():
    """A notice or error code is a word of the vocabulary (pydantic refuses any other where an event is made): every
    literal code in the package, including those of paths the suite may not reach, is declared there."""
    from typing import get_args

    from sunwell.vocabulary import ErrorCode, NoticeCode

    known = set(get_args(ErrorCode)) | set(get_args(NoticeCode))
    pattern = re.compile(r'code="(\w+)"|ToolFailure\(\s*"(\w+)"|notify\("\w+", "(\w+)"|_NOTICE = "(\w+)"')
    used = {next(g for g in m.groups() if g) for path in PACKAGE.rglob("*.py")
            for m in pattern.finditer(path.read_text(encoding="utf-8"))}
    assert len(used) > 25 and sorted(used - known) == []


# ---- tools are declared from their arguments model (issue 43, item 3) ------------------------------------------

def typed_tools() -> list:
    """Every tool whose arguments Sunwell defines: the core ones, web_search and learn_api."""
    from sunwell.tools.handlers.web import WEB_SEARCH
    from sunwell.tools.learned.registry import LearnedApis
    from sunwell.tools.registry import CORE_TOOLS

    return [*CORE_TOOLS, WEB_SEARCH, LearnedApis(Path(os.devnull)).learn_tool()]


def calls_named(path: Path, name: str) -> list[int]:
    """The lines of `path` that call something named `name` (`name(...)` or `x.name(...)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)]


RAW = {"args", "arguments"}


def raw_reads(path: Path) -> list[int]:
    """Lines of `path` that read a call's arguments out of a dict: `string_arg(...)`, `X.model_validate(args)`,
    `args.get(...)`, `args[...]`."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            owner = getattr(getattr(node.func, "value", None), "id", None)
            given = [getattr(arg, "id", None) for arg in node.args]
            if (name == "string_arg" or (name == "model_validate" and RAW & set(given))
                    or (name == "get" and owner in RAW)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in RAW:
            lines.append(node.lineno)
    return lines


def test_the_checker_sees_a_raw_argument_read(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f(args, ctx):\n    a = string_arg(args, 'x')\n    b = M.model_validate(args)\n"
                      "    c = args.get('y')\n    d = args['z']\n    return M.model_validate(answer), ctx.get('w')\n")
    assert raw_reads(source) == [2, 3, 4, 5]


def test_a_tool_is_declared_from_its_arguments_model_and_says_its_schema_once():
    """`Tool.of(Args, ...)` takes `parameters` and the subject from the model: no definition repeats
    `schema_for_tool()`; a tool is built `Tool.of` or, its schema known only at run time, `Tool.dynamic`, never by
    hand."""
    repeated = sorted(f"{path.relative_to(PACKAGE)}:{line}" for path in PACKAGE.rglob("*.py")
                      if path.relative_to(PACKAGE) != Path("tools/base.py")
                      for line in calls_named(path, "schema_for_tool"))
    assert repeated == []
    by_hand = sorted(f"{path.relative_to(PACKAGE)}:{line}" for path in PACKAGE.rglob("*.py")
                     if path.relative_to(PACKAGE) != Path("tools/base.py") for line in calls_named(path, "Tool"))
    assert by_hand == []
    assert [tool.name for tool in typed_tools() if tool.arguments is None] == []


def test_core_handlers_take_their_arguments_model_never_the_raw_dict():
    """The orchestrator validates a call once and hands the handler (and its preview, stage and cut-off) an instance
    of the tool's arguments model; a handler module reads no argument out of a dict."""
    import typing

    for tool in typed_tools():
        for name in ("handler", "preview", "stage", "cut_off"):
            function = getattr(tool, name)
            if function is None:
                continue
            first = next(iter(typing.get_type_hints(function).values()))
            assert first is tool.arguments, f"{tool.name}.{name} takes {first}, not {tool.arguments.__name__}"
    raw = sorted(f"{path.relative_to(PACKAGE)}:{line}" for path in (PACKAGE / "tools" / "handlers").glob("*.py")
                 for line in raw_reads(path))
    assert raw == []


@pytest.mark.parametrize(("function", "where"), [("canonical_tool_name", "sunwell.agent"),
                                                  ("parse_command", "sunwell.agent"),
                                                  ("coerce_arguments", "sunwell.agent"),
                                                  ("validate_arguments", "sunwell.agent")])
def test_a_call_is_respelled_validated_and_a_command_parsed_in_one_place(function, where):
    sites = sorted(f"{path.relative_to(PACKAGE)}:{line}" for path in PACKAGE.rglob("*.py")
                   if within(module_name(path), where) for line in calls_named(path, function))
    assert len(sites) <= 1, sites


MAX_CONTEXT_FIELDS = 8
"""A tool gets a few capabilities (STYLE.md 16): a new kind of request to the user is a method of the client port
(wire/client.py), never another field of ToolContext."""
MAX_ENGINE_LINES = 250
"""The engine holds what sessions share; how a turn, a model or a front end's request is put together lives in
modules of its own (agent/turn_start.py, agent/model_access.py, agent/mcp_servers.py, agent/api_catalog.py)."""


def test_a_tool_gets_a_handful_of_capabilities():
    from dataclasses import fields

    from sunwell.tools.base import ToolContext

    assert len(fields(ToolContext)) <= MAX_CONTEXT_FIELDS


def class_lines(path: Path, name: str) -> int:
    node = next(n for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef) and n.name == name)
    return node.end_lineno - node.lineno + 1


def test_the_engine_class_is_read_whole():
    assert class_lines(PACKAGE / "agent" / "engine.py", "Engine") <= MAX_ENGINE_LINES


def front_end_modules() -> list[str]:
    return sorted(module for module in MODULES if any(within(module, front) for front in FRONT))


def test_no_front_end_imports_tools():
    """What cli/ and lsp/ need of tools/ comes through the agent (agent/exports.py, agent/logs.py, the facades):
    they translate the engine's port and events, nothing below."""
    wrong = sorted(f"{module} imports {target}" for module in front_end_modules() for target in MODULES[module]
                   if within(target, "sunwell.tools"))
    assert wrong == []


ENGINE_API = {"settings", "workspace", "data_dir", "reconfigure", "aclose", "undo", "lens", "lenses", "grant", "tools",
              "servers", "apis", "background", "model_facts"}
"""What a front end may use of an Engine besides handing it to a `Session` (agent/session.py): its settings and
workspace, the lenses, what tools a trust level and lens give, undo, and the facades of the MCP servers
(agent/mcp_servers.py), the learned APIs (agent/api_catalog.py) and the background processes
(agent/background.py), what models taught (models/model_facts.py)."""


def engine_reaches(path: Path) -> list[str]:
    """`engine.NAME` for every attribute read off an engine in `path` (a name `engine`, `x.engine`, `engine_or_fail(..)`)
    whose NAME is not in ENGINE_API."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        is_engine = (isinstance(value, ast.Name) and value.id == "engine") or (
            isinstance(value, ast.Attribute) and value.attr == "engine") or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "engine_or_fail")
        if is_engine and node.attr not in ENGINE_API:
            found.append(f"line {node.lineno}: engine.{node.attr}")
    return found


def test_no_front_end_reaches_into_the_engine():
    wrong = [f"{module}: {reach}" for module in front_end_modules()
             for reach in engine_reaches(PACKAGE.parent / (module.replace(".", "/") + (
                 "/__init__.py" if (PACKAGE.parent / module.replace(".", "/")).is_dir() else ".py")))]
    assert wrong == []


def test_the_checkers_see_a_field_a_long_class_an_import_and_a_reach(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("class Engine:\n" + "    x = 1\n" * 300 + "def f(ls, engine):\n"
                      "    engine.settings, engine.store, ls.engine.mcp.start(), engine_or_fail(ls).learned\n"
                      "    from sunwell.tools.base import Trust\n")
    assert class_lines(source, "Engine") == 301
    assert sorted(engine_reaches(source)) == ["line 303: engine.learned", "line 303: engine.mcp", "line 303: engine.store"]
    assert "sunwell.tools.base" in imports(source)
