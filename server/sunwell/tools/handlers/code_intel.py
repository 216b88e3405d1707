"""Code intelligence from the editor: diagnostics, find_symbol, find_definition, find_references.

The editor's language features answer (`sunwell/codeIntel`, VS Code's own providers), so these tools are offered only
when the client says it answers them. What it returns is data from outside: each location goes through the jail
(one outside the workspace or blocked is dropped, never shown) and is given as a workspace-relative path, line and
column with the line's text as the file holds it, read here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import Field, ValidationError

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import M, Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.subject import Subject
from sunwell.wire.user_requests import CodeIntelParams, CodeLocation

MAX_ITEMS = 200
LINE_CHARS = 200
"""Characters of a line or a diagnostic's message shown."""
MAX_FILE_BYTES = 5_000_000
EDITOR_WAIT = 20.0
"""Seconds the editor has to answer, at most (and less when the user's `tool_timeout_sec` is shorter): a busy or
stuck language server is then named as such, with what to do instead, rather than as a call that ran too long."""


class DiagnosticsArguments(ToolArguments):
    path: str | None = Field(None, description="A file or folder (default: the whole workspace).")

    def subject(self) -> Subject:
        return Subject(reads=(self.path or ".",))


class FindSymbolArguments(ToolArguments):
    query: str = Field(min_length=1, max_length=200, description="The symbol's name, or part of it.")


class SymbolArguments(ToolArguments):
    symbol: str = Field(min_length=1, max_length=200, description="The symbol's name, as written in the code.")
    path: str | None = Field(None, description="A file where the symbol appears (default: found by its name).")

    def subject(self) -> Subject:
        return Subject(reads=(self.path,) if self.path else ())


def _location(raw: Any) -> tuple[str, int, int, str]:
    """(path, line, column, text) of one item of the answer; raises ValueError on anything else."""

    item = CodeLocation.model_validate(raw)
    if item.line < 1 or item.column < 1:
        raise ValueError("line and column are 1-based")
    return item.path, item.line, item.column, item.text


def _jailed(ctx: ToolContext, given: str) -> tuple[str, Path] | None:
    """The workspace-relative path and real path of `given` (absolute, `file:` URI or relative), None when it is
    outside the workspace, blocked or gone."""
    if given.startswith("file:"):
        given = unquote(urlparse(given).path)
    try:
        real = ctx.jail.resolve(given)
    except ToolFailure:
        return None
    return ctx.jail.relative(real), real


def _line_of(real: Path, line: int, cache: dict[Path, list[str] | None]) -> str:
    if real not in cache:
        try:
            data = real.read_bytes() if os.path.getsize(real) <= MAX_FILE_BYTES else b""
            cache[real] = data.decode("utf-8", errors="replace").splitlines() if b"\0" not in data else None
        except OSError:
            cache[real] = None
    lines = cache[real]
    return lines[line - 1].strip()[:LINE_CHARS] if lines and line <= len(lines) else ""


async def _ask(ctx: ToolContext, params: dict[str, Any], what: str) -> str:
    if not ctx.client.answers("codeIntel"):
        raise ToolFailure("unsupported", "code intelligence needs the editor (VS Code), which is not connected here",
                          "use search_files and read_file instead")
    wait = min(EDITOR_WAIT, ctx.own_deadline())
    try:
        async with asyncio.timeout(wait):
            answer = await ctx.client.code_intel(CodeIntelParams.model_validate(params))
    except TimeoutError:
        raise ToolFailure("timeout", f"the editor did not answer about the {what} within {wait:g} s (its "
                          "language features may still be starting or busy)", "use search_files and read_file "
                          "instead") from None
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ToolFailure("execution", f"the editor gave no usable answer for {what}",
                          "use search_files and read_file instead")
    lines, dropped, cache = [], 0, {}
    for raw in items:
        try:
            given, line, column, text = _location(raw)
        except (ValidationError, ValueError):
            dropped += 1
            continue
        found = _jailed(ctx, given)
        if found is None:
            dropped += 1
            continue
        rel, real = found
        source = _line_of(real, line, cache)
        note = " ".join(text.split())[:LINE_CHARS]
        lines.append(f"{rel}:{line}:{column}: " + (f"{note}\n    | {source}" if note else source))
        if len(lines) == MAX_ITEMS:
            break
    more = len(items) - len(lines) - dropped
    tail = [f"... and {more} more (narrow the request)"] if more > 0 else []
    if dropped:
        tail.append(f"({dropped} location(s) outside the workspace, blocked or malformed were left out)")
    if not lines:
        return "\n".join([f"No {what} found.", *tail])
    return "\n".join([*lines, *tail])


async def diagnostics(arguments: DiagnosticsArguments, ctx: ToolContext) -> str:
    path = _checked(ctx, arguments.path)
    return await _ask(ctx, {"kind": "diagnostics", "path": path}, "problems")


async def find_symbol(arguments: FindSymbolArguments, ctx: ToolContext) -> str:
    return await _ask(ctx, {"kind": "symbols", "query": arguments.query}, f"symbols matching {arguments.query!r}")


async def find_definition(arguments: SymbolArguments, ctx: ToolContext) -> str:
    return await _ask(ctx, {"kind": "definition", "symbol": arguments.symbol, "path": _checked(ctx, arguments.path)},
                      f"definition of {arguments.symbol!r}")


async def find_references(arguments: SymbolArguments, ctx: ToolContext) -> str:
    return await _ask(ctx, {"kind": "references", "symbol": arguments.symbol, "path": _checked(ctx, arguments.path)},
                      f"references to {arguments.symbol!r}")


def _checked(ctx: ToolContext, path: str | None) -> str | None:
    """The model's path, workspace-relative, once the jail allows it: the editor is never asked about another."""
    return None if path is None else ctx.jail.relative(ctx.jail.resolve(path))


def _tool(name: str, description: str, model: type[M], handler: Callable[[M, ToolContext], Awaitable[str]]) -> Tool[M]:
    return Tool.of(model, handler, name=name, description=description, min_trust=Trust.discovery, harmless=True,
                   expendable=True)  # search_files and read_file do without: a small window drops these first


DIAGNOSTICS = _tool("diagnostics", (
    "The problems the editor's language features report (type errors, lint warnings), as `path:line:column: "
    "severity message` with the line. Use it after an edit to see whether the code still compiles, or to find "
    'what is broken. `path`: a file or folder (default: the whole workspace). Example: {"path": "src/app.ts"}.'),
    DiagnosticsArguments, diagnostics)
FIND_SYMBOL = _tool("find_symbol", (
    "Find classes, functions, variables and other symbols by name across the workspace, as the editor's "
    "language features index them: where each is declared, with its kind. Faster and more precise than a text "
    'search for a declaration. Example: {"query": "parseConfig"}.'), FindSymbolArguments, find_symbol)
FIND_DEFINITION = _tool("find_definition", (
    "Where a symbol is defined, as the editor's language features resolve it (imports followed). Give `path`, a "
    "file that uses the symbol, when the name is common. "
    'Example: {"symbol": "parseConfig", "path": "src/main.ts"}.'), SymbolArguments, find_definition)
FIND_REFERENCES = _tool("find_references", (
    "Every place a symbol is used, as the editor's language features resolve it (not mere text matches). Give "
    "`path`, the file that defines or uses it, when the name is common. "
    'Example: {"symbol": "parseConfig", "path": "src/config.ts"}.'), SymbolArguments, find_references)

CODE_INTEL_TOOLS: tuple[Tool, ...] = (DIAGNOSTICS, FIND_SYMBOL, FIND_DEFINITION, FIND_REFERENCES)
