"""Language features for `.lens` files: thin adapters from LSP to `sunwell.lens.language` and `load_lens`.

An open document's text is the editor's buffer; diagnostics follow it on open, change and save. Lens files that
are not open are watched on disk (LensRegistry.watch) and their diagnostics published as they change, so a lens
broken outside the editor still shows up. The lens functions count columns in code points; the client's position
encoding (UTF-16 unless negotiated otherwise) is converted here, both ways.

The lens modules (with the lens schema, jsonschema and YAML) are imported by the handlers that use them: the
sidecar answers `initialize` and its first requests without them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from sunwell.wire.protocol import LANGUAGE_ID

if TYPE_CHECKING:
    from sunwell.lens.loader import Diagnostic, LensResult, Range
    from sunwell.lsp.server import SunwellServer

log = logging.getLogger(__name__)

_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information}
_COMPLETION_KIND = {"key": types.CompletionItemKind.Property, "value": types.CompletionItemKind.EnumMember,
                    "tool": types.CompletionItemKind.Function, "command": types.CompletionItemKind.Keyword}
_SYMBOL_KIND = {"module": types.SymbolKind.Module, "function": types.SymbolKind.Function}


def setup(server: SunwellServer) -> None:
    open_lenses: set[str] = set()
    """URIs of open lens documents: their buffer, not the file on disk, is what diagnostics describe."""
    open_paths: set[Path] = set()
    """The same, as resolved paths, to compare with the registry's."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SunwellServer, params: types.DidOpenTextDocumentParams) -> None:
        if params.text_document.language_id == LANGUAGE_ID:
            open_lenses.add(params.text_document.uri)
            if path := _path(params.text_document.uri):
                open_paths.add(path)
            publish_buffer(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SunwellServer, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in open_lenses:
            publish_buffer(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: SunwellServer, params: types.DidSaveTextDocumentParams) -> None:
        if params.text_document.uri in open_lenses:
            publish_buffer(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SunwellServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in open_lenses:
            open_lenses.discard(uri)
            path = _path(uri)
            open_paths.discard(path)
            result = ls.lenses.result(path) if ls.lenses is not None and path else None
            publish_file(ls, uri, result)  # back to what the file on disk says (nothing, if it is not a lens)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[":", " "]))
    def completion(ls: SunwellServer, params: types.CompletionParams) -> types.CompletionList:
        from sunwell.lens.language import completions

        doc = _Doc.of(ls, params.text_document.uri)
        if doc is None:
            return types.CompletionList(is_incomplete=False, items=[])
        line, col = doc.position(params.position)
        items = completions(doc.text, line, col, known_tools=_known_tools(ls))
        return types.CompletionList(is_incomplete=False, items=[doc.completion_item(item, line, col)
                                                                 for item in items])

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: SunwellServer, params: types.HoverParams) -> types.Hover | None:
        from sunwell.lens.language import hover as hover_text

        doc = _Doc.of(ls, params.text_document.uri)
        markdown = hover_text(doc.text, *doc.position(params.position)) if doc else None
        if not markdown:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: SunwellServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        from sunwell.lens.language import symbols

        doc = _Doc.of(ls, params.text_document.uri)
        return [doc.symbol(symbol) for symbol in symbols(doc.text)] if doc else []

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: SunwellServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        from sunwell.lens.language import code_lenses

        doc = _Doc.of(ls, params.text_document.uri)
        if doc is None:
            return []
        return [types.CodeLens(range=doc.range(item.range),
                               command=types.Command(title=item.title, command=item.command,
                                                     arguments=item.arguments))
                for item in code_lenses(doc.text, doc.path)]

    def publish_buffer(ls: SunwellServer, uri: str) -> None:
        from sunwell.lens.loader import load_lens

        doc = _Doc.of(ls, uri)
        if doc is not None:
            result = load_lens(doc.text, doc.path, _known_tools(ls))
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=doc.version, diagnostics=[doc.diagnostic(d) for d in result.diagnostics]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: SunwellServer, params: types.DidChangeWatchedFilesParams) -> None:
        """The client's own watcher (the extension synchronizes `**/*.lens`) backs up ours for files we know;
        new files are for the registry's discovery to judge (it skips node_modules, .git, ...)."""
        for change in params.changes:
            path = _path(change.uri)
            if ls.lenses is not None and path is not None and ls.lenses.result(path) is not None:
                changed(path, ls.lenses.reload(path))

    watching: list[threading.Event] = []

    async def watch_lens_files() -> None:
        """Publish the diagnostics of the engine's lens files, and keep them (and the engine) current."""
        stop_watching()  # a new engine (another data dir) comes with a new registry
        watching[:] = [stop := threading.Event()]
        engine = server.engine
        registry = await asyncio.to_thread(lambda: engine.lenses)  # its first use walks the workspace
        server.lenses = registry
        server.run_task(registry.watch(stop, changed))
        await asyncio.sleep(0)  # the watcher's first step subscribes to file events; then re-read what the
        for path in registry.paths():  # discovery found, so an edit made in between is not lost
            changed(path, registry.reload(path))

    def changed(path: Path, result: LensResult | None) -> None:
        uri = from_fs_path(str(path))
        if uri and path not in open_paths:
            publish_file(server, uri, result)

    def stop_watching() -> None:
        for stop in watching:
            stop.set()

    server.on_engine(watch_lens_files)
    server.on_shutdown(stop_watching)


def publish_file(ls: SunwellServer, uri: str, result: LensResult | None) -> None:
    """Diagnostics of a lens file as it is on disk (none when it is gone or not a lens)."""
    diagnostics: list[types.Diagnostic] = []
    if result is not None:
        text = _read(result.path)
        doc = _Doc(ls, uri, result.path, text or "", None)
        diagnostics = [doc.diagnostic(d) for d in result.diagnostics]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))


def _known_tools(ls: SunwellServer) -> tuple[str, ...]:
    """Tool names a lens may list besides the core tools and its own skills (learned and MCP tools, later)."""
    return ls.lenses.known_tools if ls.lenses is not None else ()


def _path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class _Doc:
    """A document's text with conversions between the lens functions' code points and the client's units."""

    def __init__(self, ls: SunwellServer, uri: str, path: str, text: str, version: int | None) -> None:
        self.uri, self.path, self.text, self.version = uri, path, text, version
        self.lines = text.split("\n")  # the lens functions' idea of lines (not str.splitlines, which also
        self.codec = ls.workspace.position_codec  # splits on form feeds and U+2028)

    @classmethod
    def of(cls, ls: SunwellServer, uri: str) -> _Doc | None:
        """The document, if it is a lens (open as language `lens`, or a `.lens` file); else None."""
        document = ls.workspace.get_text_document(uri)
        if document.language_id != LANGUAGE_ID and not (document.language_id is None and uri.endswith(".lens")):
            return None
        try:
            text = document.source  # the buffer when open, else the file on disk
        except (OSError, UnicodeDecodeError):
            return None
        return cls(ls, uri, document.path, text, document.version)

    def position(self, position: types.Position) -> tuple[int, int]:
        if position.line >= len(self.lines):
            return position.line, 0
        server = self.codec.position_from_client_units(self.lines, position)
        return server.line, server.character

    def client_position(self, line: int, col: int) -> types.Position:
        if line >= len(self.lines):
            return types.Position(line=line, character=0)
        return types.Position(line=line, character=self.codec.client_num_units(self.lines[line][:col]))

    def range(self, where: Range) -> types.Range:
        return types.Range(start=self.client_position(where.line, where.col),
                           end=self.client_position(where.end_line, where.end_col))

    def diagnostic(self, diagnostic: Diagnostic) -> types.Diagnostic:
        return types.Diagnostic(range=self.range(diagnostic.range), message=diagnostic.message,
                                severity=_SEVERITY[diagnostic.severity], code=diagnostic.code, source="sunwell")

    def completion_item(self, item: Any, line: int, col: int) -> types.CompletionItem:
        edit = None
        if item.replace_from_col is not None:
            edit = types.TextEdit(range=types.Range(start=self.client_position(line, item.replace_from_col),
                                                    end=self.client_position(line, col)),
                                  new_text=item.insert_text)
        documentation = (types.MarkupContent(kind=types.MarkupKind.Markdown, value=item.documentation)
                         if item.documentation else None)
        return types.CompletionItem(label=item.label, kind=_COMPLETION_KIND.get(item.kind), detail=item.detail,
                                    documentation=documentation, text_edit=edit,
                                    insert_text=None if edit else item.insert_text)

    def symbol(self, symbol: Any) -> types.DocumentSymbol:
        return types.DocumentSymbol(name=symbol.name, kind=_SYMBOL_KIND[symbol.kind], detail=symbol.detail or None,
                                    range=self.range(symbol.range),
                                    selection_range=self.range(symbol.selection_range),
                                    children=[self.symbol(child) for child in symbol.children])
