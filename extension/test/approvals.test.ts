// Pending approvals: kept until answered, expired when the sidecar gives up, never answered twice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApprovalBroker, type ApprovalChange } from '../src/common/approvals';
import type { ApprovalRequest } from '../src/protocol';

const params = (callId: string): ApprovalRequest => ({
  session: 's', turn: 't', callId, name: 'run_command', arguments: { command: 'ls' }, risk: 'shell',
  preview: { kind: 'command', command: 'ls -la', cwd: '.' },
});

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
  };
}

describe('ApprovalBroker', () => {
  it('keeps the request until it is answered, once', async () => {
    const broker = new ApprovalBroker();
    const changes: ApprovalChange[] = [];
    broker.onDidChange((c) => changes.push(c));
    const answer = broker.request(params('c1'));
    assert.deepEqual(broker.pendingParams().map((p) => p.callId), ['c1']);
    assert.equal(broker.answer('c1', 'allowSession'), true);
    assert.equal(await answer, 'allowSession');
    assert.equal(broker.answer('c1', 'deny'), false);
    assert.deepEqual(changes.map((c) => c.type), ['requested', 'answered']);
    assert.equal(broker.isPending('c1'), false);
    assert.equal(broker.get('c1')?.preview.kind, 'command', 'the preview stays readable after the answer');
  });

  it('denies when the sidecar cancels the request (its timeout) and tells the view', async () => {
    const broker = new ApprovalBroker();
    const changes: ApprovalChange[] = [];
    broker.onDidChange((c) => changes.push(c));
    const t = token();
    const answer = broker.request(params('c2'), t);
    t.cancel();
    assert.equal(await answer, 'deny');
    assert.deepEqual(changes.map((c) => c.type), ['requested', 'expired']);
    assert.equal(broker.answer('c2', 'allow'), false);
  });

  it('expires everything when the sidecar is gone', async () => {
    const broker = new ApprovalBroker();
    const all = Promise.all([broker.request(params('a')), broker.request(params('b'))]);
    broker.expireAll();
    assert.deepEqual(await all, ['deny', 'deny']);
    assert.equal(broker.pendingParams().length, 0);
  });
});
