// Pending `sunwell/ask` requests (`ask_user`), in the broker every request to the user goes through
// (requestBroker.ts): kept until the person answers in the chat's question card, declines, or the sidecar gives up
// (its time limit, a stopped turn) and cancels the request.
import type { AskParams } from '../protocol';
import { RequestBroker, type RequestChange } from './requestBroker';

/** An answer is a few sentences for the model, not a document. */
export const MAX_ANSWER = 4000;

export type QuestionChange = RequestChange<AskParams, string | null>;

export class QuestionBroker extends RequestBroker<AskParams, string | null> {
  constructor() {
    super({ idOf: (params) => params.callId, unanswered: null });
  }

  /** The person's answer (null: declined), trimmed; false when nothing is pending under that id. */
  override answer(callId: string, answer: string | null): boolean {
    return super.answer(callId, answer === null ? null : answer.trim().slice(0, MAX_ANSWER) || null);
  }
}
