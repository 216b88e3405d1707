// Pending `sunwell/approve` requests. Each is a promise kept until someone answers it: the chat card, the diff
// editor's title actions or a notification, whichever comes first. The sidecar owns the timeout (an unanswered
// request is denied there); when it gives up it cancels the request, and the card shows it expired. Nothing here
// depends on the view being visible, so a hidden or reloading view loses nothing.
import type { ApprovalRequest, Decision } from '../protocol';

export interface CancellationLike {
  isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

interface Pending {
  params: ApprovalRequest;
  resolve(decision: Decision): void;
  cancellation?: { dispose(): void };
}

/** A denial's note is a few words for the model, not a document. */
export const MAX_NOTE = 500;

export type ApprovalChange =
  | { type: 'requested'; params: ApprovalRequest }
  | { type: 'answered'; callId: string; decision: Decision }
  | { type: 'expired'; callId: string };

export class ApprovalBroker {
  private readonly pending = new Map<string, Pending>();
  /** Previews stay readable after the answer, so a diff opened from an answered card still shows. */
  private readonly seen = new Map<string, ApprovalRequest>();
  /** The words a user gave with a denial, until the answer to the sidecar takes them (`takeNote`). */
  private readonly notes = new Map<string, string>();
  private readonly listeners = new Set<(change: ApprovalChange) => void>();

  onDidChange(listener: (change: ApprovalChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Resolves with the decision; with `deny` when the request is cancelled or expired. */
  request(params: ApprovalRequest, token?: CancellationLike): Promise<Decision> {
    this.seen.set(params.callId, params);
    if (this.seen.size > 200) this.seen.delete(this.seen.keys().next().value as string);
    return new Promise<Decision>((resolve) => {
      const entry: Pending = { params, resolve };
      this.pending.get(params.callId)?.resolve('deny');
      this.pending.set(params.callId, entry);
      if (token) {
        if (token.isCancellationRequested) {
          this.expire(params.callId);
          return;
        }
        entry.cancellation = token.onCancellationRequested(() => this.expire(params.callId));
      }
      this.emit({ type: 'requested', params });
    });
  }

  /** The user's answer, with a note for the model when it denies; false when nothing is pending under that id
   *  (already answered or expired). */
  answer(callId: string, decision: Decision, note?: string): boolean {
    const entry = this.take(callId);
    if (!entry) return false;
    const words = decision === 'deny' ? note?.trim().slice(0, MAX_NOTE) : '';
    if (words) this.notes.set(callId, words);
    entry.resolve(decision);
    this.emit({ type: 'answered', callId, decision });
    return true;
  }

  expire(callId: string): boolean {
    const entry = this.take(callId);
    if (!entry) return false;
    entry.resolve('deny');
    this.emit({ type: 'expired', callId });
    return true;
  }

  /** The sidecar is gone: nobody is waiting for these answers any more. */
  expireAll(): void {
    for (const callId of [...this.pending.keys()]) this.expire(callId);
  }

  /** The note given with the answer to `callId`, once. */
  takeNote(callId: string): string | undefined {
    const note = this.notes.get(callId);
    this.notes.delete(callId);
    return note;
  }

  isPending(callId: string): boolean {
    return this.pending.has(callId);
  }

  pendingParams(): ApprovalRequest[] {
    return [...this.pending.values()].map((p) => p.params);
  }

  get(callId: string): ApprovalRequest | undefined {
    return this.pending.get(callId)?.params ?? this.seen.get(callId);
  }

  private take(callId: string): Pending | undefined {
    const entry = this.pending.get(callId);
    if (!entry) return undefined;
    this.pending.delete(callId);
    entry.cancellation?.dispose();
    return entry;
  }

  private emit(change: ApprovalChange): void {
    for (const listener of [...this.listeners]) listener(change);
  }
}
