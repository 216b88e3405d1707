"""Load a `.lens` file into a `Lens`, with every problem as a diagnostic at an exact source range.

PyYAML's composer gives a node tree with marks; the data is constructed from that same tree, so a pydantic error's
`loc` (or a `lens_problems` one) can be walked back to the node it is about. Lines and columns are 0-based, like
LSP, and count code points (the LSP adapter converts to UTF-16 when the client wants that).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sunwell.hidden_text import describe, hidden_runs
from sunwell.lens.schema import Lens, did_you_mean, lens_problems, section_at

Severity = Literal["error", "warning", "info"]
MAX_NODES = 20_000  # aliases can make a small file expand enormously; refuse before validating it


@dataclass(frozen=True)
class Range:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Diagnostic:
    line: int
    col: int
    end_line: int
    end_col: int
    severity: Severity
    message: str
    code: str

    @property
    def range(self) -> Range:
        return Range(self.line, self.col, self.end_line, self.end_col)


@dataclass(frozen=True)
class SkillPosition:
    name: str
    name_range: Range
    range: Range
    """The whole skill mapping."""
    description: str | None = None


@dataclass
class LensPositions:
    document: Range
    name: Range | None
    """The value of the lens' `name`."""
    skills: list[SkillPosition] = field(default_factory=list)
    lens_name: str | None = None
    description: str | None = None


@dataclass
class LensResult:
    path: str
    lens: Lens | None
    """None when any diagnostic is an error: the lens is not activated."""
    diagnostics: list[Diagnostic]
    positions: LensPositions | None
    """None when the text is not YAML."""


def load_lens(text: str, path: str, known_tools: Iterable[str] = ()) -> LensResult:
    """Parse and validate one lens; `known_tools` are tool names valid in `allowed_tools` besides the core ones
    and the lens' own skills.

    Characters that hide text (sunwell/hidden_text.py) are an error wherever they are: a lens is words for the model
    and for the person who reads it before using it, and those two must read the same thing."""
    result = _load(text, path, known_tools)
    hidden = _hidden_characters(text)
    if not hidden:
        return result
    marked = {(d.line, d.col) for d in hidden}  # YAML refuses a control character: said once, as hidden
    rest = [d for d in result.diagnostics if (d.line, d.col) not in marked]
    return LensResult(path, None, sorted([*hidden, *rest], key=lambda d: (d.line, d.col)), result.positions)


def _hidden_characters(text: str) -> list[Diagnostic]:
    found = []
    for start, end in hidden_runs(text):
        line = text.count("\n", 0, start)
        col = start - (text.rfind("\n", 0, start) + 1)
        count = end - start
        found.append(Diagnostic(line, col, line, col + count, "error",
                                f"{count} invisible character{'s' if count > 1 else ''} ({describe(text[start:end])}):"
                                f" the model would read what a person cannot see; remove {'them' if count > 1 else 'it'}",
                                "hidden-characters"))
    return found


def _load(text: str, path: str, known_tools: Iterable[str]) -> LensResult:
    try:
        root = compose(text)
        # duplicates first: construction flattens `<<` merge keys into the very nodes we inspect
        diagnostics = _duplicate_keys(root) if root is not None else []
        data = construct(root)
    except LensTooComplex:
        message = f"Lens too large or too many aliases (over {MAX_NODES} nodes)"
        return LensResult(path, None, [Diagnostic(0, 0, 0, 1, "error", message, "too-complex")], None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line, mark.column) if mark else (0, 0)
        message = f"YAML syntax error: {exc.problem or exc.context}"
        return LensResult(path, None, [Diagnostic(line, col, line, col + 1, "error", message, "yaml-syntax")], None)
    except yaml.reader.ReaderError as exc:  # a character YAML refuses (a control, U+FFFE): it has no mark
        line = text.count("\n", 0, exc.position)
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1)
        message = f"YAML syntax error: the character U+{exc.character:04X} is not allowed"
        return LensResult(path, None, [Diagnostic(line, col, line, col + 1, "error", message, "yaml-syntax")], None)
    if root is None:
        return LensResult(path, None, [Diagnostic(0, 0, 0, 1, "error", "Empty lens file", "empty-file")], None)
    mapper = _Mapper(text, root)
    positions = lens_positions(root, mapper.lines)
    if not isinstance(data, dict):
        diagnostics.append(mapper.diagnostic(mapper.node_range(root, None),
                                             "A lens file must be a mapping (name, description, skills…)",
                                             "not-a-mapping"))
        return LensResult(path, None, diagnostics, positions)
    version = _child(root, "version")
    if isinstance(version, ScalarNode) and not isinstance(data.get("version"), (str, type(None))):
        data["version"] = version.value  # `version: 1.10` means the text "1.10", not a float
    lens = None
    try:
        lens = Lens.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            diagnostics.extend(mapper.from_pydantic(error))
    for problem in lens_problems(data, known_tools):
        diagnostics.append(mapper.diagnostic(mapper.at(problem.loc), problem.message, problem.code))
    diagnostics.sort(key=lambda d: (d.line, d.col))
    if any(d.severity == "error" for d in diagnostics):
        lens = None
    return LensResult(path, lens, diagnostics, positions)


def compose(text: str) -> Node | None:
    """The node tree of one YAML document (raises yaml.MarkedYAMLError), None for an empty one."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    if root is not None:
        _count_nodes(root)  # aliases can expand a small file enormously (and into cycles)
    return root


def construct(root: Node | None) -> Any:
    return None if root is None else yaml.SafeLoader("").construct_document(root)


class LensTooComplex(Exception):
    """More than MAX_NODES nodes once aliases are followed."""


def _count_nodes(root: Node) -> None:
    stack, seen = [root], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise LensTooComplex
        if isinstance(node, MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


def lens_positions(root: Node, lines: list[str]) -> LensPositions:
    """Ranges for the outline and code lenses (`lines`: the text split on newlines)."""
    positions = LensPositions(_trimmed(root, lines), None, [], None, _scalar(root, "description"))
    name = _child(root, "name")
    if isinstance(name, ScalarNode) and name.value:
        positions.name, positions.lens_name = _node_range(name), name.value
    skills = _child(root, "skills")
    if isinstance(skills, SequenceNode):
        for item in skills.value:
            skill_name = _child(item, "name")
            if isinstance(skill_name, ScalarNode) and skill_name.value:
                positions.skills.append(SkillPosition(skill_name.value, _node_range(skill_name),
                                                      _trimmed(item, lines),
                                                      _scalar(item, "description")))
    return positions


def _duplicate_keys(root: Node) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: already checked where its anchor is
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            first: dict[str, Node] = {}
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in first:
                        line = first[key.value].start_mark.line + 1
                        where = _node_range(key)
                        found.append(Diagnostic(where.line, where.col, where.end_line, where.end_col, "error",
                                                f"Duplicate key '{key.value}' (first on line {line}); only the "
                                                "last one would count", "duplicate-key"))
                    first.setdefault(key.value, key)
                stack.extend((key, value))
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)
    return found


class _Mapper:
    """Turns a `loc` (path of keys and indexes) into a range of the source."""

    def __init__(self, text: str, root: Node) -> None:
        self.text, self.root = text, root
        self.lines = text.split("\n")

    def diagnostic(self, where: Range, message: str, code: str, severity: Severity = "error") -> Diagnostic:
        return Diagnostic(where.line, where.col, where.end_line, where.end_col, severity, message, code)

    def from_pydantic(self, error: dict[str, Any]) -> list[Diagnostic]:
        loc, kind, ctx = tuple(error["loc"]), error["type"], error.get("ctx") or {}
        label = _label(loc)
        if kind == "missing":
            return [self.diagnostic(self.parent_key(loc[:-1]), f"Missing required key '{loc[-1]}'"
                                    + (f" in {_label(loc[:-1])}" if loc[:-1] else ""), "missing-key")]
        if kind == "extra_forbidden":
            model = section_at(loc[:-1])
            keys = list(model.model_fields) if model else []
            expected = f"{did_you_mean(str(loc[-1]), keys)}; expected one of: {', '.join(keys)}" if keys else ""
            return [self.diagnostic(self.at(loc, key=True), f"Unknown key '{loc[-1]}'{expected}", "unknown-key")]
        if kind == "invalid_json_schema":
            return [self.diagnostic(self.at(loc + tuple(ctx.get("path", ()))), error["msg"], "invalid-parameters")]
        if kind == "unknown_placeholder":
            node = self.node(loc)
            return [self.diagnostic(self.inside(node, f"{{{name}}}") or self.at(loc),
                                    f"Placeholder {{{name}}} names no parameter (declared: {ctx['declared']})",
                                    "unknown-placeholder") for name in ctx["placeholders"]]
        return [self.diagnostic(self.at(loc), f"{label}: {error['msg']}", "schema")]

    def node(self, loc: tuple[str | int, ...]) -> Node:
        return _walk(self.root, loc)[1]

    def at(self, loc: tuple[str | int, ...], key: bool = False) -> Range:
        key_node, node = _walk(self.root, loc)
        if key and key_node is not None:
            return _node_range(key_node)
        return self.node_range(node, key_node)

    def parent_key(self, loc: tuple[str | int, ...]) -> Range:
        key_node, node = _walk(self.root, loc)
        if key_node is not None:
            return _node_range(key_node)
        if isinstance(node, MappingNode) and node.value:
            return _node_range(node.value[0][0])
        return self.node_range(node, None)

    def node_range(self, node: Node, key_node: Node | None) -> Range:
        """A scalar's own range; a collection spanning lines is marked at its key, or along its first line."""
        whole = _node_range(node)
        if whole.line == whole.end_line and whole.col < whole.end_col:
            return whole
        if key_node is not None:
            return _node_range(key_node)
        line = self.lines[whole.line] if whole.line < len(self.lines) else ""
        return Range(whole.line, whole.col, whole.line, max(len(line.rstrip()), whole.col + 1))

    def inside(self, node: Node, needle: str) -> Range | None:
        index = self.text.find(needle, node.start_mark.index, node.end_mark.index)
        if index < 0:
            return None
        line = self.text.count("\n", 0, index)
        col = index - (self.text.rfind("\n", 0, index) + 1)
        return Range(line, col, line, col + len(needle))


def _walk(root: Node, loc: tuple[str | int, ...]) -> tuple[Node | None, Node]:
    """The deepest (key node, value node) `loc` leads to; pydantic-only parts (`[key]`) stop the walk."""
    key_node, node = None, root
    for part in loc:
        if isinstance(node, MappingNode) and isinstance(part, str):
            pairs = [(k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == part]
            if not pairs:
                break
            key_node, node = pairs[-1]  # the last duplicate is the one the data holds
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            key_node, node = None, node.value[part]
        else:
            break
    return key_node, node


def _child(node: Node, key: str) -> Node | None:
    if not isinstance(node, MappingNode):
        return None
    values = [v for k, v in node.value if isinstance(k, ScalarNode) and k.value == key]
    return values[-1] if values else None


def _scalar(node: Node, key: str) -> str | None:
    value = _child(node, key)
    return value.value if isinstance(value, ScalarNode) and value.value else None


def _label(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "lens"


def _end(node: Node) -> Any:
    """Where a node's content ends: a block collection's own end mark is the start of whatever follows it."""
    while isinstance(node, (MappingNode, SequenceNode)) and node.value and node.flow_style is not True:
        last = node.value[-1]
        node = last[1] if isinstance(node, MappingNode) else last
    return node.end_mark


def _trimmed(node: Node, lines: list[str]) -> Range:
    """A node's range without the blank lines a block scalar at its end swallows."""
    whole = _range(node.start_mark, _end(node))
    line, col = whole.end_line, whole.end_col
    while col == 0 and line > whole.line:
        line -= 1
        col = len(lines[line].rstrip()) if line < len(lines) else 0
    return Range(whole.line, whole.col, line, col)


def _range(start: Any, end: Any) -> Range:
    return Range(start.line, start.column, end.line, end.column)


def _node_range(node: Node) -> Range:
    whole = _range(node.start_mark, _end(node))
    if (whole.line, whole.col) == (whole.end_line, whole.end_col):
        return Range(whole.line, whole.col, whole.line, whole.col + 1)  # an empty value: mark one character
    return whole
