// What `@selection`, `@problems` and `@terminal` stand for, read from VS Code when the line is sent, and the workspace's
// files for the `@` picker. A file mention goes to the sidecar as a path (it reads the file itself, through its
// jail); the others go as text, since only the editor knows them.
import * as vscode from 'vscode';
import { formatProblems, type MentionRef } from './common/mentions';
import type { Mention } from './protocol';

const MAX_FILES = 5000;
const EXCLUDE = '{**/node_modules/**,**/.git/**,**/__pycache__/**,**/.venv/**,**/dist/**,**/build/**}';
const TERMINAL_KEEP = 20_000;

/** The part of VS Code's shell-integration API (1.93+) `@terminal` reads, where the running VS Code has it. */
interface ShellExecutionApi {
  onDidStartTerminalShellExecution?: vscode.Event<{ terminal: vscode.Terminal; execution: { commandLine: { value: string }; read(): AsyncIterable<string> } }>;
}

export class MentionSources implements vscode.Disposable {
  private readonly lastOutput = new Map<vscode.Terminal, { command: string; output: string }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    const api = vscode.window as unknown as ShellExecutionApi;
    if (api.onDidStartTerminalShellExecution) {
      this.disposables.push(api.onDidStartTerminalShellExecution(({ terminal, execution }) => void this.record(terminal, execution)));
    }
    this.disposables.push(vscode.window.onDidCloseTerminal((t) => this.lastOutput.delete(t)));
  }

  async files(): Promise<string[]> {
    const uris = await vscode.workspace.findFiles('**/*', EXCLUDE, MAX_FILES);
    return uris.map((uri) => vscode.workspace.asRelativePath(uri, false)).sort();
  }

  /** The mentions as the sidecar takes them: files by path, the rest as text read now. */
  resolve(refs: readonly MentionRef[]): Mention[] {
    return refs.map((ref) => {
      switch (ref.kind) {
        case 'file':
          return { kind: 'file', label: ref.label, path: ref.path ?? ref.label.replace(/^@/, '') };
        case 'selection':
          return { kind: 'selection', label: ref.label, ...this.selection() };
        case 'problems':
          return { kind: 'problems', label: ref.label, text: this.problems() };
        case 'terminal':
          return { kind: 'terminal', label: ref.label, text: this.terminal() };
        case 'resource': // read by the sidecar from its server when the line is sent
          return { kind: 'resource', label: ref.label, server: ref.server, uri: ref.uri };
      }
    });
  }

  private selection(): { path?: string; text: string } {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return { text: '(no editor is active, so there is no selection)' };
    const file = vscode.workspace.asRelativePath(editor.document.uri, false);
    const range = editor.selection.isEmpty ? editor.visibleRanges[0] ?? editor.selection : editor.selection;
    const [from, to] = [range.start.line + 1, range.end.line + 1];
    const what = editor.selection.isEmpty ? 'nothing is selected; the visible lines' : 'selected';
    return { path: file, text: `${file}, lines ${from}-${to} (${what}):\n${editor.document.getText(range)}` };
  }

  private problems(): string {
    const severity = ['error', 'warning', 'info', 'hint'];
    const all = vscode.languages.getDiagnostics().flatMap(([uri, diagnostics]) => diagnostics.map((d) => ({
      path: uri.scheme === 'file' ? vscode.workspace.asRelativePath(uri, false) : uri.toString(),
      line: d.range.start.line + 1, column: d.range.start.character + 1, severity: severity[d.severity] ?? 'info',
      message: `${d.message}${d.source ? ` (${d.source})` : ''}`,
    })));
    all.sort((a, b) => severity.indexOf(a.severity) - severity.indexOf(b.severity) || a.path.localeCompare(b.path) || a.line - b.line);
    return formatProblems(all);
  }

  private terminal(): string {
    const terminal = vscode.window.activeTerminal;
    if (!terminal) return '(no terminal is open)';
    const last = this.lastOutput.get(terminal);
    if (last) return `$ ${last.command}\n${last.output}`;
    const api = vscode.window as unknown as ShellExecutionApi;
    return api.onDidStartTerminalShellExecution
      ? `(no command has run in the terminal "${terminal.name}" with shell integration since Sunwell started)`
      : '(this VS Code cannot read a terminal\'s output: it needs VS Code 1.93 or newer)';
  }

  private async record(terminal: vscode.Terminal, execution: { commandLine: { value: string }; read(): AsyncIterable<string> }) {
    let output = '';
    try {
      for await (const data of execution.read()) {
        output = (output + data).slice(-TERMINAL_KEEP);
      }
    } catch {
      // the terminal closed mid-command: keep what came
    }
    // escape sequences mean nothing to a model
    const clean = output.replace(/\x1b\][^\x07]*(\x07|\x1b\\)/g, '').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
    this.lastOutput.set(terminal, { command: execution.commandLine.value, output: clean });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
