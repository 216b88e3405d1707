// The chat as a webview view in Sunwell's activity-bar container. Hygiene per STYLE.md 9: CSP `default-src 'none'`
// with a nonce, local resources only from dist/ and media/, messages checked against the tagged union, and a ready
// handshake after which the controller sends a snapshot of the transcript.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ChatController, ChatViewPort } from './chatController';
import { isWebviewMessage, type HostToWebview, type WebviewToHost } from './common/messages';
import { openSetting } from './settingsPlace';

export { CHAT_VIEW_ID } from './common/ids';

export interface ChatViewActions {
  /** A write's diff; for a command's effects, the diff of one of the files it changed. */
  showDiff(callId: string, path?: string): void;
  pick(target: 'model' | 'trust' | 'lens'): void;
  installPythonPackage(): void;
  showLog(): void;
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
    private readonly actions: ChatViewActions,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    const roots = [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'extension', 'media')];
    view.webview.options = { enableScripts: true, localResourceRoots: roots };
    view.webview.html = this.html(view.webview);
    const port: ChatViewPort = {
      post: (message: HostToWebview) => void view.webview.postMessage(message),
      get visible() {
        return view.visible;
      },
      reveal: async () => view.show(true),
    };
    view.webview.onDidReceiveMessage((message: unknown) => {
      if (isWebviewMessage(message)) this.handle(message, port);
    });
    view.onDidDispose(() => this.controller.detachView(port));
  }

  private handle(message: WebviewToHost, port: ChatViewPort): void {
    switch (message.type) {
      case 'ready':
        this.controller.attachView(port);
        break;
      case 'send':
        void this.controller.send(message.text, message.mentions ?? [], message.replaces, message.images ?? []);
        break;
      case 'listFiles':
        void this.controller.listFiles();
        break;
      case 'stop':
        this.controller.stop();
        break;
      case 'approve':
        this.controller.answer(message.callId, message.decision, message.note);
        break;
      case 'answer':
        this.controller.requests.questions.answer(message.callId, message.answer);
        break;
      case 'showDiff':
        this.actions.showDiff(message.callId, message.path);
        break;
      case 'newSession':
        this.controller.newSession();
        break;
      case 'openSession':
        void this.controller.openSession(message.session);
        break;
      case 'refreshSessions':
        void this.controller.refreshSessions();
        break;
      case 'pick':
        this.actions.pick(message.target);
        break;
      case 'copy':
        void vscode.env.clipboard.writeText(message.text);
        break;
      case 'openLink':
        void openLink(message.href);
        break;
      case 'installPythonPackage':
        this.actions.installPythonPackage();
        break;
      case 'showLog':
        this.actions.showLog();
        break;
      case 'retry':
        void this.controller.retry();
        break;
      case 'resume':
        void this.controller.resume();
        break;
      case 'undoTurn':
        void this.controller.undoTurn(message.turn);
        break;
      case 'setApiKey':
        void vscode.commands.executeCommand('sunwell.setApiKey');
        break;
      case 'openSetting':
        void openSetting(message.key);
        break;
      case 'processStop':
        void this.controller.processes.stop(message.processId);
        break;
      case 'processOpen':
        void this.controller.processes.open(message.processId, message.port);
        break;
      case 'processDismiss':
        this.controller.processes.dismiss(message.processId);
        break;
    }
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString('base64');
    const asset = (...p: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, ...p)).toString();
    // Images only from the extension or inline data: a remote image in model output would be a way to send
    // workspace content to a third party.
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta http-equiv="Content-Security-Policy" content="${csp}">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <link rel="stylesheet" href="${asset('dist', 'codicons', 'codicon.css')}" nonce="${nonce}">
  <link rel="stylesheet" href="${asset('extension', 'media', 'chat.css')}" nonce="${nonce}">
  <title>Sunwell</title>
</head>
<body>
  <div id="app" data-testid="chat-root"></div>
  <script nonce="${nonce}" src="${asset('dist', 'webview.js')}"></script>
</body>
</html>`;
  }
}

async function openLink(href: string): Promise<void> {
  if (/^(https?|mailto):/i.test(href)) {
    await vscode.env.openExternal(vscode.Uri.parse(href));
    return;
  }
  // A relative path in the answer: a file of the workspace (never anything outside it, nor another scheme).
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const [raw, line] = href.split('#L');
  let file: string;
  try {
    file = decodeURIComponent(raw);
  } catch {
    return;
  }
  if (!folder || /^[a-z][\w+.-]*:/i.test(file) || /^[\\/]/.test(file) || file.split(/[\\/]/).includes('..')) return;
  const target = vscode.Uri.joinPath(folder, file);
  const selection = line ? new vscode.Range(Number(line) - 1, 0, Number(line) - 1, 0) : undefined;
  await vscode.window.showTextDocument(target, { selection, preview: true }).then(undefined, () => undefined);
}
