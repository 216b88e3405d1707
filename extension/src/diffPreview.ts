// "Show diff" for a write or edit waiting for approval: VS Code's own diff editor between two virtual documents,
// the file as it is (`before`, empty for a new file) and as the tool would leave it (`after`), both from the
// approval's preview. A command's effects (a staged run) show one such diff per file it changed. The diff editor's
// title bar carries Allow / Deny while the approval is pending.
import * as vscode from 'vscode';
import type { ApprovalBroker } from './common/approvals';
import { PREVIEW_SCHEME } from './common/ids';
import { fileSides } from './common/previewSides';

type Side = 'before' | 'after';

export class DiffPreviews implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly registrations: vscode.Disposable[];

  constructor(private readonly approvals: ApprovalBroker) {
    this.registrations = [
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this),
      // However the approval was settled (chat card, title bar, notification, timeout), its diff has done its job.
      approvals.onDidChange((change) => {
        if (change.type !== 'requested') void this.close(change.id);
      }),
    ];
  }

  static callIdOf(uri: vscode.Uri | undefined): string | undefined {
    if (uri?.scheme !== PREVIEW_SCHEME) return undefined;
    return new URLSearchParams(uri.query).get('callId') ?? undefined;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    const side = fileSides(this.approvals.get(query.get('callId') ?? '')?.preview, query.get('file'));
    if (!side) return '';
    return ((query.get('side') as Side) === 'before' ? side.before : side.after) ?? '';
  }

  /** The diff of a write, or of `file` among the files a command changed. */
  async show(callId: string, file?: string): Promise<void> {
    const side = fileSides(this.approvals.get(callId)?.preview, file ?? null);
    if (!side) {
      void vscode.window.showWarningMessage('Sunwell: this call has no diff to show.');
      return;
    }
    const note = side.before === null ? ' (new file)' : side.after === null ? ' (deleted)' : '';
    const title = `${side.path}${note} ↔ proposed by Sunwell`;
    await vscode.commands.executeCommand('vscode.diff', this.uri(callId, side.path, 'before', file),
      this.uri(callId, side.path, 'after', file), title, { preview: true });
  }

  /** Closes the diff editors of an answered call. */
  async close(callId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) =>
      tab.input instanceof vscode.TabInputTextDiff && DiffPreviews.callIdOf(tab.input.modified) === callId);
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  private uri(callId: string, filePath: string, side: Side, file?: string): vscode.Uri {
    // The real file name keeps the language (and so the highlighting) of the file being written.
    const query = new URLSearchParams({ callId, side, ...(file ? { file } : {}) }).toString();
    return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${filePath.replace(/^\/+/, '')}`, query });
  }

  dispose(): void {
    for (const r of this.registrations) r.dispose();
  }
}

