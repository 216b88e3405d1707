// The chat's worktree sessions (issue 48): which worktree the open chat's lines go to (`sunwell/chat`'s
// `worktree`), and the worktree turns it left running. One chat shows at a time; a worktree session's turn the chat
// leaves (New Session, another session opened) is not stopped but goes on in the background in its own checkout:
// its events stay in its log, its approvals wait for the person (a notification, the Worktree Sessions list), and
// Continue takes it back, its pending approvals as cards. Any other turn the chat leaves is stopped, as before.
import type * as vscode from 'vscode';
import type { ApprovalBroker } from './common/approvals';
import type { ChatAction, ChatState } from './common/state';
import type { ChatTurns, OwnTurn } from './common/turns';
import { worktreeNameFor } from './common/worktrees';
import type { Sidecar } from './sidecar';

const WORKTREE_KEY = 'sunwell.worktree';

interface BackgroundTurn {
  worktree: string;
  /** Null until the turn's first event or request names it. */
  session: string | null;
  turn: OwnTurn;
  cancel(): void;
}

export interface ChatWorktreeHost {
  state(): ChatState;
  readonly turns: ChatTurns;
  approvals(): ApprovalBroker;
  dispatch(action: ChatAction): void;
  load(session: string): Promise<void>;
}

export class ChatWorktrees {
  /** The worktree session the chat's lines go to; '' names a new one from the first line; null: the workspace. */
  name: string | null;
  /** The worktree of the turn the chat runs now, and how to stop it: what goes to the background on leaving. */
  private running: { worktree: string; cancel(): void } | null = null;
  private readonly background: BackgroundTurn[] = [];
  /** The branch a new worktree session is made from, until its first line is sent; null: the one checked out. */
  private base: string | null = null;

  constructor(private readonly sidecar: Sidecar, private readonly memento: vscode.Memento,
    private readonly log: vscode.LogOutputChannel, private readonly host: ChatWorktreeHost) {
    this.name = host.state().session ? memento.get<string>(WORKTREE_KEY) ?? null : null;
    if (this.name !== null) host.dispatch({ type: 'settingsChanged', worktree: this.name });
  }

  set(worktree: string | null): void {
    this.name = worktree;
    void this.memento.update(WORKTREE_KEY, worktree ?? undefined);
    this.host.dispatch({ type: 'settingsChanged', worktree });
  }

  /** Where a line goes (`sunwell/chat`'s `worktree`, and for a new one its `worktreeBase`): a new session without a
   *  name takes one from its first line (the engine continues a name that exists, so the chat names it against the
   *  list). */
  async forLine(line: string): Promise<{ worktree?: string; worktreeBase?: string }> {
    const base = this.base;
    this.base = null; // the first line makes the worktree; the next ones continue it
    const name = await this.nameFor(line);
    return name ? { worktree: name, ...(base ? { worktreeBase: base } : {}) } : {};
  }

  private async nameFor(line: string): Promise<string | null> {
    if (this.name !== '') return this.name;
    let taken = new Set<string>();
    try {
      taken = new Set((await this.sidecar.request('sunwell/worktrees', {})).worktrees.map((w) => w.name));
    } catch (err) {
      this.log.warn(`sunwell/worktrees: ${err}`); // the engine then says what is wrong with the repository
    }
    this.set(worktreeNameFor(line, taken));
    return this.name;
  }

  /** The chat starts a turn; `cancel` stops it. */
  started(cancel: () => void): void {
    this.running = this.name ? { worktree: this.name, cancel } : null;
  }

  /** The chat opens another session, in `worktree` (null: the workspace; a new one made from `base`, else from
   *  the branch checked out); it leaves its turn first. */
  enter(worktree: string | null, base: string | null = null): void {
    this.leave();
    this.set(worktree);
    this.base = base;
  }

  /** The chat leaves its turn: a worktree session's goes on in the background, any other is stopped. */
  private leave(): void {
    const running = this.running;
    const turn = running ? this.host.turns.detach() : undefined;
    if (!running || !turn) {
      this.host.turns.leave();
      return;
    }
    this.background.push({ worktree: running.worktree, session: this.host.state().session, turn, cancel: running.cancel });
    this.log.info(`worktree session ${running.worktree} goes on in the background`);
  }

  /** After `session` was opened: when its turn runs in the background, the chat follows it again. */
  takeBack(session: string): void {
    const entry = this.background.find((b) => b.session === session);
    if (!entry || this.host.state().session !== session || this.host.turns.running) return;
    this.background.splice(this.background.indexOf(entry), 1);
    const pending = this.host.approvals().pendingParams().filter((p) => p.session === session);
    this.host.dispatch({ type: 'turnResumed', turn: pending[0]?.turn ?? '' });
    this.host.turns.adopt(entry.turn, entry.cancel);
    this.running = { worktree: entry.worktree, cancel: entry.cancel };
    for (const params of pending) this.host.dispatch({ type: 'approvalRequested', params });
  }

  /** A turn's request answered: one that ran in the background is over (shown anew if its session is open). */
  ended(turn: OwnTurn): void {
    const index = this.background.findIndex((b) => b.turn === turn);
    if (index < 0) return;
    const [entry] = this.background.splice(index, 1);
    this.log.info(`worktree session ${entry.worktree} ended its turn in the background`);
    if (entry.session && entry.session === this.host.state().session && !this.host.turns.running) void this.host.load(entry.session);
  }

  /** Where a request of `session` goes: a card of the chat's turn, a background worktree session's wait for the
   *  person, or refused (a turn the chat left and stopped). */
  route(session: string): 'card' | 'background' | 'refuse' {
    const state = this.host.state();
    if (this.host.turns.listening && !(state.session && session !== state.session)) return 'card';
    const known = this.background.find((b) => b.session === session)
      ?? this.background.find((b) => b.session === null); // its first request came before any event named it
    if (!known) return 'refuse';
    known.session = session;
    return 'background';
  }

  /** Whether `session`'s turn runs in the background (its events are not the chat's). */
  inBackground(session: string | undefined): boolean {
    return this.background.some((b) => b.session === session);
  }

  /** The session of worktree `name` as the chat knows it: its turn in the background, or the one it shows. */
  sessionOf(name: string): string | undefined {
    const state = this.host.state();
    return this.background.find((b) => b.worktree === name && b.session)?.session
      ?? (this.name === name && state.session ? state.session : undefined);
  }

  /** The worktree whose turn runs in the background under `session`. */
  worktreeOf(session: string): string | undefined {
    return this.background.find((b) => b.session === session)?.worktree;
  }

  /** The worktree sessions whose turn (in the background or in the chat) waits for an approval. */
  waiting(): Set<string> {
    const waiting = new Set<string>();
    const open = this.host.state().session;
    for (const params of this.host.approvals().pendingParams()) {
      const name = this.worktreeOf(params.session) ?? (params.session === open ? this.name : null);
      if (name) waiting.add(name);
    }
    return waiting;
  }

  dispose(): void {
    for (const entry of this.background) entry.cancel();
  }
}
