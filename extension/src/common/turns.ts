// Which `sunwell/chat` request is the open chat's. At most one is: the turn the user started here. A turn the chat
// leaves while it runs (New Session, another session opened) is cancelled and disowned: whatever it still sends,
// events or approval requests, belongs to no chat. Events carry no request id, but a turn's events all arrive
// before its answer (docs/sidecar.md "Cancelling a turn"), so once every left turn has answered, what comes is
// the chat's own turn's; until then the chat's next turn waits, and nothing that arrives is shown.

export interface OwnTurn {
  /** Set when the chat left this turn: its answer is nobody's any more. */
  readonly left: boolean;
}

interface Entry extends OwnTurn {
  left: boolean;
  cancel(): void;
  settled: Promise<void>;
  settle(): void;
}

export class ChatTurns {
  private own: Entry | undefined;
  private readonly leaving = new Set<Promise<void>>();

  /** A turn of the open chat is running (its request is out, or waits for a left turn to answer). */
  get running(): boolean {
    return this.own !== undefined;
  }

  /** Whether what the sidecar sends now may be the open chat's: its turn runs and no left turn is still talking. */
  get listening(): boolean {
    return this.own !== undefined && this.leaving.size === 0;
  }

  /** The open chat starts a turn; `cancel` stops its request. Call `end` when the request is answered or failed. */
  begin(cancel: () => void): OwnTurn {
    this.leave();
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const turn: Entry = { left: false, cancel, settled, settle };
    this.own = turn;
    return turn;
  }

  end(turn: OwnTurn): void {
    const entry = turn as Entry;
    if (this.own === entry) this.own = undefined;
    entry.settle();
  }

  /** Stop: cancels the open chat's turn, which stays the chat's (its `done` ends it in the transcript). */
  stop(): boolean {
    if (!this.own) return false;
    this.own.cancel();
    return true;
  }

  /** The chat leaves its running turn: cancelled, and nothing it still sends is the chat's. */
  leave(): void {
    const turn = this.own;
    if (!turn) return;
    this.own = undefined;
    turn.left = true;
    turn.cancel();
    this.leaving.add(turn.settled);
    void turn.settled.then(() => this.leaving.delete(turn.settled));
  }

  /** The chat leaves its running turn without stopping it (a worktree session goes on in its own checkout): no
   *  longer the chat's, and nothing to wait for, since its events name its session and the chat's reducer keeps
   *  only its own session's. Returns the turn, to end when its request answers. */
  detach(): OwnTurn | undefined {
    const turn = this.own;
    if (!turn) return undefined;
    this.own = undefined;
    turn.left = true;
    return turn;
  }

  /** A detached turn becomes the chat's again (Continue on its worktree session); `cancel` stops it. */
  adopt(turn: OwnTurn, cancel: () => void): void {
    this.leave();
    const entry = turn as Entry;
    entry.left = false;
    entry.cancel = cancel;
    this.own = entry;
  }

  /**
   * Resolves once every left turn has answered. A sidecar must answer a cancelled turn within 2 s; one that does
   * not is given up on after `timeoutMs`, so that the chat is never stuck behind it.
   */
  async quiet(timeoutMs = 5000): Promise<void> {
    if (this.leaving.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    const outcome = await Promise.race([Promise.all([...this.leaving]), late]);
    clearTimeout(timer);
    if (outcome === 'late') this.leaving.clear();
  }
}
