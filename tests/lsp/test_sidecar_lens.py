"""Lens language features through the sidecar, on real files: diagnostics with exact ranges (in the client's
UTF-16 units), completion, hover, outline, code lenses, and diagnostics that follow edits made on disk."""

from __future__ import annotations

from lsprotocol import types

pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures

GOOD = """\
name: reviewer
description: Reviews Python code for bugs
instructions: |
  Be precise. Use ::help when stuck.
skills:
  - name: find_todos
    description: List the TODO comments
    parameters:
      type: object
      properties:
        path: {type: string}
  - name: summarize
    description: Summarize a file
tool_policy:
  trust_level: read_only
  allowed_tools: [read_file, search_files]
"""


def open_lens(sidecar, name: str, text: str, version: int = 1) -> str:
    uri = sidecar.uri(name)
    sidecar.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="lens", version=version, text=text)))
    return uri


def at(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def span(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=at(line, start), end=at(line, end))


async def diagnostics(sidecar, uri: str, version: int | None = None) -> list[types.Diagnostic]:
    """The diagnostics published for `uri` (for that version of the buffer, when given)."""
    def published():
        if uri not in sidecar.client.diagnostics:
            return None
        if version is not None and sidecar.published_versions.get(uri) != version:
            return None
        return sidecar.client.diagnostics[uri] or True
    found = await sidecar.wait_for(published)
    return [] if found is True else list(found)


async def test_diagnostic_for_a_bad_key_has_the_exact_range(sidecar):
    uri = open_lens(sidecar, "bad.lens", "name: x\ndescription: d\ncolour: red\n")
    [diagnostic] = await diagnostics(sidecar, uri, 1)
    assert diagnostic.range == span(2, 0, 6)
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.code == "unknown-key" and diagnostic.source == "sunwell"
    assert "Unknown key 'colour'" in diagnostic.message


async def test_ranges_are_in_utf16_units_after_astral_characters(sidecar):
    text = 'name: r\ndescription: d\nskills: [{name: s1, description: "😀😀", colour: 1}]\n'
    uri = open_lens(sidecar, "emoji.lens", text)
    [diagnostic] = await diagnostics(sidecar, uri, 1)
    assert diagnostic.range == span(2, 41, 47)  # code points 39-45; each emoji is two UTF-16 units


async def test_characters_that_hide_text_are_errors_at_their_utf16_range(sidecar):
    uri = open_lens(sidecar, "trojan.lens", 'name: r\ndescription: "😀 \u202eexe.txt"\n')
    [diagnostic] = await diagnostics(sidecar, uri, 1)
    assert diagnostic.code == "hidden-characters" and diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range == span(1, 17, 18)  # code point 16, after an emoji of two UTF-16 units
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in diagnostic.message


async def test_diagnostics_follow_changes_and_unknown_tools(sidecar):
    uri = open_lens(sidecar, "team.lens", GOOD)
    assert await diagnostics(sidecar, uri, 1) == []
    broken = GOOD.replace("[read_file, search_files]", "[read_file, reed_file]")
    sidecar.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=broken)]))
    [diagnostic] = await diagnostics(sidecar, uri, 2)
    assert diagnostic.code == "unknown-tool" and "did you mean 'read_file'" in diagnostic.message
    assert diagnostic.range == span(15, 29, 38)


async def test_completion_of_trust_levels_replaces_the_typed_prefix(sidecar):
    uri = open_lens(sidecar, "c.lens", "name: r\ndescription: d\ntool_policy:\n  trust_level: re\n")
    completion = await sidecar.client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(3, 17)))
    items = {item.label: item for item in completion.items}
    assert set(items) == {"discovery", "read_only", "workspace", "shell", "full"}
    read_only = items["read_only"]
    assert read_only.kind == types.CompletionItemKind.EnumMember
    assert read_only.text_edit.range == span(3, 15, 17) and read_only.text_edit.new_text == "read_only"


async def test_completion_of_commands_in_instructions(sidecar):
    text = "name: r\ndescription: d\ninstructions: |\n  Start with ::he\n"
    uri = open_lens(sidecar, "cmd.lens", text)
    completion = await sidecar.client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(3, 17)))
    help_item = next(item for item in completion.items if item.label == "::help")
    assert help_item.kind == types.CompletionItemKind.Keyword
    assert help_item.text_edit.range == span(3, 13, 17)


async def test_hover_on_a_tool_and_on_a_key(sidecar):
    uri = open_lens(sidecar, "h.lens", GOOD)
    tool = await sidecar.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(15, 20)))
    assert tool.contents.kind == types.MarkupKind.Markdown and "**`read_file`** — core tool" in tool.contents.value
    key = await sidecar.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(14, 4)))
    assert "`trust_level`" in key.contents.value
    nothing = await sidecar.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(3, 0)))
    assert nothing is None


async def test_document_symbols_are_the_lens_and_its_skills(sidecar):
    uri = open_lens(sidecar, "s.lens", GOOD)
    [lens] = await sidecar.client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert (lens.name, lens.kind, lens.detail) == ("reviewer", types.SymbolKind.Module, "Reviews Python code for bugs")
    assert lens.selection_range == span(0, 6, 14)
    assert [(c.name, c.kind) for c in lens.children] == [("find_todos", types.SymbolKind.Function),
                                                        ("summarize", types.SymbolKind.Function)]
    assert lens.children[0].selection_range == span(5, 10, 20)
    assert lens.children[0].range == types.Range(start=at(5, 4), end=at(10, 28))


async def test_code_lenses_use_the_lens_and_run_each_skill(sidecar, workspace):
    uri = open_lens(sidecar, "l.lens", GOOD)
    lenses = await sidecar.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    path = str(workspace / "l.lens")
    assert [(l.command.title, l.command.command, list(l.command.arguments), l.range) for l in lenses] == [
        ("Use this lens", "sunwell.useLens", [path], span(0, 6, 14)),
        ("Run skill", "sunwell.runSkill", [path, "find_todos"], span(5, 10, 20)),
        ("Run skill", "sunwell.runSkill", [path, "summarize"], span(11, 10, 19)),
    ]


async def test_features_work_on_a_file_that_is_not_open(sidecar, workspace):
    (workspace / "disk.lens").write_text(GOOD)
    symbols = await sidecar.client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=sidecar.uri("disk.lens"))))
    assert symbols[0].name == "reviewer"
    missing = await sidecar.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=sidecar.uri("missing.lens"))))
    assert list(missing) == []


async def test_diagnostics_follow_edits_on_disk(sidecar_factory, workspace):
    lens_dir = workspace / "lenses"
    lens_dir.mkdir()
    path = lens_dir / "team.lens"
    path.write_text(GOOD)
    sidecar = await sidecar_factory()
    uri = sidecar.uri("lenses/team.lens")
    assert await diagnostics(sidecar, uri) == []  # found at startup, and valid

    path.write_text(GOOD.replace("description: Summarize a file", "descripton: Summarize a file"))
    found = await sidecar.wait_for(lambda: sidecar.client.diagnostics[uri], timeout=15)
    assert {d.code for d in found} == {"unknown-key", "missing-key"}
    unknown = next(d for d in found if d.code == "unknown-key")
    assert unknown.range == span(12, 4, 14)

    path.write_text(GOOD)  # fixed on disk: the diagnostics clear
    await sidecar.wait_for(lambda: list(sidecar.client.diagnostics[uri]) == [], timeout=15)

    (workspace / "new.lens").write_text("name: n\ndescription: d\ncolour: 1\n")  # a new file appears
    new_uri = sidecar.uri("new.lens")
    found = await sidecar.wait_for(lambda: sidecar.client.diagnostics.get(new_uri), timeout=15)
    assert found[0].code == "unknown-key"
    (workspace / "new.lens").unlink()  # and is deleted: its diagnostics go
    await sidecar.wait_for(lambda: list(sidecar.client.diagnostics.get(new_uri)) == [], timeout=15)


async def test_closing_a_buffer_puts_back_what_the_file_on_disk_says(sidecar, workspace):
    (workspace / "saved.lens").write_text(GOOD)
    uri = open_lens(sidecar, "saved.lens", "name: x\ndescription: d\ncolour: red\n")  # unsaved, broken
    assert [d.code for d in await diagnostics(sidecar, uri, 1)] == ["unknown-key"]
    scratch = open_lens(sidecar, "scratch.lens", "name: x\ndescription: d\ncolour: red\n")  # never saved
    assert await diagnostics(sidecar, scratch, 1)
    for closing in (uri, scratch):
        sidecar.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=closing)))
    await sidecar.wait_for(lambda: sidecar.published_versions.get(uri) is None
                           and list(sidecar.client.diagnostics[uri]) == [])
    await sidecar.wait_for(lambda: sidecar.published_versions.get(scratch) is None
                           and list(sidecar.client.diagnostics[scratch]) == [])


async def test_other_languages_get_no_lens_features(sidecar):
    uri = sidecar.uri("notes.md")
    sidecar.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text="tool_policy:\n  trust_level: \n")))
    completion = await sidecar.client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at(1, 15)))
    assert list(completion.items) == []
    assert uri not in sidecar.client.diagnostics


async def test_the_clients_file_watcher_reloads_a_known_lens(sidecar_factory, workspace):
    path = workspace / "known.lens"
    path.write_text(GOOD)
    sidecar = await sidecar_factory({"dataDir": str(workspace.parent / "data")},
                                    env_extra={"WATCHFILES_FORCE_POLLING": "1", "WATCHFILES_POLL_DELAY_MS": "60000"})
    uri = sidecar.uri("known.lens")
    assert await diagnostics(sidecar, uri) == []
    path.write_text("name: x\ndescription: d\ncolour: red\n")  # our own watcher polls once a minute here
    sidecar.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]))
    found = await sidecar.wait_for(lambda: list(sidecar.client.diagnostics[uri]), timeout=5)
    assert found[0].code == "unknown-key"
