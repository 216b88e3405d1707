// "Show diff" for a write or edit waiting for approval: VS Code's own diff editor between two virtual documents,
// the file as it is (`before`, empty for a new file) and as the tool would leave it (`after`), both from the
// approval's preview. The diff editor's title bar carries Allow / Deny while the approval is pending.
import * as vscode from 'vscode';
import type { ApprovalBroker } from './common/approvals';
import { PREVIEW_SCHEME } from './common/ids';

type Side = 'before' | 'after';

export class DiffPreviews implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly registrations: vscode.Disposable[];

  constructor(private readonly approvals: ApprovalBroker) {
    this.registrations = [
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this),
      // However the approval was settled (chat card, title bar, notification, timeout), its diff has done its job.
      approvals.onDidChange((change) => {
        if (change.type !== 'requested') void this.close(change.callId);
      }),
    ];
  }

  static callIdOf(uri: vscode.Uri | undefined): string | undefined {
    if (uri?.scheme !== PREVIEW_SCHEME) return undefined;
    return new URLSearchParams(uri.query).get('callId') ?? undefined;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    const preview = this.approvals.get(query.get('callId') ?? '')?.preview;
    if (preview?.kind !== 'diff') return '';
    return (query.get('side') as Side) === 'before' ? preview.before ?? '' : preview.after;
  }

  async show(callId: string): Promise<void> {
    const preview = this.approvals.get(callId)?.preview;
    if (preview?.kind !== 'diff') {
      void vscode.window.showWarningMessage('Sunwell: this call has no diff to show.');
      return;
    }
    const title = `${preview.path} ${preview.before === null ? '(new file)' : ''} ↔ proposed by Sunwell`.replace('  ', ' ');
    await vscode.commands.executeCommand('vscode.diff', this.uri(callId, preview.path, 'before'),
      this.uri(callId, preview.path, 'after'), title, { preview: true });
  }

  /** Closes the diff editors of an answered call. */
  async close(callId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) =>
      tab.input instanceof vscode.TabInputTextDiff && DiffPreviews.callIdOf(tab.input.modified) === callId);
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  private uri(callId: string, filePath: string, side: Side): vscode.Uri {
    // The real file name keeps the language (and so the highlighting) of the file being written.
    const query = new URLSearchParams({ callId, side }).toString();
    return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${filePath.replace(/^\/+/, '')}`, query });
  }

  dispose(): void {
    for (const r of this.registrations) r.dispose();
  }
}
