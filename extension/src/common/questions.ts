// Pending `sunwell/ask` requests (`ask_user`): each is a promise kept until the person answers in the chat's question
// card, declines, or the sidecar gives up (its time limit, a stopped turn) and cancels the request. Like approvals,
// nothing here depends on the view being visible.
import type { AskParams } from '../protocol';
import type { CancellationLike } from './approvals';

/** An answer is a few sentences for the model, not a document. */
export const MAX_ANSWER = 4000;

export type QuestionChange =
  | { type: 'answered'; callId: string; answer: string | null }
  | { type: 'expired'; callId: string };

interface Pending {
  params: AskParams;
  resolve(answer: string | null): void;
  cancellation?: { dispose(): void };
}

export class QuestionBroker {
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Set<(change: QuestionChange) => void>();

  onDidChange(listener: (change: QuestionChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Resolves with the answer; null when the person declines, or the request is cancelled. */
  request(params: AskParams, token?: CancellationLike): Promise<string | null> {
    return new Promise((resolve) => {
      this.pending.get(params.callId)?.resolve(null);
      const entry: Pending = { params, resolve };
      this.pending.set(params.callId, entry);
      if (token?.isCancellationRequested) {
        this.expire(params.callId);
        return;
      }
      if (token) entry.cancellation = token.onCancellationRequested(() => this.expire(params.callId));
    });
  }

  /** The person's answer (null: declined); false when nothing is pending under that id. */
  answer(callId: string, answer: string | null): boolean {
    const entry = this.take(callId);
    if (!entry) return false;
    const text = answer === null ? null : answer.trim().slice(0, MAX_ANSWER) || null;
    entry.resolve(text);
    this.emit({ type: 'answered', callId, answer: text });
    return true;
  }

  expire(callId: string): boolean {
    const entry = this.take(callId);
    if (!entry) return false;
    entry.resolve(null);
    this.emit({ type: 'expired', callId });
    return true;
  }

  expireAll(): void {
    for (const callId of [...this.pending.keys()]) this.expire(callId);
  }

  isPending(callId: string): boolean {
    return this.pending.has(callId);
  }

  private take(callId: string): Pending | undefined {
    const entry = this.pending.get(callId);
    if (!entry) return undefined;
    this.pending.delete(callId);
    entry.cancellation?.dispose();
    return entry;
  }

  private emit(change: QuestionChange): void {
    for (const listener of [...this.listeners]) listener(change);
  }
}
