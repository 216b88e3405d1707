// `sunwell/codeIntel`: the code intelligence tools answered by VS Code's own language features — the Problems
// view's diagnostics, workspace symbols, definitions and references, as the installed language servers know them.
// Locations go back as absolute file paths; the sidecar puts each through its jail (one outside the workspace or
// in a blocked file is dropped there) and reads the line's text itself.
import * as vscode from 'vscode';
import type { CodeIntelParams, CodeIntelResult, CodeLocation } from './protocol';

/** More than a model should read in one answer; the sidecar caps what it shows further. */
const MAX_ITEMS = 500;

const SEVERITY = ['error', 'warning', 'info', 'hint'];

export async function answerCodeIntel(params: CodeIntelParams, token?: vscode.CancellationToken): Promise<CodeIntelResult> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) return { items: [] };
  const items = await locations(params, root);
  return { items: token?.isCancellationRequested ? [] : items.slice(0, MAX_ITEMS) };
}

async function locations(params: CodeIntelParams, root: vscode.Uri): Promise<CodeLocation[]> {
  switch (params.kind) {
    case 'diagnostics':
      return diagnostics(params.path ? vscode.Uri.joinPath(root, params.path) : root);
    case 'symbols':
      return (await symbols(params.query ?? '')).map((s) => at(s.location.uri, s.location.range.start,
        `${s.name} (${vscode.SymbolKind[s.kind]})${s.containerName ? ` in ${s.containerName}` : ''}`));
    case 'definition':
    case 'references': {
      const where = await findSymbol(params.symbol ?? '', params.path ? vscode.Uri.joinPath(root, params.path) : null);
      if (!where) return [];
      const command = params.kind === 'definition' ? 'vscode.executeDefinitionProvider' : 'vscode.executeReferenceProvider';
      const found = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(command, where.uri, where.range.start);
      return (found ?? []).map((l) => ('targetUri' in l ? at(l.targetUri, (l.targetSelectionRange ?? l.targetRange).start, '')
        : at(l.uri, l.range.start, '')));
    }
  }
}

function diagnostics(under: vscode.Uri): CodeLocation[] {
  const prefix = under.fsPath.replace(/[\\/]+$/, '');
  const items: CodeLocation[] = [];
  for (const [uri, found] of vscode.languages.getDiagnostics()) {
    if (uri.scheme !== 'file' || !(uri.fsPath === prefix || uri.fsPath.startsWith(`${prefix}/`) || uri.fsPath.startsWith(`${prefix}\\`))) continue;
    for (const d of found) {
      const source = d.source ? ` (${d.source}${d.code !== undefined ? ` ${typeof d.code === 'object' ? d.code.value : d.code}` : ''})` : '';
      items.push(at(uri, d.range.start, `${SEVERITY[d.severity] ?? 'error'}: ${d.message}${source}`));
    }
  }
  return items;
}

async function symbols(query: string): Promise<vscode.SymbolInformation[]> {
  const found = await vscode.commands.executeCommand<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', query);
  return (found ?? []).filter((s) => s.location.uri.scheme === 'file');
}

/** Where `symbol` is named: its first use as a whole word in `file`, else its declaration among the workspace's
 *  symbols (an exact name first). */
async function findSymbol(symbol: string, file: vscode.Uri | null): Promise<vscode.Location | null> {
  if (!symbol) return null;
  if (file) {
    try {
      const doc = await vscode.workspace.openTextDocument(file);
      const match = new RegExp(`(?<![\\w$])${symbol.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w$])`).exec(doc.getText());
      if (match) return new vscode.Location(file, doc.positionAt(match.index));
    } catch {
      return null; // no such file: nothing to resolve from
    }
  }
  const found = await symbols(symbol);
  const best = found.find((s) => s.name === symbol) ?? found[0];
  return best ? best.location : null;
}

function at(uri: vscode.Uri, position: vscode.Position, text: string): CodeLocation {
  return { path: uri.fsPath, line: position.line + 1, column: position.character + 1, text };
}
