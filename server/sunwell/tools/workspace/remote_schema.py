"""The remote schema a JSON or YAML file names: VS Code fetches it when the file is opened (a request from the
user's machine to a host the model chose, and completions it serves), so a write's approval card says so (the diff
preview's `remoteSchema`, sunwell.wire.approval).

JSON: a `$schema` key of the top-level object of any file that is a JSON object, keys with escapes decoded as VS Code
decodes them; comments and trailing commas too in the files VS Code reads as JSONC (`*.json`, `*.code-workspace`,
`.babelrc`...; json_repair reads them), not in code that merely holds an object after a comment. YAML (by the file's suffix): a
top-level `$schema` key of any document in the stream (read from the parser's events, not built: the file may be
megabytes), and the yaml-language-server modeline `# yaml-language-server: $schema=URL` on any line. Remote: http(s),
or a network path (`//host/share`, a UNC path on Windows: an SMB connection to that host).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from itertools import chain
from urllib.parse import urlsplit

import json_repair
import yaml

YAML_SUFFIXES = (".yaml", ".yml")
JSONC_SUFFIXES = (".json", ".jsonc", ".json5", ".code-workspace", ".code-snippets", ".webmanifest")
MODELINE = re.compile(r"^[ \t]*#[ \t]*yaml-language-server[ \t]*:[^\n]*?\$schema=(\S+)", re.MULTILINE)
PURE_PYTHON_YAML_LIMIT = 500_000
"""Without libyaml PyYAML reads some 300 KB a second: a larger YAML file is checked for its modeline only."""
JSONC_LIMIT = 1_000_000
"""json_repair reads some 2 MB a second; the preview is made before the question: larger JSON must be strict JSON."""
SHOWN_CHARS = 300
"""A longer URL is cut on the card (its host is at the start)."""


def remote_schema(path: str, text: str) -> str | None:
    """The first remote schema `text`, the content of the workspace file `path`, names; None when it names none."""
    yaml_file = path.lower().endswith(YAML_SUFFIXES)
    # the common case, at the cost of a scan: only an escape can spell the key otherwise (`\u0024schema`, and in
    # YAML `\x24` or a line folded after a backslash)
    if "$schema" not in text and ("\\" if yaml_file else "\\u") not in text:
        return None
    found: Iterable[object] = (chain((m.group(1) for m in MODELINE.finditer(text)), _yaml_keys(text)) if yaml_file
                               else _json_keys(path, text))  # fmt: skip
    url = next((u.strip() for u in found if isinstance(u, str) and _remote(u.strip())), None)
    return url if url is None or len(url) <= SHOWN_CHARS else url[:SHOWN_CHARS] + "…"


def _remote(url: str) -> bool:
    if url.startswith("\\\\"):
        return True
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        return bool(parts.netloc)
    return scheme in ("", "file") and parts.netloc.lower() not in ("", "localhost")


def _json_keys(path: str, text: str) -> list[object]:
    """Every value of a top-level `$schema` key, in order (a duplicate key too: JSON readers differ on which wins)."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body.startswith(("{", "/")):  # not an object (nor one after a comment): an array, code that holds JSON
        return []
    try:  # each object as its list of pairs, so that a repeated key is kept
        pairs = json.loads(body, object_pairs_hook=list)
        return [value for key, value in pairs if key == "$schema"]
    except ValueError:
        name = path.rsplit("/", 1)[-1].lower()
        jsonc = name.endswith(JSONC_SUFFIXES) or (name.startswith(".") and name.endswith("rc"))  # .babelrc, .swcrc
        if not jsonc or len(body) > JSONC_LIMIT:
            return []
    try:  # JSONC: comments, trailing commas
        document = json_repair.loads(body)
    except Exception:  # noqa: BLE001 - json_repair's failures are not one documented type: no schema then
        return []
    return [document["$schema"]] if isinstance(document, dict) and "$schema" in document else []


def _yaml_keys(text: str) -> Iterator[str]:
    """The value of each top-level `$schema` key of each document, read from the parser's events as they come (the
    first remote one ends the reading)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if loader is yaml.SafeLoader and len(text) > PURE_PYTHON_YAML_LIMIT:
        return
    depth, in_mapping, is_key, wanted = 0, False, True, False
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.DocumentStartEvent):
                depth, in_mapping, is_key, wanted = 0, False, True, False
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.NodeEvent):  # a scalar, an alias or a collection's start
                if depth == 0:
                    in_mapping = isinstance(event, yaml.MappingStartEvent)
                elif depth == 1 and in_mapping:  # an entry of the document's top mapping: a key, then its value
                    if is_key:
                        wanted = isinstance(event, yaml.ScalarEvent) and event.value == "$schema"
                    elif wanted and isinstance(event, yaml.ScalarEvent):
                        yield event.value
                    is_key = not is_key
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
    except yaml.YAMLError:
        pass  # what came before the error still counts, as an error-tolerant editor reads it
