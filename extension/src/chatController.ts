// The open chat session on the extension side: it owns the one transcript (built by the same reducer as the
// webview's, from live events and from a stored session's replayed events alike), sends turns, relays events and
// approvals, and keeps the transcript in the workspace state for the next window. The view only draws what this
// hands it and reports what the user did.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ChatProcesses } from './chatProcesses';
import { ChatRequests } from './chatRequests';
import { ChatWorktrees } from './chatWorktrees';
import type { ApprovalBroker } from './common/approvals';
import { isCommandLine } from './common/commandline';
import { undoSummary } from './common/format';
import type { ImageUpload } from './common/images';
import { mentionsFromLabels, type MentionRef, type ResourceRef } from './common/mentions';
import type { HostToWebview } from './common/messages';
import { forStorage, initialState, isBusy, lastExchange, reduce, type ChatAction, type ChatState } from './common/state';
import { ChatTurns } from './common/turns';
import { REQUEST_CANCELLED, type ChatEvent, type ChatResult, type Decision } from './protocol';
import type { MentionSources } from './mentionSources';
import type { Sidecar } from './sidecar';

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
  private readonly turns = new ChatTurns();
  private readonly disposables: vscode.Disposable[] = [];
  private currentModel: string | null = null;
  /** Counts session loads, so that only the last one asked for lands. */
  private loads = 0;
  /** Approvals and `ask_user`'s questions (`questions.answer`: null declines): cards in the transcript. */
  readonly requests: ChatRequests;
  /** The session's background processes: the processes strip's rows and buttons. */
  readonly processes: ChatProcesses;
  readonly worktrees: ChatWorktrees; // the worktree session the chat's lines go to, and those left running

  constructor(
    private readonly sidecar: Sidecar,
    approvals: ApprovalBroker,
    private readonly memento: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
    private readonly mentionSources: MentionSources,
  ) {
    // After a window reload: the transcript as this window last stored it (nothing runs in a new window).
    const stored = memento.get<ChatState>(TRANSCRIPT_KEY);
    if (stored?.version === 1 && stored.session) this.state = { ...forStorage(stored), sidecar: this.state.sidecar };
    this.state = reduce(this.state, { type: 'sidecarStatus', status: sidecar.status });
    this.applySettings();

    this.requests = new ChatRequests(approvals, {
      route: (session) => this.worktrees.route(session),
      worktreeOf: (session) => this.worktrees.worktreeOf(session),
      dispatch: (action) => this.dispatch(action),
      view: () => this.view,
    });
    this.worktrees = new ChatWorktrees(sidecar, memento, log, { state: () => this.state, turns: this.turns,
      approvals: () => this.requests.approvals, dispatch: (a) => this.dispatch(a), load: (s) => this.load(s) });
    this.processes = new ChatProcesses(sidecar, { state: () => this.state, dispatch: (a) => this.dispatch(a), view: () => this.view }, log);
    sidecar.approvalHandler = (params, token) => this.requests.approve(params, token);
    sidecar.questionHandler = (params, token) => this.requests.ask(params, token);
    this.disposables.push(
      this.requests,
      this.processes,
      sidecar.onEvent((event) => this.onEvent(event)),
      sidecar.onStatus(({ status, message }) => this.dispatch({ type: 'sidecarStatus', status, message })),
      sidecar.onCrash(() => this.onCrash()),
      sidecar.onReady(({ afterCrash }) => void this.onSidecarReady(afterCrash)),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('sunwell') && this.applySettings()),
    );
  }

  get snapshot(): ChatState {
    return this.state;
  }

  get lens(): string | null {
    return this.memento.get<string>(LENS_KEY) ?? null;
  }

  /** The view (re)connected: hand it the transcript. */
  attachView(view: ChatViewPort): void {
    this.view = view;
    this.view.post({ type: 'snapshot', state: this.state });
    void this.refreshLists();
  }

  detachView(view: ChatViewPort): void {
    if (this.view === view) this.view = undefined;
  }

  /**
   * Sends a line. With `replaces` (Edit & resend, Retry) it goes in place of the last exchange, the one that turn
   * ended: the transcript drops it and the sidecar takes the conversation back to before it (`replaceTurn`), so the
   * model never sees it again; the log keeps it. A `::command` replaces nothing: it is no part of the conversation.
   * `images` (pasted, dropped) go to the sidecar as base64; the transcript keeps their names and thumbnails only.
   */
  async send(text: string, mentionRefs: readonly MentionRef[] = [], replaces?: string,
    images: readonly ImageUpload[] = []): Promise<void> {
    text = text.trim();
    if (!text) return;
    if (isBusy(this.state)) {
      this.log.info(`not sent, a turn is running (${JSON.stringify(this.state.turn)}): ${text.slice(0, 80)}`);
      void vscode.window.showInformationMessage('Sunwell is still working on the last message. Stop it first, or wait.');
      return;
    }
    const exchange = replaces && !isCommandLine(text) ? lastExchange(this.state) : null;
    if (exchange && exchange.end.turn !== replaces) {
      this.log.info(`not sent: the exchange of turn ${replaces} is no longer the last one`);
      void vscode.window.showInformationMessage('Sunwell: the message you edited is no longer the last one; nothing was sent.');
      this.setDraft(text);
      return;
    }
    const place = await this.worktrees.forLine(text); // {} in the workspace; the worktree (and a new one's base)
    this.lastLine = { text, mentions: mentionRefs, images };
    const mentions = this.mentionSources.resolve(mentionRefs);
    this.dispatch({ type: 'userMessage', text, ...(mentions.length ? { mentions: mentions.map((m) => m.label) } : {}),
      ...(images.length ? { images: images.map((i) => ({ name: i.name, ...(i.thumb ? { thumb: i.thumb } : {}) })) } : {}),
      ...(exchange ? { replaces: exchange.end.turn } : {}) });
    await this.runTurn((token) => this.sidecar.request('sunwell/chat', {
      session: this.state.session ?? undefined,
      text,
      lens: this.lens ?? undefined,
      ...place,
      ...(mentions.length ? { mentions } : {}),
      ...(images.length ? { images: images.map((i) => ({ data: i.data, mediaType: i.mediaType })) } : {}),
      // a turn that never reached the log (it failed before it began) left nothing to take back
      ...(exchange?.logged ? { replaceTurn: exchange.end.turn } : {}),
    }, token));
  }

  /** Resume (and a logged failed turn's Retry): the session's last turn goes on where its log ends. */
  async resume(): Promise<void> {
    const session = this.state.session;
    const last = this.state.items[this.state.items.length - 1];
    if (!session || isBusy(this.state) || last?.kind !== 'turnEnd' || !last.resumable) return;
    this.dispatch({ type: 'turnResumed', turn: last.turn });
    await this.runTurn((token) => this.sidecar.request('sunwell/resume', { session }, token));
  }

  private async runTurn(request: (token: vscode.CancellationToken) => Promise<ChatResult>): Promise<void> {
    const cancellation = new vscode.CancellationTokenSource();
    const turn = this.turns.begin(() => cancellation.cancel());
    this.worktrees.started(() => cancellation.cancel());
    try {
      await this.turns.quiet(); // a turn this chat left is still ending: what it sends must not land here
      if (turn.left) return;
      const result = await request(cancellation.token);
      if (!turn.left) this.dispatch({ type: 'turnFinished', status: result.status, result });
    } catch (err) {
      const cancelled = cancellation.token.isCancellationRequested || (err as { code?: number }).code === REQUEST_CANCELLED;
      if (!turn.left) {
        this.dispatch({
          type: 'turnFinished',
          status: cancelled ? 'cancelled' : 'error',
          error: cancelled ? undefined : String((err as Error).message ?? err),
        });
      }
    } finally {
      this.turns.end(turn);
      cancellation.dispose();
      this.worktrees.ended(turn);
      void this.refreshSessions();
      void this.refreshUsage();
      if (this.sidecar.status === 'ready') void this.refreshCommands();
    }
  }

  /**
   * Retry (regenerate) the last answer, whatever its end: the same line, with what it had attached, sent again in
   * place of its exchange. A turn the log can take up (interrupted, or a provider error) resumes instead.
   */
  async retry(): Promise<void> {
    const exchange = lastExchange(this.state);
    if (!exchange || exchange.command || isBusy(this.state)) return;
    if (exchange.end.resumable) return this.resume();
    const last = this.lastLine;
    const same = last?.text === exchange.user.text;
    const mentions = same ? last.mentions : mentionsFromLabels(exchange.user.mentions ?? []);
    // the images go again when this window sent them (the transcript keeps no bytes)
    await this.send(exchange.user.text, mentions, exchange.end.turn, same ? last.images : []);
  }

  private lastLine: { text: string; mentions: readonly MentionRef[]; images: readonly ImageUpload[] } | undefined;
  /** The MCP servers' resources, for the `@` picker (from `sunwell/commands`). */
  private resources: ResourceRef[] = [];
  /** The workspace's files as the `@` picker last got them (null: not asked for yet). */
  private listedFiles: string[] | null = null;

  /** The workspace's files, for the `@` picker. */
  async listFiles(): Promise<void> {
    try {
      this.listedFiles = await this.mentionSources.files();
      this.view?.post({ type: 'files', files: this.listedFiles, resources: this.resources });
    } catch (err) {
      this.log.warn(`listing the workspace's files: ${err}`);
    }
  }

  /** The Undo button of a turn: puts back the files of the session's newest turn not undone yet. */
  async undoTurn(turn: string): Promise<void> {
    const session = this.state.session;
    if (!session || isBusy(this.state)) return;
    try {
      const result = await this.sidecar.request('sunwell/undo', { session });
      this.dispatch({ type: 'turnUndone', turn: result.turn ?? turn });
      void vscode.window.showInformationMessage(undoSummary(result));
    } catch (err) {
      // A conflict (files changed since the turn) undoes nothing: the palette's Undo Last Turn can force it.
      void vscode.window.showWarningMessage(`Sunwell could not undo the turn: ${(err as Error).message ?? err}`, 'Undo Anyway')
        .then((choice) => choice && vscode.commands.executeCommand('sunwell.undoLastTurn'));
    }
  }

  /** Tokens and cost of the open session, per turn and in total (the footer, the turns' ends). */
  async refreshUsage(): Promise<void> {
    const session = this.state.session;
    if (!session || this.sidecar.status !== 'ready') return;
    try {
      const usage = await this.sidecar.request('sunwell/usage', { session });
      this.dispatch({ type: 'usageReported', session, usage });
    } catch (err) {
      this.log.warn(`sunwell/usage: ${err}`); // an older sidecar: the turns' own figures still show
    }
  }

  /** Cancels the running `sunwell/chat` request: the client sends `$/cancelRequest`. */
  stop(): void {
    if (!this.turns.running) return;
    this.dispatch({ type: 'stopRequested' });
    this.turns.stop();
  }

  /** A new, empty chat (in `worktree`); a turn that runs is left (chatWorktrees.ts: stopped, or in the background). */
  newSession(worktree: string | null = null, base: string | null = null): void {
    this.worktrees.enter(worktree, base);
    this.loads++;
    this.dispatch({ type: 'newSession' });
    this.persist();
    this.view?.post({ type: 'focusInput' });
  }

  /** Opens a stored session (of `worktree`: its turn taken back from the background); a running turn is left. */
  async openSession(session: string, worktree: string | null = null): Promise<void> {
    if (session === this.state.session && worktree === this.worktrees.name) return;
    this.worktrees.enter(worktree);
    if (isBusy(this.state)) this.dispatch({ type: 'turnFinished', status: 'cancelled' }); // until the other shows
    await this.load(session);
    this.worktrees.takeBack(session);
  }

  async setLens(lens: string | null): Promise<void> {
    await this.memento.update(LENS_KEY, lens ?? undefined);
    this.applySettings();
  }

  answer(callId: string, decision: Decision, note?: string): boolean {
    return this.requests.approvals.answer(callId, decision, note);
  }

  focusInput(): void {
    this.view?.post({ type: 'focusInput' });
  }

  /** After a picker the chat opened, with the view focused: the focus where it was in the chat. */
  refocus(): void {
    this.view?.post({ type: 'refocus' });
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

  /** The `::commands` and the MCP servers' resources: at start, and after each turn (a turn starts the MCP servers
   *  it needs, whose prompts become commands and whose resources become mentions). */
  private async refreshCommands(): Promise<void> {
    try {
      const { commands, resources } = await this.sidecar.request('sunwell/commands', {});
      this.resources = (resources ?? []).map((r) => ({ server: r.server, uri: r.uri, name: r.name }));
      this.dispatch({ type: 'commandsListed', commands });
      if (this.listedFiles) this.view?.post({ type: 'files', files: this.listedFiles, resources: this.resources });
    } catch (err) {
      this.log.warn(`sunwell/commands: ${err}`); // completion is a convenience
    }
  }

  private async refreshLists(): Promise<void> {
    if (this.sidecar.status !== 'ready') return;
    await this.refreshSessions();
    await this.refreshCommands();
    try {
      const { current } = await this.sidecar.request('sunwell/models', {});
      this.currentModel = current;
      this.applySettings();
    } catch (err) {
      this.log.warn(`sunwell/models: ${err}`); // the model chip shows the setting instead
    }
  }

  private onEvent(event: ChatEvent): void {
    // A process's change comes between turns too; the reducer keeps those of the open session.
    // A worktree session's turn in the background is not the chat's: its events are in its log, for Continue.
    if ((this.turns.listening && !this.worktrees.inBackground(event.session)) || event.type === 'process') this.dispatch(event);
    if (event.type === 'process') this.processes.soon();
  }

  private onCrash(): void {
    this.requests.expireAll();
  }

  private async onSidecarReady(afterCrash: boolean): Promise<void> {
    await this.refreshLists();
    void this.processes.refresh(); // what a dead engine left running shows as orphaned
    // After a crash the log is the truth: what the turn got to do before the sidecar died. So it is after any start
    // whose stored transcript ends in a turn that did not finish (the window reloaded mid-turn): it shows Resume.
    const last = this.state.items[this.state.items.length - 1];
    const unfinished = last !== undefined && (last.kind !== 'turnEnd' || last.status === 'error' || last.status === 'interrupted');
    if ((afterCrash || unfinished) && this.state.session && !this.turns.running) await this.load(this.state.session);
  }

  /** A stored session: its events, replayed through the reducer, become the transcript. */
  private async load(session: string): Promise<void> {
    const load = ++this.loads;
    try {
      await this.turns.quiet(); // a left turn of that very session logs its end first
      const { events } = await this.sidecar.request('sunwell/session', { session });
      if (load !== this.loads || this.turns.running) return; // the user moved on meanwhile
      this.dispatch({ type: 'sessionLoaded', session, events });
      this.persist();
      void this.refreshUsage();
      void this.processes.refresh();
    } catch (err) {
      if (load !== this.loads) return;
      this.dispatch({ type: 'problem', code: 'session', message: `Could not load session ${session}: ${(err as Error).message ?? err}` });
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

  private persistTimer: ReturnType<typeof setTimeout> | undefined;

  /** Keeps the open session's transcript in the workspace state, for the next window: its only stored copy. */
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
    if (isBusy(before) !== isBusy(this.state)) {
      void vscode.commands.executeCommand('setContext', 'sunwell.busy', isBusy(this.state));
    }
    if (isBusy(before) && !isBusy(this.state)) this.persist(); // a turn ended: stored at once
    else if (this.state.items !== before.items || this.state.session !== before.session) this.persistSoon();
    this.view?.post({ type: 'action', action });
    if (this.state.processes !== before.processes) this.processes.track();
  }

  dispose(): void {
    this.persist();
    this.turns.stop();
    this.worktrees.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
