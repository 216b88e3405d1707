// The sidecar process (`python -m sunwell serve`) behind a LanguageClient: started with the settings as
// initializationOptions and the API keys in its environment, kept in step with configuration changes, restarted
// when it crashes (reported once per crash, not by the library's own dialogs) or when its environment must change.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Elicitations } from './elicit';
import {
  CloseAction, DidChangeConfigurationNotification, ErrorAction, LanguageClient, State,
  type LanguageClientOptions, type ServerOptions,
} from 'vscode-languageclient/node';
import { interpreterKey } from './common/launch';
import {
  initializationOptions, keepUnaffected, needsRestart, readSettings, sidecarConfiguration, sidecarEnvironment, type Settings,
} from './common/settings';
import type { SidecarStatus } from './common/state';
import {
  Method, type ApprovalRequest, type ApproveResult, type AskParams, type AskResult, type ChatEvent, type CodeIntelParams,
  type CodeIntelResult, type ElicitParams, type Requests, type SecretParams,
} from './protocol';
import type { Launch, PythonEnvironments, Resolution } from './python';
import type { ApiKeyStore } from './secrets';
import { openSetting } from './settingsPlace';
import { answerSecret, checkedShowDocument } from './signIn';

const CRASH_WINDOW_MS = 3 * 60_000;
const MAX_CRASHES = 3;

export type ApprovalHandler = (params: ApprovalRequest, token: vscode.CancellationToken) => Promise<ApproveResult>;
export type QuestionHandler = (params: AskParams, token: vscode.CancellationToken) => Promise<AskResult>;
export type CodeIntelHandler = (params: CodeIntelParams, token: vscode.CancellationToken) => Promise<CodeIntelResult>;

export class Sidecar implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private stopping = false;
  private crashes: number[] = [];
  private crashed = false;
  private running = false;
  private settings: Settings;
  /** The launch that last started, and the interpreter settings it was resolved from: a restart for any other
   *  reason (an endpoint, a key) starts exactly this again, without asking anew which Python to use. */
  private launched: { key: string; launch: Launch } | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  private readonly eventEmitter = new vscode.EventEmitter<ChatEvent>();
  readonly onEvent = this.eventEmitter.event;
  private readonly statusEmitter = new vscode.EventEmitter<{ status: SidecarStatus; message: string | null }>();
  readonly onStatus = this.statusEmitter.event;
  /** The process died; requests in flight have failed. */
  private readonly crashEmitter = new vscode.EventEmitter<void>();
  readonly onCrash = this.crashEmitter.event;
  /** Running again (after a start, a restart or a crash); `afterCrash` says which. */
  private readonly readyEmitter = new vscode.EventEmitter<{ afterCrash: boolean }>();
  readonly onReady = this.readyEmitter.event;

  approvalHandler: ApprovalHandler = async () => ({ decision: 'deny' });
  /** `ask_user`'s questions (the chat's question card) and the editor's language features (codeIntel.ts). */
  questionHandler: QuestionHandler = async () => ({ answer: null });
  codeIntelHandler: CodeIntelHandler = async () => ({ items: [] });
  /** MCP servers' questions to the user (`sunwell/elicit`), each a form. */
  private readonly elicitations = new Elicitations();
  /** 'starting' until the first start has run: activation starts it right away. */
  status: SidecarStatus = 'starting';

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly python: PythonEnvironments,
    private readonly keys: ApiKeyStore,
  ) {
    this.settings = this.readSettings();
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('sunwell')) void this.configurationChanged((key) => e.affectsConfiguration(`sunwell.${key}`));
      }),
      keys.onDidChange(() => void this.restart('an API key changed')),
    );
  }

  get dataDir(): string {
    const dir = this.context.storageUri?.fsPath ?? path.join(this.context.globalStorageUri.fsPath, 'no-workspace');
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  get currentSettings(): Settings {
    return this.settings;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    this.stopping = true;
    try {
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (err) {
      this.log.warn(`stopping the sidecar: ${err}`);
    } finally {
      this.stopping = false;
      await client.dispose().catch(() => undefined);
      this.setStatus('stopped');
    }
  }

  /** `fresh`: look for the interpreter again, with the settings as they are now (the user asked: a Python may have
   *  been installed meanwhile, or the settings read at start-up were not the user's yet). */
  async restart(reason: string, fresh = false): Promise<void> {
    this.log.info(`restarting the sidecar: ${reason}`);
    if (fresh) {
      this.launched = undefined;
      this.settings = this.readSettings();
    }
    this.crashes = [];
    await this.stop();
    await this.start();
  }

  /** Installs the bundled package into the private environment, then starts. */
  async installAndStart(): Promise<void> {
    const base = await this.python.basePython(this.settings);
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Installing Sunwell’s Python package…', cancellable: false },
      () => this.python.install(base),
    ).then(
      () => this.restart('installed'),
      (err: Error) => {
        this.log.error(err.message);
        this.setStatus('notInstalled', err.message);
        void vscode.window.showErrorMessage(`Sunwell: ${err.message}`, 'Show Log').then((a) => a && this.log.show());
      },
    );
  }

  async request<M extends keyof Requests>(method: M, params: Requests[M]['params'], token?: vscode.CancellationToken): Promise<Requests[M]['result']> {
    await this.starting;
    const client = this.client;
    if (!client || client.state !== State.Running) throw new Error('Sunwell’s engine is not running');
    // Never pass an undefined token: vscode-jsonrpc would count it as a second parameter and send `[params, null]`.
    const answer = token ? client.sendRequest(method, params, token) : client.sendRequest(method, params);
    return answer as Promise<Requests[M]['result']>;
  }

  private async doStart(retried = false): Promise<void> {
    this.setStatus('starting');
    const keys = await this.keys.all();
    const env = sidecarEnvironment(this.settings, keys, process.env);
    const key = interpreterKey(this.settings);
    let resolution: Resolution;
    try {
      resolution = this.launched?.key === key && fs.existsSync(this.launched.launch.command)
        ? { kind: 'ready', launch: this.launched.launch }
        : await this.python.resolve(this.settings, env);
    } catch (err) {
      this.setStatus('error', String((err as Error).message ?? err));
      return;
    }
    if (resolution.kind !== 'ready' && !retried) {
      // A remote window (code-server) may hand the extension its machine settings after activation: a read at
      // start-up can miss `sunwell.python` (issue 34 bug 1: after Reload Window, "not installed for python3"), and
      // then it missed the user's other settings too (an endpoint: the engine asked api.openai.com): take them all.
      const now = this.readSettings();
      if (interpreterKey(now) !== key) {
        this.log.info(`the interpreter settings changed while starting (${key} → ${interpreterKey(now)}); reading the settings again`);
        this.settings = now;
        return this.doStart(true);
      }
    }
    if (resolution.kind !== 'ready') {
      this.log.warn(`no engine to start: ${resolution.kind === 'noPython' ? resolution.reason : 'sunwell is not installed'} for ` +
        `${resolution.python} (sunwell.python: ${this.settings.python || 'not set'})`);
    }
    if (resolution.kind === 'noPython') {
      const message = `Sunwell needs Python 3.11 or newer; \`${resolution.python}\` did not run: ${resolution.reason}. Set \`sunwell.python\`.`;
      this.setStatus('error', message);
      void vscode.window.showErrorMessage(message, 'Open Settings').then((a) => {
        if (a) void openSetting('sunwell.python');
      });
      return;
    }
    if (resolution.kind === 'notInstalled') {
      const message = `Sunwell’s Python package is not installed for ${resolution.python}.`;
      this.setStatus('notInstalled', message);
      // Not awaited: requests waiting for the start must fail now, not when the user gets to this message.
      void vscode.window.showInformationMessage(
        `${message} Install it into a private environment (only Sunwell uses it)?`, 'Install',
      ).then((action) => (action === 'Install' ? this.installAndStart() : undefined));
      return;
    }
    const { launch } = resolution;
    this.launched = { key, launch };
    this.log.info(`starting the sidecar: ${launch.command} ${launch.args.join(' ')} [${launch.source}]`);
    // No `transport`: with TransportKind.stdio the client appends `--stdio` to the command line, which
    // `sunwell serve` does not take; without it the process simply speaks on its stdin/stdout.
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { env, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ language: 'lens' }],
      // Read at every initialize: the client starts a crashed engine again with these, and the settings of this
      // launch (the model picked three switches ago) would come back with a value.
      initializationOptions: () => initializationOptions(this.settings, this.dataDir),
      outputChannel: this.log,
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/*.lens') },
      middleware: { window: { showDocument: checkedShowDocument(this.log) } },
      initializationFailedHandler: (error) => {
        this.log.error(`the sidecar failed to initialize: ${error}`);
        return false;
      },
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        closed: () => this.closed(),
      },
    };
    const client = new LanguageClient('sunwell', 'Sunwell', serverOptions, clientOptions);
    this.client = client;
    client.onNotification(Method.chatEvent, (event: ChatEvent) => this.eventEmitter.fire(event));
    client.onRequest(Method.approve, (params: ApprovalRequest, token: vscode.CancellationToken) => this.approvalHandler(params, token));
    client.onRequest(Method.elicit, (params: ElicitParams, token: vscode.CancellationToken) => this.elicitations.ask(params, token));
    client.onRequest(Method.ask, (params: AskParams, token: vscode.CancellationToken) => this.questionHandler(params, token));
    client.onRequest(Method.codeIntel, (params: CodeIntelParams, token: vscode.CancellationToken) => this.codeIntelHandler(params, token));
    client.onRequest(Method.secret, (params: SecretParams) => answerSecret(this.context.secrets, params));
    this.running = false;
    client.onDidChangeState(({ newState }) => {
      if (newState === State.Running) this.running = true;
      if (newState === State.Running && this.crashed) {
        this.crashed = false;
        this.setStatus('ready');
        this.readyEmitter.fire({ afterCrash: true });
      }
    });
    let failure: string | undefined;
    try {
      await client.start();
      if (client.state !== State.Running) failure = 'it exited during initialization';
    } catch (err) {
      failure = String((err as Error).message ?? err);
    }
    if (failure) {
      // The client has already shown its own notification ("couldn't create connection"); the view's banner
      // says what happened and offers the log, so no second toast here.
      const message = `Sunwell’s engine did not start (${failure}). See the Sunwell log for its output.`;
      this.log.error(message);
      this.setStatus('error', message);
      return;
    }
    this.setStatus('ready');
    this.readyEmitter.fire({ afterCrash: false });
  }

  private closed() {
    // A process that never got running failed to start: start() reports that, once, and restarting cannot help.
    if (this.stopping || !this.running) return { action: CloseAction.DoNotRestart, handled: true };
    this.running = false;
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    this.elicitations.expireAll();
    this.crashEmitter.fire();
    if (this.crashes.length > MAX_CRASHES) {
      const message = `Sunwell’s engine stopped ${this.crashes.length} times in 3 minutes and was not restarted.`;
      this.setStatus('error', message);
      void vscode.window.showErrorMessage(message, 'Restart', 'Show Log').then((a) => {
        if (a === 'Restart') void this.restart('asked by the user', true);
        else if (a) this.log.show();
      });
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    this.crashed = true;
    this.setStatus('starting', 'Sunwell’s engine stopped unexpectedly; restarting it.');
    void vscode.window.showWarningMessage('Sunwell’s engine stopped unexpectedly and was restarted.', 'Show Log')
      .then((a) => a && this.log.show());
    return { action: CloseAction.Restart, handled: true };
  }

  private async configurationChanged(affects: (key: string) => boolean): Promise<void> {
    const before = this.settings;
    // Only what the event says changed: a setting it does not name keeps the value the engine runs with.
    this.settings = keepUnaffected(before, this.readSettings(), affects);
    if (needsRestart(before, this.settings)) {
      await this.restart('its settings changed');
    } else if (this.client?.state === State.Running) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { sunwell: sidecarConfiguration(this.settings) },
      });
    }
  }

  private readSettings(): Settings {
    const config = vscode.workspace.getConfiguration('sunwell');
    const { settings, problems } = readSettings((key) => config.get(key));
    for (const problem of problems) {
      this.log.warn(problem);
      void vscode.window.showWarningMessage(`Sunwell: ${problem}`);
    }
    return settings;
  }

  private setStatus(status: SidecarStatus, message: string | null = null): void {
    this.status = status;
    this.statusEmitter.fire({ status, message });
  }

  dispose(): void {
    void this.stop();
    for (const d of this.disposables) d.dispose();
    this.eventEmitter.dispose();
    this.statusEmitter.dispose();
    this.crashEmitter.dispose();
    this.readyEmitter.dispose();
  }
}
