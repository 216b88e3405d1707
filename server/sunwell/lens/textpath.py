"""Where in the YAML structure a line sits, from the raw text alone.

The document is being typed, so it is often not valid YAML; indentation still tells which mapping a line belongs
to. A path is a tuple of keys, `-` standing for a list item: `("skills", "-")` is the mapping of one skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY = re.compile(r"""(?P<key>[A-Za-z_][\w-]*|"[^"\n]*"|'[^'\n]*')[ \t]*:(?=\s|$)""")


@dataclass(frozen=True)
class LineInfo:
    indent: int
    """Column of the first character (the dash of an item line)."""
    dash_col: int | None
    """Column of `- ` when the line starts a list item."""
    content_col: int
    """Column after the dash and its spaces (= indent when there is no dash)."""
    key: str | None
    value: str
    """Text after `key:`, comment removed."""


def parse_line(line: str) -> LineInfo | None:
    """None for a blank or comment line."""
    stripped = line.rstrip("\r").lstrip(" ")
    if not stripped or stripped.startswith("#"):
        return None
    indent = len(line) - len(line.lstrip(" "))
    dash_col, content_col, rest = None, indent, stripped
    if rest == "-" or rest.startswith("- "):
        after = rest[1:]
        dash_col, rest = indent, after.lstrip(" ")
        content_col = indent + 1 + len(after) - len(rest)
    match = _KEY.match(rest)
    if match is None:
        return LineInfo(indent, dash_col, content_col, None, rest)
    value = re.sub(r"(^|\s)#.*$", "", rest[match.end():]).strip()
    return LineInfo(indent, dash_col, content_col, match["key"].strip("\"'"), value)


def split_lines(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n")]


def container_path(lines: list[str], index: int, col: int, is_item: bool) -> tuple[str, ...]:
    """The path of what holds a node starting at `col` on line `index`: its mapping, or, when the node is a list
    item (`is_item`, `col` is the dash), the key owning that list."""
    path: list[str] = []
    limit, need_owner = col, is_item
    for i in range(index - 1, -1, -1):
        info = parse_line(lines[i])
        if info is None:
            continue
        if need_owner:  # looking for the key whose value is the list with dashes at `limit`
            if info.dash_col == limit or info.key is None or info.content_col > limit:
                continue  # a sibling item, or the content of one
        elif info.indent >= limit:
            continue  # a sibling or something deeper
        elif info.key is None or info.content_col >= limit:
            if info.dash_col is not None:  # we are a key of this item's mapping
                path.insert(0, "-")
                limit, need_owner = info.dash_col, True
            continue  # (no dash: a shallower plain line, a multi-line scalar or half-typed text)
        path.insert(0, info.key)  # we are inside this key's value
        if info.dash_col is not None:
            path.insert(0, "-")
            limit, need_owner = info.dash_col, True
        else:
            limit, need_owner = info.content_col, False
    return tuple(path)


def mapping_path(lines: list[str], index: int) -> tuple[tuple[str, ...], LineInfo | None]:
    """The path of the mapping a line's key belongs to (for an item line `- key:`, the item's mapping)."""
    info = parse_line(lines[index]) if index < len(lines) else None
    if info is None:
        return (), None
    if info.dash_col is not None:
        return container_path(lines, index, info.dash_col, True) + ("-",), info
    return container_path(lines, index, info.indent, False), info


def sibling_keys(lines: list[str], index: int, col: int, opens_item: bool) -> set[str]:
    """Keys already in the block mapping whose keys start at `col`, around line `index` (excluded);
    `opens_item`: line `index` starts a new list item, so nothing above it is in the same mapping."""
    keys: set[str] = set()
    for step in ((1,) if opens_item else (-1, 1)):
        i = index + step
        while 0 <= i < len(lines):
            info = parse_line(lines[i])
            i += step
            if info is None or info.indent > col or info.dash_col == col:
                continue  # deeper, or an indentless list in a sibling's value
            if info.content_col != col or info.key is None or (info.dash_col is not None and step == 1):
                break  # out of the mapping, or the next item
            keys.add(info.key)
            if info.dash_col is not None:
                break  # the first line of our item
    return keys
