"""Editor features for `.lens` documents as plain functions; the LSP adapter converts to lsprotocol types.

Completion and hover read the raw text with indentation heuristics (`textpath`), since the document is usually
half-typed; outline and code lenses need it to be YAML. Lines and columns are 0-based code-point offsets.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from sunwell.lens.loader import LensPositions, LensTooComplex, Range, compose, lens_positions
from sunwell.lens.schema import SECTIONS, section_at
from sunwell.lens.textpath import container_path, mapping_path, parse_line, sibling_keys, split_lines
from sunwell.lens.vocabulary import CHAT_COMMANDS, CORE_TOOL_DOCS, TRUST_DOCS, CommandDoc, trust_markdown

CompletionKind = Literal["key", "value", "tool", "command"]


@dataclass(frozen=True)
class CompletionItem:
    label: str
    kind: CompletionKind
    detail: str
    documentation: str
    insert_text: str
    replace_from_col: int | None = None
    """When set, `insert_text` replaces the cursor line from this column to the cursor (a TextEdit)."""


@dataclass
class Symbol:
    name: str
    kind: Literal["module", "function"]
    detail: str
    range: Range
    selection_range: Range
    children: list[Symbol] = field(default_factory=list)


@dataclass(frozen=True)
class CodeLensItem:
    range: Range
    title: str
    command: str
    arguments: list[str]


_COMMAND_TYPED = re.compile(r"(?:^|[\s\[(\"'`])(::([A-Za-z][\w-]*)?)$")
_FLOW_TOOLS = re.compile(r"\ballowed_tools\s*:\s*\[([^\]]*)$")
_KEY_VALUE = re.compile(r"^(\s*)(-\s+)?([A-Za-z_][\w-]*)\s*:\s*([\w-]*)$")
_KEY_START = re.compile(r"^(\s*)(-\s+)?([\w-]*)$")
_WORD = re.compile(r"::[A-Za-z][\w-]*|[A-Za-z_][\w-]*")
_SECTION_LABELS = {(): "lens", ("skills", "-"): "skill", ("tool_policy",): "tool_policy",
                   ("tool_policy", "rate_limits"): "tool_policy.rate_limits"}


def completions(text: str, line: int, col: int, commands: Sequence[CommandDoc] | None = None,
                known_tools: Iterable[str] = ()) -> list[CompletionItem]:
    lines = split_lines(text)
    if not 0 <= line < len(lines):
        return []
    prefix = lines[line][:col]
    if (typed := _COMMAND_TYPED.search(prefix)) and _in_instructions(lines, line):
        return [CompletionItem(f"::{c.name}", "command", c.usage, c.description, f"::{c.name}", typed.start(1))
                for c in (CHAT_COMMANDS if commands is None else commands)]
    if flow := _FLOW_TOOLS.search(prefix):
        partial = re.split(r"[,\[]", flow[1])[-1].strip()
        return _tool_items(lines, known_tools, "", col - len(partial))
    if pair := _KEY_VALUE.match(prefix):
        if pair[3] == "trust_level":
            return [CompletionItem(level, "value", "trust level", doc, level, col - len(pair[4]))
                    for level, doc in TRUST_DOCS.items()]
        return []
    if not (start := _KEY_START.match(prefix)):
        return []
    indent, dash, partial = len(start[1]), start[2] or "", start[3]
    if dash:
        owner = container_path(lines, line, indent, True)
        if owner[-1:] == ("allowed_tools",):
            return _tool_items(lines, known_tools, "", col - len(partial))
        path, key_col = owner + ("-",), indent + len(dash)
    else:
        path, key_col = container_path(lines, line, indent, False), indent
        if path[-1:] == ("allowed_tools",):
            return _tool_items(lines, known_tools, "- ", col - len(partial))
        if path == ("skills",):
            return [CompletionItem("- name", "key", "a new skill", SECTIONS[("skills", "-")].__doc__ or "",
                                   "- name: ", col - len(partial))]
    model = section_at(path)
    if model is None:
        return []
    present = sibling_keys(lines, line, key_col, opens_item=bool(dash))
    return [CompletionItem(name, "key", _field_detail(model, name), info.description or "",
                           f"{name}:" if _is_block(info.annotation) else f"{name}: ", col - len(partial))
            for name, info in model.model_fields.items() if name not in present]


def hover(text: str, line: int, col: int, commands: Sequence[CommandDoc] | None = None) -> str | None:
    """Markdown for the key, tool, trust level, skill or `::command` under the cursor."""
    lines = split_lines(text)
    if not 0 <= line < len(lines):
        return None
    word = next((m for m in _WORD.finditer(lines[line]) if m.start() <= col < m.end()), None)
    if word is None:
        return None
    token = word[0]
    if token.startswith("::"):
        wanted = token[2:].lower()
        doc = next((c for c in (CHAT_COMMANDS if commands is None else commands) if c.name == wanted), None)
        return doc.markdown() if doc else None
    path, info = mapping_path(lines, line)
    if info is not None and info.key == token and word.start() == info.content_col:
        model = section_at(path)
        field_info = model.model_fields.get(token) if model else None
        if field_info is None:
            return None
        required = " · required" if field_info.is_required() else ""
        return (f"**`{token}`** — {_SECTION_LABELS[tuple(path)]} key\n\n{field_info.description or ''}\n\n"
                f"Type: `{_type_name(field_info.annotation)}`{required}")
    if token in CORE_TOOL_DOCS:
        return CORE_TOOL_DOCS[token].markdown()
    if token in TRUST_DOCS and info is not None and info.key == "trust_level":
        return trust_markdown(token)
    skills = {skill.name: skill for skill in (_positions(text) or LensPositions(Range(0, 0, 0, 0), None)).skills}
    if token in skills and (info is None or info.key != "name"):
        return f"**`{token}`** — skill of this lens\n\n{skills[token].description or ''}".rstrip()
    return None


def symbols(text: str) -> list[Symbol]:
    """The lens with its skills as children; empty when the text is not YAML."""
    positions = _positions(text)
    if positions is None:
        return []
    doc = positions.document
    children = [Symbol(skill.name, "function", skill.description or "", skill.range, skill.name_range)
                for skill in positions.skills]
    selection = positions.name or Range(doc.line, doc.col, doc.line, doc.col)
    return [Symbol(positions.lens_name or "(unnamed lens)", "module", positions.description or "", doc, selection,
                   children)]


def code_lenses(text: str, path: str) -> list[CodeLensItem]:
    """"Use this lens" on the name, "Run skill" on each skill."""
    positions = _positions(text)
    if positions is None:
        return []
    items = [CodeLensItem(positions.name, "Use this lens", "sunwell.useLens", [path])] if positions.name else []
    items += [CodeLensItem(skill.name_range, "Run skill", "sunwell.runSkill", [path, skill.name])
              for skill in positions.skills]
    return items


def _positions(text: str) -> LensPositions | None:
    try:
        root = compose(text)
    except (yaml.YAMLError, LensTooComplex):
        return None
    if root is None or not isinstance(root, yaml.MappingNode):
        return None
    return lens_positions(root, split_lines(text))


def _in_instructions(lines: list[str], line: int) -> bool:
    path, info = mapping_path(lines, line)
    return "instructions" in path or (info is not None and info.key == "instructions")


def _tool_items(lines: list[str], known_tools: Iterable[str], lead: str, start: int) -> list[CompletionItem]:
    items = [CompletionItem(name, "tool", f"core tool · trust {doc.trust}", doc.markdown(), lead + name, start)
             for name, doc in CORE_TOOL_DOCS.items()]
    for name in dict.fromkeys([*_skill_names(lines), *known_tools]):
        if name not in CORE_TOOL_DOCS:
            items.append(CompletionItem(name, "tool", "skill" if name in _skill_names(lines) else "tool", "",
                                        lead + name, start))
    return items


def _skill_names(lines: list[str]) -> list[str]:
    names = []
    for index, text in enumerate(lines):
        info = parse_line(text)
        if info is not None and info.key == "name" and info.value and mapping_path(lines, index)[0] == ("skills", "-"):
            names.append(info.value.strip("\"'"))
    return names


def _field_detail(model: type[BaseModel], name: str) -> str:
    info = model.model_fields[name]
    return f"{_type_name(info.annotation)}{' (required)' if info.is_required() else ''}"


def _is_block(annotation: Any) -> bool:
    """Whether a field's value is a list or mapping (its key is followed by a new line, not a value)."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return any(typing.get_origin(option) in (list, dict)
               or (isinstance(option, type) and issubclass(option, BaseModel)) for option in options)


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return " | ".join(repr(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(arg) for arg in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))
