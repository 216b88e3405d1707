// The one broker behind every request to the user (approvals, questions, elicitations): keyed by request id, settled
// once, by an answer, a cancelled request, its time running out or the sidecar going away.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApprovalBroker } from '../src/common/approvals';
import { QuestionBroker } from '../src/common/questions';
import { RequestBroker, type RequestChange } from '../src/common/requestBroker';
import type { AskParams } from '../src/protocol';

interface Asked {
  id: string;
  text: string;
}

const broker = (timeoutMs?: number) =>
  new RequestBroker<Asked, string>({ idOf: (asked) => asked.id, unanswered: 'none', ...(timeoutMs === undefined ? {} : { timeoutMs }) });

/** A cancellation token like the one vscode-languageclient hands a request handler. */
function token() {
  const listeners: (() => void)[] = [];
  return {
    isCancellationRequested: false,
    onCancellationRequested(listener: () => void) {
      listeners.push(listener);
      return { dispose: () => listeners.splice(listeners.indexOf(listener), 1) };
    },
    cancel() {
      this.isCancellationRequested = true;
      for (const l of [...listeners]) l();
    },
    get listening() {
      return listeners.length;
    },
  };
}

describe('RequestBroker', () => {
  it('keeps a request under its id until it is answered, once, and says so', async () => {
    const requests = broker();
    const changes: RequestChange<Asked, string>[] = [];
    requests.onDidChange((c) => changes.push(c));
    const answer = requests.request({ id: 'r1', text: 'which?' });
    assert.deepEqual(requests.pendingParams(), [{ id: 'r1', text: 'which?' }]);
    assert.equal(requests.params('r1')?.text, 'which?');
    assert.equal(requests.answer('r1', 'this one'), true);
    assert.equal(await answer, 'this one');
    assert.equal(requests.answer('r1', 'again'), false);
    assert.equal(requests.isPending('r1'), false);
    assert.deepEqual(changes, [
      { type: 'requested', id: 'r1', params: { id: 'r1', text: 'which?' } },
      { type: 'answered', id: 'r1', answer: 'this one' },
    ]);
  });

  it('settles a cancelled request as unanswered, and one cancelled before it arrived at once', async () => {
    const requests = broker();
    const changes: string[] = [];
    requests.onDidChange((c) => changes.push(`${c.type} ${c.id}`));
    const t = token();
    const answer = requests.request({ id: 'r2', text: '?' }, t);
    assert.equal(t.listening, 1);
    t.cancel();
    assert.equal(await answer, 'none');
    assert.equal(t.listening, 0, 'the cancellation listener is disposed with the request');
    const late = token();
    late.cancel();
    assert.equal(await requests.request({ id: 'r3', text: '?' }, late), 'none');
    assert.deepEqual(changes, ['requested r2', 'expired r2', 'expired r3']);
  });

  it('ends a request nobody answered when its time runs out', async () => {
    const requests = broker(20);
    const changes: string[] = [];
    requests.onDidChange((c) => changes.push(c.type));
    assert.equal(await requests.request({ id: 'r4', text: '?' }), 'none');
    assert.deepEqual(changes, ['requested', 'expired']);
    const answered = requests.request({ id: 'r5', text: '?' });
    requests.answer('r5', 'quick');
    assert.equal(await answered, 'quick');
    await new Promise((resolve) => setTimeout(resolve, 40));
    assert.deepEqual(changes, ['requested', 'expired', 'requested', 'answered'], 'an answered request does not expire later');
  });

  it('settles the earlier request when another comes under the same id; the earlier token no longer reaches it', async () => {
    const requests = broker();
    const first = token();
    const earlier = requests.request({ id: 'r6', text: 'one' }, first);
    const later = requests.request({ id: 'r6', text: 'two' });
    assert.equal(await earlier, 'none');
    first.cancel();
    assert.equal(requests.isPending('r6'), true);
    requests.answer('r6', 'two it is');
    assert.equal(await later, 'two it is');
  });

  it('expires everything when the sidecar is gone', async () => {
    const requests = broker();
    const all = Promise.all([requests.request({ id: 'a', text: '' }), requests.request({ id: 'b', text: '' })]);
    requests.expireAll();
    assert.deepEqual(await all, ['none', 'none']);
    assert.equal(requests.pendingParams().length, 0);
  });
});

describe('each kind of request is the one broker', () => {
  it('approvals and questions are keyed by their call id', async () => {
    const approvals = new ApprovalBroker();
    const questions = new QuestionBroker();
    assert.ok(approvals instanceof RequestBroker && questions instanceof RequestBroker);
    const asked: AskParams = { session: 's', turn: 't', callId: 'q1', question: 'Which database?', options: [] };
    const changes: string[] = [];
    questions.onDidChange((c) => changes.push(`${c.type} ${c.id}`));
    const answer = questions.request(asked);
    assert.equal(questions.answer('q1', '  SQLite  '), true);
    assert.equal(await answer, 'SQLite');
    assert.deepEqual(changes, ['requested q1', 'answered q1']);
  });
});
