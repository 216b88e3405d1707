// Composition root: builds the parts and wires them together; each lives in its own module.
import * as vscode from 'vscode';
import { ChatController } from './chatController';
import { CHAT_VIEW_ID, ChatViewProvider } from './chatView';
import { answerCodeIntel } from './codeIntel';
import { pick, registerCommands } from './commands';
import { ApprovalBroker } from './common/approvals';
import { DiffPreviews } from './diffPreview';
import { MentionSources } from './mentionSources';
import { PythonEnvironments } from './python';
import { ApiKeyStore } from './secrets';
import { Sidecar } from './sidecar';
import { registerWorktreeCommands } from './worktreeSessions';

let sidecar: Sidecar | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Sunwell', { log: true });
  const keys = new ApiKeyStore(context.secrets);
  sidecar = new Sidecar(context, log, new PythonEnvironments(context, log), keys);
  const approvals = new ApprovalBroker();
  const diffs = new DiffPreviews(approvals);
  const mentions = new MentionSources();
  const controller = new ChatController(sidecar, approvals, context.workspaceState, log, mentions);
  sidecar.codeIntelHandler = answerCodeIntel;
  const view = new ChatViewProvider(context.extensionUri, controller, {
    showDiff: (callId, file) => void diffs.show(callId, file),
    // When the picker closes, the focus goes back into the chat, where it was (issue 34 bug 4: the workbench had it)
    pick: (target) => pick(target, async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      controller.refocus();
    }),
    installPythonPackage: () => void vscode.commands.executeCommand('sunwell.installPythonPackage'),
    showLog: () => log.show(),
  });

  context.subscriptions.push(
    log, keys, sidecar, diffs, mentions, controller,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, view),
    ...registerCommands({ controller, sidecar, keys, diffs, log }),
    ...registerWorktreeCommands(controller, sidecar),
  );
  // Not awaited: the view and the commands are usable (and show the status) while the Python side starts.
  void sidecar.start();
}

export async function deactivate(): Promise<void> {
  await sidecar?.stop();
}
