"""`learned_apis` entries in the user config, written when an API is learned and removed when it is forgotten.

The user's file is edited as text, one line per entry under a top-level `learned_apis:` block, so their comments and
layout stay as they were; a file whose `learned_apis` is written some other way (a flow mapping, an anchor) is left
alone and the caller is told, rather than rewritten by a YAML dump that would drop every comment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

_BLOCK = re.compile(r"^learned_apis:[ \t]*(#.*)?$", re.MULTILINE)


def entry_line(name: str, source: str, rate_per_min: int) -> str:
    return f"  {name}: {{source: {json.dumps(source)}, rate_per_min: {rate_per_min}}}"


def remember(path: Path, name: str, source: str, rate_per_min: int) -> bool:
    """Set `learned_apis.NAME` in the file at `path`; False when the file's block could not be edited safely."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = _without(text, name)
    if lines is None:
        return False
    text = "".join(lines)
    line = entry_line(name, source, rate_per_min) + "\n"
    match = _BLOCK.search(text)
    if match is None:
        text = (text if not text or text.endswith("\n") else text + "\n") + "learned_apis:\n" + line
    else:
        end = match.end() + 1
        text = text[:end] + line + text[end:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def drop(path: Path, name: str) -> bool:
    """Remove `learned_apis.NAME` from the file at `path`; False when it could not be edited safely."""
    if not path.is_file():
        return True
    lines = _without(path.read_text(encoding="utf-8"), name)
    if lines is None:
        return False
    path.write_text("".join(lines), encoding="utf-8")
    return True


def _without(text: str, name: str) -> list[str] | None:
    """The file's lines without the entry of `name`, or None when `learned_apis` is not a block of one-line
    entries this module wrote."""
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None if data is not None else []
    entries = data.get("learned_apis")
    if entries is None:
        return text.splitlines(keepends=True)
    if not isinstance(entries, dict) or _BLOCK.search(text) is None:
        return None
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if _BLOCK.match(line))
    kept = lines[:start + 1]
    for line in lines[start + 1:]:
        inside = line.startswith((" ", "\t")) or not line.strip()
        if inside and line.strip().startswith(f"{name}:"):
            if not line.rstrip().endswith("}"):
                return None  # a multi-line entry: not ours to cut
            continue
        kept.append(line)
    following = kept[start + 1:]
    block = following[:next((i for i, line in enumerate(following)
                             if line.strip() and not line.startswith((" ", "\t"))), len(following))]
    if not any(line.strip() and not line.strip().startswith("#") for line in block):
        del kept[start]  # no entry left: an empty `learned_apis:` would read as null
    return kept
