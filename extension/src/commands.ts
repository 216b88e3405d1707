// The `sunwell.*` commands of the manifest and the pickers the chat view opens (model, trust level, lens).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChatController } from './chatController';
import { CHAT_VIEW_ID } from './chatView';
import { commandLine } from './common/commandline';
import { undoSummary } from './common/format';
import { API_KEYS, type KeyProvider } from './common/settings';
import { DiffPreviews } from './diffPreview';
import { showLearnedApis } from './learnedApis';
import { showMcpServers } from './mcpServers';
import { Vocabulary, type Decision, type TrustName } from './protocol';
import type { ApiKeyStore } from './secrets';
import type { Sidecar } from './sidecar';
import { machineScoped } from './settingsPlace';

const TRUST_DESCRIPTIONS: Record<TrustName, string> = {
  discovery: 'List and search files only',
  read_only: 'Also read files',
  workspace: 'Also write and edit files (each write asks)',
  shell: 'Also run shell commands (each command asks)',
  full: 'Everything, including network tools',
};

export interface CommandDeps {
  controller: ChatController;
  sidecar: Sidecar;
  keys: ApiKeyStore;
  diffs: DiffPreviews;
  log: vscode.LogOutputChannel;
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const { controller, sidecar, diffs } = deps;
  const answerFromDiff = (decision: Decision) => async (uri?: vscode.Uri) => {
    const callId = DiffPreviews.callIdOf(uri) ?? DiffPreviews.callIdOf(vscode.window.activeTextEditor?.document.uri)
      ?? (await pickPendingApproval(controller));
    if (!callId) return;
    if (!controller.answer(callId, decision)) {
      void vscode.window.showInformationMessage('Sunwell: this approval was already answered.');
      await diffs.close(callId);
    }
  };
  const register = vscode.commands.registerCommand;
  return [
    register('sunwell.openChat', async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      controller.focusInput();
    }),
    register('sunwell.newSession', async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      controller.newSession();
    }),
    register('sunwell.stop', () => controller.stop()),
    register('sunwell.selectModel', () => selectModel(sidecar)),
    register('sunwell.setTrustLevel', () => setTrustLevel()),
    register('sunwell.useLens', (arg?: string | vscode.Uri) => useLens(controller, arg)),
    register('sunwell.runSkill', async (lens?: string | vscode.Uri, skill?: string) => {
      if (lens) await controller.setLens(toPath(lens));
      await vscode.commands.executeCommand('sunwell.openChat');
      if (skill) await controller.send(commandLine('run', skill));
    }),
    register('sunwell.undoLastTurn', () => undoLastTurn(controller, sidecar)),
    register('sunwell.setApiKey', () => setApiKey(deps.keys)),
    register('sunwell.setWebSearchKey', () => setWebSearchKey(deps.keys)),
    register('sunwell.showAuditLog', () => showAuditLog(sidecar)),
    register('sunwell.restartSidecar', () => sidecar.restart('asked by the user', true)),
    register('sunwell.showSessions', () => showSessions(controller, sidecar)),
    register('sunwell.mcpServers', () => showMcpServers(sidecar)),
    register('sunwell.learnedApis', () => showLearnedApis(sidecar, deps.keys, async (text) => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      controller.setDraft(text);
    })),
    register('sunwell.installPythonPackage', () => sidecar.installAndStart()),
    register('sunwell.showLog', () => deps.log.show()),
    register('sunwell.approval.allow', answerFromDiff('allow')),
    register('sunwell.approval.allowSession', answerFromDiff('allowSession')),
    register('sunwell.approval.deny', answerFromDiff('deny')),
    register('sunwell.approval.showDiff', (callId: string) => diffs.show(callId)),
  ];
}

/** The view's chips open these; when the picker closes, chosen or not, `then` runs (the focus back in the chat). */
export function pick(target: 'model' | 'trust' | 'lens', then: () => Promise<void>): void {
  const command = { model: 'sunwell.selectModel', trust: 'sunwell.setTrustLevel', lens: 'sunwell.useLens' }[target];
  void Promise.resolve(vscode.commands.executeCommand(command)).finally(then);
}

/** Writes a setting where it is in force: the workspace when set there (and allowed there), else the user settings.
 *  Machine-scoped settings (trust, interpreter, endpoints) are never written to a workspace: a workspace file must
 *  not raise what the user granted. */
async function updateSetting(key: string, value: unknown): Promise<void> {
  const config = vscode.workspace.getConfiguration('sunwell');
  const inspect = config.inspect(key);
  const inWorkspace = inspect?.workspaceValue !== undefined && !machineScoped(key);
  const target = inWorkspace ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await config.update(key, value, target);
}

async function selectModel(sidecar: Sidecar): Promise<void> {
  const current = vscode.workspace.getConfiguration('sunwell').get<string>('model') ?? '';
  const quickPick = vscode.window.createQuickPick<vscode.QuickPickItem & { model?: string }>();
  quickPick.title = 'Sunwell: Select Model';
  quickPick.placeholder = 'PROVIDER:MODEL, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, ollama:qwen2.5:7b';
  quickPick.busy = true;
  quickPick.show();
  const custom = { label: '$(edit) Use the model string typed above', alwaysShow: true, model: '' };
  const fromConfig = { label: '$(settings-gear) Sunwell config', description: 'the model in config.yaml or SUNWELL_MODEL', model: '' };
  try {
    const { models, current: effective } = await sidecar.request('sunwell/models', {});
    quickPick.items = [
      ...models.map((m) => ({ label: m.id, description: m.served ? `${m.provider} · offered by the server` : m.provider,
        detail: describeCapabilities(m.capabilities),
        picked: m.id === (current || effective), model: m.id })),
      { label: '', kind: vscode.QuickPickItemKind.Separator },
      fromConfig,
      custom,
    ];
  } catch {
    quickPick.items = [fromConfig, custom];
  }
  quickPick.busy = false;
  const chosen = await new Promise<string | undefined>((resolve) => {
    quickPick.onDidAccept(() => {
      const item = quickPick.selectedItems[0];
      resolve(item === custom || !item ? quickPick.value.trim() : item.model);
      quickPick.hide();
    });
    quickPick.onDidHide(() => resolve(undefined));
  });
  quickPick.dispose();
  if (chosen !== undefined) await updateSetting('model', chosen);
}

function describeCapabilities(capabilities: Record<string, unknown>): string | undefined {
  const parts: string[] = [];
  if (capabilities.nativeTools === false || capabilities.native_tools === false) parts.push('tools by emulation');
  const window = capabilities.contextWindow ?? capabilities.context_window;
  if (typeof window === 'number') parts.push(`${Math.round(window / 1000)}k context`);
  return parts.join(' · ') || undefined;
}

async function setTrustLevel(): Promise<void> {
  const current = vscode.workspace.getConfiguration('sunwell').get<string>('trustLevel');
  const chosen = await vscode.window.showQuickPick(
    Vocabulary.TrustName.map((level) => ({ label: level, description: level === current ? '(current)' : '', detail: TRUST_DESCRIPTIONS[level] })),
    { title: 'Sunwell: Set Trust Level', placeHolder: 'Which tools the model may use' },
  );
  if (chosen) await updateSetting('trustLevel', chosen.label);
}

function toPath(arg: string | vscode.Uri): string {
  return typeof arg === 'string' ? (arg.startsWith('file:') ? vscode.Uri.parse(arg).fsPath : arg) : arg.fsPath;
}

async function useLens(controller: ChatController, arg?: string | vscode.Uri): Promise<void> {
  if (arg) {
    await controller.setLens(toPath(arg));
    await vscode.commands.executeCommand('sunwell.openChat');
    return;
  }
  const files = await vscode.workspace.findFiles('**/*.lens', '**/node_modules/**', 200);
  const none = { label: '$(circle-slash) No lens', path: null as string | null };
  const items = [
    none,
    ...files.map((uri) => ({ label: path.basename(uri.fsPath, '.lens'), description: vscode.workspace.asRelativePath(uri), path: uri.fsPath })),
  ];
  const chosen = await vscode.window.showQuickPick(items, { title: 'Sunwell: Use Lens', placeHolder: 'A lens shapes the model’s role and tools' });
  if (chosen) await controller.setLens(chosen.path);
}

async function undoLastTurn(controller: ChatController, sidecar: Sidecar, force = false): Promise<void> {
  const session = controller.snapshot.session;
  if (!session) {
    void vscode.window.showInformationMessage('Sunwell: nothing to undo in this chat.');
    return;
  }
  try {
    void vscode.window.showInformationMessage(undoSummary(await sidecar.request('sunwell/undo', { session, force })));
  } catch (err) {
    const message = String((err as Error).message ?? err);
    if (force) {
      void vscode.window.showErrorMessage(`Sunwell: undo failed: ${message}`);
      return;
    }
    // A conflict (files changed since the turn wrote them) undoes nothing unless forced; ask before overwriting.
    const choice = await vscode.window.showWarningMessage(`Sunwell could not undo the last turn: ${message}`,
      { modal: true, detail: 'Undo anyway overwrites the changes made to those files since.' }, 'Undo Anyway');
    if (choice === 'Undo Anyway') await undoLastTurn(controller, sidecar, true);
  }
}

async function setApiKey(keys: ApiKeyStore): Promise<void> {
  const providers = Object.keys(API_KEYS) as KeyProvider[];
  const items = await Promise.all(providers.map(async (provider) => ({
    label: API_KEYS[provider].label,
    description: (await keys.has(provider)) ? 'set' : '',
    detail: `Passed to the engine as ${API_KEYS[provider].env}`,
    provider,
  })));
  const chosen = await vscode.window.showQuickPick(items, { title: 'Sunwell: Set API Key', placeHolder: 'Which provider' });
  if (!chosen) return;
  const value = await vscode.window.showInputBox({
    title: `${chosen.label} API key`,
    prompt: 'Stored in VS Code’s secret storage. Leave empty to remove the key.',
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  await keys.set(chosen.provider, value.trim());
}

/** The key of the search service (Brave, Tavily), passed to the engine in the variable `sunwell.webSearch.apiKeyEnv` names. */
async function setWebSearchKey(keys: ApiKeyStore): Promise<void> {
  const variable = vscode.workspace.getConfiguration('sunwell').get<string>('webSearch.apiKeyEnv') || 'SUNWELL_WEB_SEARCH_KEY';
  const value = await vscode.window.showInputBox({
    title: 'Sunwell: web search API key',
    prompt: `Stored in VS Code’s secret storage and passed to the engine as ${variable}. Leave empty to remove the key.`,
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  await keys.set('webSearch', value.trim());
}

async function showAuditLog(sidecar: Sidecar): Promise<void> {
  const dir = path.join(sidecar.dataDir, 'audit');
  const logs = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^tools-.*\.jsonl$/.test(f)).sort() : [];
  if (!logs.length) {
    void vscode.window.showInformationMessage('Sunwell: no tool has run in this workspace yet, so the audit log is empty.');
    return;
  }
  let file = logs[logs.length - 1];
  if (logs.length > 1) {
    const chosen = await vscode.window.showQuickPick([...logs].reverse(), { title: 'Sunwell: Show Audit Log' });
    if (!chosen) return;
    file = chosen;
  }
  await vscode.window.showTextDocument(vscode.Uri.file(path.join(dir, file)), { preview: true });
}

async function showSessions(controller: ChatController, sidecar: Sidecar): Promise<void> {
  try {
    const { sessions } = await sidecar.request('sunwell/sessions', {});
    const chosen = await vscode.window.showQuickPick(
      sessions.map((s) => ({ label: s.title || s.id, description: `${s.turns} turn${s.turns === 1 ? '' : 's'}`,
        detail: new Date(s.updatedAt).toLocaleString(), id: s.id })),
      { title: 'Sunwell: Sessions', placeHolder: sessions.length ? 'Reopen a session' : 'No sessions yet' },
    );
    if (!chosen) return;
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    await controller.openSession(chosen.id);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function pickPendingApproval(controller: ChatController): Promise<string | undefined> {
  const pending = controller.requests.approvals.pendingParams();
  if (pending.length <= 1) return pending[0]?.callId;
  const chosen = await vscode.window.showQuickPick(pending.map((p) => ({ label: p.name, description: JSON.stringify(p.arguments).slice(0, 80), callId: p.callId })));
  return chosen?.callId;
}
