// Worktree sessions in VS Code (issue 48): "New Session in Worktree" opens the chat on a new worktree session, and
// "Worktree Sessions" lists them (`sunwell/worktrees`) with Review (the branch against its base, file by file in the
// diff editor), Merge, Open the worktree, Continue and Discard (`sunwell/worktreeAction`). The chat panel is reused:
// one worktree session shows at a time, and one left running goes on in the background (chatController.ts).
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import type { ChatController } from './chatController';
import { CHAT_VIEW_ID } from './chatView';
import { changedFiles, stateLabel, WORKTREE_NAME, type ChangedFile } from './common/worktrees';
import type { WorktreeRow } from './protocol';
import type { Sidecar } from './sidecar';

const run = promisify(execFile);
/** The base side of a review: `sunwell-git:/PATH?COMMIT`, the file as that commit has it (empty when absent). */
const BASE_SCHEME = 'sunwell-git';
const LIMIT = 64 * 1024 * 1024;

export function registerWorktreeCommands(controller: ChatController, sidecar: Sidecar): vscode.Disposable[] {
  const register = vscode.commands.registerCommand;
  return [
    vscode.workspace.registerTextDocumentContentProvider(BASE_SCHEME, { provideTextDocumentContent: showAtCommit }),
    register('sunwell.newWorktreeSession', () => newWorktreeSession(controller)),
    register('sunwell.worktreeSessions', () => showWorktrees(controller, sidecar)),
    register('sunwell.continueWorktree', async (name?: string) => {
      const row = name ? (await list(sidecar))?.find((w) => w.name === name) : undefined;
      if (row) await continueSession(controller, row);
    }),
  ];
}

async function newWorktreeSession(controller: ChatController): Promise<void> {
  const name = await vscode.window.showInputBox({
    title: 'Sunwell: New Session in Worktree',
    prompt: 'The session works in its own git worktree, on branch sunwell/NAME. Leave empty to name it from your first line.',
    placeHolder: 'NAME (optional)',
    validateInput: (value) => !value.trim() || WORKTREE_NAME.test(value.trim()) ? null
      : "1-63 letters, digits, '-' or '_', starting with a letter or digit",
  });
  if (name === undefined) return;
  const base = await startFrom();
  if (base === undefined) return;
  await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  controller.newSession(name.trim(), base);
}

/** The branch a new worktree starts from: asked only when the repository has another than the one checked out
 *  (null: that one; undefined: the person went back). */
async function startFrom(): Promise<string | null | undefined> {
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!workspace) return null;
  const { current, others } = await branches(workspace).catch(() => ({ current: '', others: [] as string[] }));
  if (!others.length) return null;
  const picked = await vscode.window.showQuickPick(
    [...(current ? [{ label: current, description: 'checked out' }] : []), ...others.map((b) => ({ label: b, description: '' }))],
    { title: 'Sunwell: New Session in Worktree — start from', placeHolder: 'The branch its worktree is made from' },
  );
  return picked && (picked.label === current ? null : picked.label);
}

/** The repository's own branches (not worktree sessions'): the one checked out, and the others. */
async function branches(workspace: string): Promise<{ current: string; others: string[] }> {
  const current = (await git(workspace, 'branch', '--show-current')).trim();
  const all = (await git(workspace, 'for-each-ref', '--format=%(refname:short)', 'refs/heads')).split('\n');
  return { current, others: all.filter((b) => b && b !== current && !b.startsWith('sunwell/')) };
}

type Action = 'review' | 'merge' | 'open' | 'continue' | 'discard';

async function showWorktrees(controller: ChatController, sidecar: Sidecar): Promise<void> {
  const rows = await list(sidecar);
  if (!rows) return;
  const waiting = controller.worktrees.waiting();
  const chosen = await vscode.window.showQuickPick(
    rows.map((row) => ({ label: row.name, description: `${row.branch} · ${stateLabel(row, waiting)}`,
      detail: `from ${row.base} · ${row.path}`, row })),
    { title: 'Sunwell: Worktree Sessions', placeHolder: rows.length ? 'Choose a worktree session'
      : 'No worktree sessions yet: "Sunwell: New Session in Worktree" starts one' },
  );
  if (!chosen) return;
  const actions: (vscode.QuickPickItem & { action: Action })[] = [
    { label: '$(diff) Review', detail: `Its changes against ${chosen.row.base}, file by file`, action: 'review' },
    { label: '$(git-merge) Merge…', detail: 'Into the branch you choose', action: 'merge' },
    { label: '$(folder-opened) Open the Worktree', detail: 'Its checkout in a new window', action: 'open' },
    { label: '$(comment-discussion) Continue', detail: 'Its session in the chat', action: 'continue' },
    { label: '$(trash) Discard…', detail: 'Its worktree and branch removed', action: 'discard' },
  ];
  const action = await vscode.window.showQuickPick(actions, { title: `Worktree session ${chosen.row.name}` });
  if (!action) return;
  const row = chosen.row;
  try {
    if (action.action === 'review') await review(row);
    else if (action.action === 'merge') await merge(sidecar, row);
    else if (action.action === 'open') await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(row.path), { forceNewWindow: true });
    else if (action.action === 'continue') await continueSession(controller, row);
    else await discard(sidecar, row);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function list(sidecar: Sidecar): Promise<WorktreeRow[] | undefined> {
  try {
    return (await sidecar.request('sunwell/worktrees', {})).worktrees;
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
    return undefined;
  }
}

async function continueSession(controller: ChatController, row: WorktreeRow): Promise<void> {
  await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  // A first turn still running: its row names its session once it ends, the chat knows it from its events.
  const session = row.session ?? controller.worktrees.sessionOf(row.name);
  if (session) await controller.openSession(session, row.name);
  else controller.newSession(row.name);
}

/** The branch against the commit it was made from, in VS Code's multi-file diff editor: the base side from git,
 *  the other the worktree's checkout (committed at each turn's end, so the same as its branch). */
async function review(row: WorktreeRow): Promise<void> {
  const base = row.baseCommit ?? row.base;
  const files = changedFiles(await git(row.path, 'diff', '--no-ext-diff', '--name-status', '-z', base, row.branch, '--'));
  if (!files.length) {
    void vscode.window.showInformationMessage(`Sunwell: worktree session ${row.name} changed nothing against ${row.base}.`);
    return;
  }
  const side = (file: ChangedFile) => [
    vscode.Uri.file(path.join(row.path, file.path)),
    file.oldPath === null ? undefined : vscode.Uri.from({ scheme: BASE_SCHEME, path: `/${file.oldPath}`, query: `${row.path}\0${base}` }),
    file.status === 'D' ? undefined : vscode.Uri.file(path.join(row.path, file.path)),
  ];
  await vscode.commands.executeCommand('vscode.changes', `${row.name}: ${row.branch} against ${row.base}`, files.map(side));
}

async function showAtCommit(uri: vscode.Uri): Promise<string> {
  const [cwd, commit] = uri.query.split('\0');
  return git(cwd, 'show', `${commit}:${uri.path.slice(1)}`);
}

async function merge(sidecar: Sidecar, row: WorktreeRow): Promise<void> {
  const { current, others } = await branches(vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? row.path);
  const into = await vscode.window.showQuickPick(
    [current, ...others].filter(Boolean).map((b) => ({ label: b, description: b === current ? 'checked out' : '' })),
    { title: `Merge ${row.branch} into…` },
  );
  if (!into) return;
  // A conflict is the sidecar's one line: the merge is left to the user's tools.
  const { message } = await sidecar.request('sunwell/worktreeAction', { name: row.name, action: 'merge', into: into.label });
  void vscode.window.showInformationMessage(`Sunwell: ${message}`);
}

async function discard(sidecar: Sidecar, row: WorktreeRow): Promise<void> {
  const sure = await vscode.window.showWarningMessage(`Discard worktree session ${row.name}?`,
    { modal: true, detail: `Its worktree (${row.path}) and its branch ${row.branch} are removed.` }, 'Discard');
  if (sure !== 'Discard') return;
  try {
    const { message } = await sidecar.request('sunwell/worktreeAction', { name: row.name, action: 'discard' });
    void vscode.window.showInformationMessage(`Sunwell: ${message}`);
  } catch (err) {
    const text = String((err as Error).message ?? err);
    if (!/uncommitted/.test(text)) throw err;
    const force = await vscode.window.showWarningMessage(`Sunwell: ${text}`, { modal: true,
      detail: 'Discard anyway loses those changes.' }, 'Discard Anyway');
    if (force !== 'Discard Anyway') return;
    const { message } = await sidecar.request('sunwell/worktreeAction', { name: row.name, action: 'discard', force: true });
    void vscode.window.showInformationMessage(`Sunwell: ${message}`);
  }
}

/** Git for reading (a diff, a file at a commit, the branches): no hook runs for these. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-c', 'core.hooksPath=/dev/null', ...args], { cwd, maxBuffer: LIMIT, encoding: 'utf8' });
  return stdout;
}
