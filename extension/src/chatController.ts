// The open chat session on the extension side: it owns the transcript (the same reducer as the webview), sends
// turns, relays events and approvals, and keeps the session across view reloads, window reloads and sidecar
// crashes. The view only draws what this hands it and reports what the user did.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ApprovalBroker } from './common/approvals';
import type { HostToWebview } from './common/messages';
import { forStorage, initialState, isBusy, newer, reduce, type ChatAction, type ChatState } from './common/state';
import { REQUEST_CANCELLED, type ApproveParams, type ApproveResult, type ChatEvent, type Decision } from './protocol';
import type { Sidecar } from './sidecar';

const SESSION_KEY = 'sunwell.session';
const TRANSCRIPT_KEY = 'sunwell.transcript';
const LENS_KEY = 'sunwell.lens';

export interface ChatViewPort {
  post(message: HostToWebview): void;
  readonly visible: boolean;
  reveal(): Promise<void>;
}

export class ChatController implements vscode.Disposable {
  private state: ChatState = initialState();
  private view: ChatViewPort | undefined;
  private turnCancellation: vscode.CancellationTokenSource | undefined;
  /** Transcripts of the sessions seen in this window, so switching back does not lose tool details. */
  private readonly transcripts = new Map<string, ChatState>();
  private readonly disposables: vscode.Disposable[] = [];
  private currentModel: string | null = null;

  constructor(
    private readonly sidecar: Sidecar,
    readonly approvals: ApprovalBroker,
    private readonly memento: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    const session = memento.get<string>(SESSION_KEY);
    if (session) {
      // After a window reload: the transcript as this extension stored it (else the sidecar's log, once ready).
      const stored = memento.get<ChatState>(TRANSCRIPT_KEY);
      this.state = stored?.version === 1 && stored.session === session ? { ...forStorage(stored), sidecar: this.state.sidecar }
        : { ...this.state, session };
    }
    this.state = reduce(this.state, { type: 'sidecarStatus', status: sidecar.status });
    this.applySettings();

    sidecar.approvalHandler = (params, token) => this.approve(params, token);
    this.disposables.push(
      sidecar.onEvent((event) => this.onEvent(event)),
      sidecar.onStatus(({ status, message }) => this.dispatch({ type: 'sidecarStatus', status, message })),
      sidecar.onCrash(() => this.onCrash()),
      sidecar.onReady(({ afterCrash }) => void this.onSidecarReady(afterCrash)),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('sunwell') && this.applySettings()),
      approvals.onDidChange((change) => {
        if (change.type === 'answered') this.dispatch({ type: 'approvalAnswered', callId: change.callId, decision: change.decision });
        if (change.type === 'expired') this.dispatch({ type: 'approvalExpired', callId: change.callId });
        void vscode.commands.executeCommand('setContext', 'sunwell.pendingApproval', approvals.pendingParams().length > 0);
      }),
    );
  }

  get snapshot(): ChatState {
    return this.state;
  }

  get lens(): string | null {
    return this.memento.get<string>(LENS_KEY) ?? null;
  }

  /** The view (re)connected: hand it the state, or adopt what it saved if this window has nothing newer. */
  attachView(view: ChatViewPort, saved: ChatState | null): void {
    this.view = view;
    const sameSession = saved?.version === 1 && (!this.state.session || saved.session === this.state.session);
    if (sameSession && !isBusy(this.state) && saved.items.length > 0 && newer(this.state, saved) === saved) {
      // A window reload where the webview kept a later copy than the one stored here (both are richer than the
      // sidecar's log: durations, streaming order). Nothing runs in a fresh window: transient parts are cleared.
      let adopted: ChatState = { ...saved, turn: null, sidecar: this.state.sidecar, settings: this.state.settings,
        sessions: this.state.sessions, commands: this.state.commands };
      for (const item of adopted.items) {
        if (item.kind === 'tool' && item.approval?.state === 'pending' && !this.approvals.isPending(item.callId)) {
          adopted = reduce(adopted, { type: 'approvalExpired', callId: item.callId });
        }
      }
      this.state = adopted;
    }
    this.view.post({ type: 'snapshot', state: this.state });
    void this.refreshLists();
  }

  detachView(view: ChatViewPort): void {
    if (this.view === view) this.view = undefined;
  }

  async send(text: string): Promise<void> {
    text = text.trim();
    if (!text) return;
    if (isBusy(this.state)) {
      void vscode.window.showInformationMessage('Sunwell is still working on the last message. Stop it first, or wait.');
      return;
    }
    this.dispatch({ type: 'userMessage', text });
    const cancellation = new vscode.CancellationTokenSource();
    this.turnCancellation = cancellation;
    try {
      const result = await this.sidecar.request('sunwell/chat', {
        session: this.state.session ?? undefined,
        text,
        lens: this.lens ?? undefined,
      }, cancellation.token);
      this.dispatch({ type: 'turnFinished', status: result.status, result });
      if (result.session) this.remember(result.session);
    } catch (err) {
      const cancelled = cancellation.token.isCancellationRequested || (err as { code?: number }).code === REQUEST_CANCELLED;
      this.dispatch({
        type: 'turnFinished',
        status: cancelled ? 'cancelled' : 'error',
        error: cancelled ? undefined : String((err as Error).message ?? err),
      });
    } finally {
      if (this.turnCancellation === cancellation) this.turnCancellation = undefined;
      cancellation.dispose();
      void this.refreshSessions();
    }
  }

  /** Cancels the running `sunwell/chat` request: the client sends `$/cancelRequest`. */
  stop(): void {
    if (!this.turnCancellation) return;
    this.dispatch({ type: 'stopRequested' });
    this.turnCancellation.cancel();
  }

  newSession(): void {
    if (isBusy(this.state)) this.stop();
    this.stash();
    this.dispatch({ type: 'newSession' });
    void this.memento.update(SESSION_KEY, undefined);
    this.view?.post({ type: 'focusInput' });
  }

  async openSession(session: string): Promise<void> {
    if (session === this.state.session) return;
    if (isBusy(this.state)) this.stop();
    this.stash();
    const known = this.transcripts.get(session);
    if (known) {
      this.state = { ...known, sessions: this.state.sessions, commands: this.state.commands, settings: this.state.settings, sidecar: this.state.sidecar };
      this.view?.post({ type: 'snapshot', state: this.state });
    } else {
      await this.loadSession(session);
    }
    this.remember(session);
  }

  async setLens(lens: string | null): Promise<void> {
    await this.memento.update(LENS_KEY, lens ?? undefined);
    this.applySettings();
  }

  answer(callId: string, decision: Decision): boolean {
    return this.approvals.answer(callId, decision);
  }

  focusInput(): void {
    this.view?.post({ type: 'focusInput' });
  }

  setDraft(text: string): void {
    this.view?.post({ type: 'setDraft', text });
  }

  async refreshSessions(): Promise<void> {
    try {
      const { sessions } = await this.sidecar.request('sunwell/sessions', {});
      this.dispatch({ type: 'sessionsListed', sessions });
    } catch (err) {
      this.log.warn(`sunwell/sessions: ${err}`); // the status banner says when the sidecar is not running
    }
  }

  private async refreshLists(): Promise<void> {
    if (this.sidecar.status !== 'ready') return;
    await this.refreshSessions();
    try {
      const { commands } = await this.sidecar.request('sunwell/commands', {});
      this.dispatch({ type: 'commandsListed', commands });
    } catch (err) {
      this.log.warn(`sunwell/commands: ${err}`); // completion is a convenience
    }
    try {
      const { current } = await this.sidecar.request('sunwell/models', {});
      this.currentModel = current;
      this.applySettings();
    } catch (err) {
      this.log.warn(`sunwell/models: ${err}`); // the model chip shows the setting instead
    }
  }

  private async approve(params: ApproveParams, token: vscode.CancellationToken): Promise<ApproveResult> {
    // The card first: a request the sidecar already gave up on then expires it at once.
    this.dispatch({ type: 'approvalRequested', params });
    const pending = this.approvals.request(params, token);
    if (!this.view?.visible) {
      // Never lost: the card waits in the transcript, the view comes forward, and the question can be answered
      // from the notification too.
      if (this.view) await this.view.reveal().catch(() => undefined);
      else await vscode.commands.executeCommand('sunwell.chatView.focus');
      void this.notify(params);
    }
    return { decision: await pending };
  }

  private async notify(params: ApproveParams): Promise<void> {
    const target = params.preview.kind === 'diff' ? `write ${(params.preview as { path: string }).path}`
      : params.preview.kind === 'command' ? `run \`${(params.preview as { command: string }).command}\``
        : `use ${params.name}`;
    const choices = params.preview.kind === 'diff' ? ['Allow', 'Deny', 'Show Diff'] : ['Allow', 'Deny', 'Show in Chat'];
    const choice = await vscode.window.showInformationMessage(`Sunwell wants to ${target}.`, ...choices);
    if (choice === 'Allow') this.approvals.answer(params.callId, 'allow');
    else if (choice === 'Deny') this.approvals.answer(params.callId, 'deny');
    else if (choice === 'Show Diff') void vscode.commands.executeCommand('sunwell.approval.showDiff', params.callId);
    else if (choice === 'Show in Chat') void vscode.commands.executeCommand('sunwell.openChat');
  }

  private onEvent(event: ChatEvent): void {
    this.dispatch(event);
    if (event.type === 'done' && event.session) this.remember(event.session);
  }

  private onCrash(): void {
    this.approvals.expireAll();
  }

  private async onSidecarReady(afterCrash: boolean): Promise<void> {
    await this.refreshLists();
    const session = this.state.session;
    // After a crash the log is the truth (what the turn got to do before it died); after a window reload the
    // transcript comes from the log unless the view brought a saved one.
    if (session && (afterCrash || this.state.items.length === 0)) await this.loadSession(session, afterCrash);
  }

  private async loadSession(session: string, force = false): Promise<void> {
    try {
      const { messages } = await this.sidecar.request('sunwell/session', { session });
      if (!force && this.state.items.length > 0 && this.state.session === session) return; // the view's copy won
      this.dispatch({ type: 'sessionLoaded', session, messages });
    } catch (err) {
      this.dispatch({ type: 'notice', session: this.state.session ?? '', turn: '', seq: 0, level: 'warning',
        code: 'session', message: `Could not load session ${session}: ${(err as Error).message ?? err}` });
    }
  }

  private applySettings(): void {
    const settings = this.sidecar.currentSettings;
    const lens = this.lens;
    this.dispatch({
      type: 'settingsChanged',
      model: settings.model || this.currentModel,
      trust: settings.trustLevel,
      lens: lens ? path.basename(lens).replace(/\.lens$/, '') : null,
    });
  }

  private remember(session: string): void {
    void this.memento.update(SESSION_KEY, session);
  }

  private stash(): void {
    if (this.state.session && this.state.items.length > 0) this.transcripts.set(this.state.session, this.state);
  }

  private persistTimer: ReturnType<typeof setTimeout> | undefined;

  /** Keeps the open session's transcript in the workspace state, for the next window. */
  private persistSoon(): void {
    this.persistTimer ??= setTimeout(() => this.persist(), 1000);
  }

  private persist(): void {
    clearTimeout(this.persistTimer);
    this.persistTimer = undefined;
    void this.memento.update(TRANSCRIPT_KEY, this.state.session ? forStorage(this.state) : undefined);
  }

  private dispatch(action: ChatAction): void {
    const before = this.state;
    this.state = reduce(this.state, action);
    if (this.state === before) return;
    if (this.state.items !== before.items || this.state.session !== before.session) this.persistSoon();
    if (isBusy(before) !== isBusy(this.state)) {
      void vscode.commands.executeCommand('setContext', 'sunwell.busy', isBusy(this.state));
    }
    this.view?.post({ type: 'action', action });
  }

  dispose(): void {
    this.persist();
    this.turnCancellation?.cancel();
    for (const d of this.disposables) d.dispose();
  }
}
