// The open session's background processes on the extension side: the rows of the processes strip kept up to date
// from `sunwell/processes` (when a session is opened, when the engine (re)starts, after each `process` event, and
// every POLL_MS while one runs and the chat is visible, for each one's latest lines), and the strip's buttons:
// Stop (`sunwell/processStop`), Open in browser, Dismiss.
import * as vscode from 'vscode';
import type { ChatViewPort } from './chatController';
import { openablePort, type ChatAction, type ChatState } from './common/state';
import type { Sidecar } from './sidecar';

/** How often the tails of running processes are read while the chat is visible. */
const POLL_MS = 1500;
/** Bytes of each process's latest output asked for: a few lines' worth, and one long line. */
const TAIL_BYTES = 2000;

export interface ChatProcessHost {
  state(): ChatState;
  dispatch(action: ChatAction): void;
  view(): ChatViewPort | undefined;
}

export class ChatProcesses implements vscode.Disposable {
  private timer: ReturnType<typeof setInterval> | undefined;
  private soonTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly sidecar: Sidecar, private readonly host: ChatProcessHost,
    private readonly log: vscode.LogOutputChannel) {}

  /** The open session's processes as the sidecar has them now (orphaned ones included after a restart). */
  async refresh(): Promise<void> {
    const session = this.host.state().session;
    if (!session || this.sidecar.status !== 'ready') return;
    try {
      const { processes } = await this.sidecar.request('sunwell/processes', { session, tail: TAIL_BYTES });
      this.host.dispatch({ type: 'processesListed', session, processes });
    } catch (err) {
      this.log.warn(`sunwell/processes: ${err}`); // the events still keep the rows, without their tails
    }
  }

  /** A process changed (its event): its row is up to date already; its tail and whether it is isolated come next. */
  soon(): void {
    clearTimeout(this.soonTimer);
    this.soonTimer = setTimeout(() => void this.refresh(), 200);
  }

  /** After each change of the chat's state: polls the tails while a process runs, and only then. */
  track(): void {
    const running = this.host.state().processes.some((p) => p.state === 'running');
    if (running && !this.timer) {
      this.timer = setInterval(() => this.host.view()?.visible && void this.refresh(), POLL_MS);
    } else if (!running && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  async stop(processId: number): Promise<void> {
    const session = this.host.state().session;
    if (!session) return;
    try {
      await this.sidecar.request('sunwell/processStop', { session, processId });
    } catch (err) {
      void vscode.window.showWarningMessage(`Sunwell could not stop process ${processId}: ${(err as Error).message ?? err}`);
    }
    await this.refresh();
  }

  /** Open in browser: only a port a running process of the session listens on here (the webview is not trusted to
   *  name any other). Through asExternalUri, so a remote or browser-based VS Code (code-server) forwards it. */
  async open(processId: number, port: number): Promise<void> {
    if (!openablePort(this.host.state(), processId, port)) {
      this.log.info(`not opened: port ${port} is not one process ${processId} of this session listens on here`);
      return;
    }
    const uri = await vscode.env.asExternalUri(vscode.Uri.parse(`http://127.0.0.1:${port}/`));
    await vscode.env.openExternal(uri);
  }

  dismiss(processId: number): void {
    this.host.dispatch({ type: 'processDismissed', processId });
  }

  dispose(): void {
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
  }
}
