// Pending `sunwell/approve` requests, in the broker every request to the user goes through (requestBroker.ts): the
// chat card, the diff editor's title actions or a notification answers, whichever comes first; the sidecar owns the
// timeout (an unanswered request is denied there) and cancels the request when it gives up, and the card shows it
// expired. An approval adds two things: its preview stays readable after the answer, and a denial carries a note.
import type { ApprovalRequest, Decision } from '../protocol';
import { RequestBroker, type CancellationLike, type RequestChange } from './requestBroker';

/** A denial's note is a few words for the model, not a document. */
export const MAX_NOTE = 500;

export type ApprovalChange = RequestChange<ApprovalRequest, Decision>;

export class ApprovalBroker extends RequestBroker<ApprovalRequest, Decision> {
  /** Previews stay readable after the answer, so a diff opened from an answered card still shows. */
  private readonly seen = new Map<string, ApprovalRequest>();
  /** The words a user gave with a denial, until the answer to the sidecar takes them (`takeNote`). */
  private readonly notes = new Map<string, string>();

  constructor() {
    super({ idOf: (params) => params.callId, unanswered: 'deny' });
  }

  /** Resolves with the decision; with `deny` when the request is cancelled or expired. */
  override request(params: ApprovalRequest, token?: CancellationLike): Promise<Decision> {
    this.seen.set(params.callId, params);
    if (this.seen.size > 200) this.seen.delete(this.seen.keys().next().value as string);
    return super.request(params, token);
  }

  /** The user's answer, with a note for the model when it denies; false when nothing is pending under that id
   *  (already answered or expired). */
  override answer(callId: string, decision: Decision, note?: string): boolean {
    if (!this.isPending(callId)) return false;
    const words = decision === 'deny' ? note?.trim().slice(0, MAX_NOTE) : '';
    if (words) this.notes.set(callId, words);
    return super.answer(callId, decision);
  }

  /** The note given with the answer to `callId`, once. */
  takeNote(callId: string): string | undefined {
    const note = this.notes.get(callId);
    this.notes.delete(callId);
    return note;
  }

  get(callId: string): ApprovalRequest | undefined {
    return this.params(callId) ?? this.seen.get(callId);
  }
}
