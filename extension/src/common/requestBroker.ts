// The one broker for the sidecar's requests to the user: approvals (`sunwell/approve`), `ask_user`'s questions
// (`sunwell/ask`) and MCP servers' elicitations (`sunwell/elicit`). Each is a promise kept under its request id until
// someone answers it (the chat card, the diff editor's title actions, a notification, a form: whichever comes
// first), its request is cancelled (the sidecar gave up: its time limit, a stopped turn), its time runs out, or the
// sidecar is gone. Whatever ends it ends it once, and listeners hear how. Nothing here depends on the view being
// visible, so a hidden or reloading view loses nothing.

export interface CancellationLike {
  isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export interface BrokerOptions<P, A> {
  /** The request's id (an approval's or a question's tool call id). */
  idOf(params: P): string;
  /** What a request nobody answered settles with: cancelled, timed out, replaced, or the sidecar gone. */
  unanswered: A;
  /** Ends a request nobody answered after this long. None by default: the sidecar keeps the time limits of its
   *  requests (`approvalTimeoutSec`…) and cancels them itself. */
  timeoutMs?: number;
}

export type RequestChange<P, A> =
  | { type: 'requested'; id: string; params: P }
  | { type: 'answered'; id: string; answer: A }
  | { type: 'expired'; id: string };

interface Pending<P, A> {
  params: P;
  resolve(answer: A): void;
  cancellation?: { dispose(): void };
  timer?: ReturnType<typeof setTimeout>;
}

export class RequestBroker<P, A> {
  private readonly pending = new Map<string, Pending<P, A>>();
  private readonly listeners = new Set<(change: RequestChange<P, A>) => void>();

  constructor(private readonly options: BrokerOptions<P, A>) {}

  onDidChange(listener: (change: RequestChange<P, A>) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Resolves with the answer; with `unanswered` when the request is cancelled, times out, or another request
   *  comes under the same id. */
  request(params: P, token?: CancellationLike): Promise<A> {
    const id = this.options.idOf(params);
    return new Promise<A>((resolve) => {
      this.take(id)?.resolve(this.options.unanswered);
      const entry: Pending<P, A> = { params, resolve };
      this.pending.set(id, entry);
      if (token) {
        if (token.isCancellationRequested) {
          this.expire(id);
          return;
        }
        entry.cancellation = token.onCancellationRequested(() => this.expire(id));
      }
      if (this.options.timeoutMs !== undefined) entry.timer = setTimeout(() => this.expire(id), this.options.timeoutMs);
      this.emit({ type: 'requested', id, params });
    });
  }

  /** The user's answer; false when nothing is pending under that id (already answered or expired). */
  answer(id: string, answer: A): boolean {
    const entry = this.take(id);
    if (!entry) return false;
    entry.resolve(answer);
    this.emit({ type: 'answered', id, answer });
    return true;
  }

  expire(id: string): boolean {
    const entry = this.take(id);
    if (!entry) return false;
    entry.resolve(this.options.unanswered);
    this.emit({ type: 'expired', id });
    return true;
  }

  /** The sidecar is gone: nobody is waiting for these answers any more. */
  expireAll(): void {
    for (const id of [...this.pending.keys()]) this.expire(id);
  }

  isPending(id: string): boolean {
    return this.pending.has(id);
  }

  pendingParams(): P[] {
    return [...this.pending.values()].map((p) => p.params);
  }

  /** The params of the request pending under `id`. */
  params(id: string): P | undefined {
    return this.pending.get(id)?.params;
  }

  private take(id: string): Pending<P, A> | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.cancellation?.dispose();
    clearTimeout(entry.timer);
    return entry;
  }

  private emit(change: RequestChange<P, A>): void {
    for (const listener of [...this.listeners]) listener(change);
  }
}
