// `ask_user`'s question cards and `task`'s sub-agent cards in the chat view model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forStorage, reduce, type ChatState, type ToolItem } from '../src/common/state';
import { QuestionBroker } from '../src/common/questions';
import { isWebviewMessage } from '../src/common/messages';
import type { ChatEvent } from '../src/protocol';
import { run, turn } from './helpers';

let seq = 0;
const ev = (e: Record<string, unknown>): ChatEvent => ({ session: 's1', turn: 't1', seq: seq++, ...e }) as ChatEvent;
const tools = (s: ChatState) => s.items.filter((i): i is ToolItem => i.kind === 'tool');

describe('sub-agents', () => {
  const events = [
    ev({ type: 'toolCall', callId: 'task1', name: 'task', arguments: { description: 'Find the retry', prompt: 'find it' } }),
    ev({ type: 'text', delta: 'looking', parentCallId: 'task1' }),
    ev({ type: 'toolCall', callId: 'c1', name: 'search_files', arguments: { pattern: 'retry' }, parentCallId: 'task1' }),
    ev({ type: 'toolResult', callId: 'c1', name: 'search_files', ok: true, output: 'src/a.py:1', error: null, durationMs: 3, parentCallId: 'task1' }),
    ev({ type: 'toolCall', callId: 'c2', name: 'read_file', arguments: { path: 'src/a.py' }, parentCallId: 'task1' }),
  ];

  it('put the sub-agent\'s tool calls inside its task card, and nothing of it at the top', () => {
    const state = turn('where?', events);
    assert.deepEqual(tools(state).map((t) => t.callId), ['task1']);
    assert.equal(state.items.filter((i) => i.kind === 'assistant').length, 0);
    const [task] = tools(state);
    assert.deepEqual(task.children?.map((c) => [c.callId, c.status]), [['c1', 'ok'], ['c2', 'running']]);
  });

  it('give the task card a new identity when a child changes, and end its running children with the turn', () => {
    const before = turn('where?', events);
    const after = reduce(before, ev({ type: 'toolResult', callId: 'c2', name: 'read_file', ok: true, output: 'x', error: null,
      durationMs: 1, parentCallId: 'task1' }));
    assert.notEqual(tools(after)[0], tools(before)[0]);
    const stopped = reduce(before, ev({ type: 'done', status: 'cancelled', toolCalls: 3, usage: null }));
    assert.equal(tools(stopped)[0].children?.[1].status, 'error');
    assert.equal(forStorage(stopped).items.length, stopped.items.length);
  });
});

describe('questions', () => {
  const asked = { session: 's1', turn: 't1', callId: 'q1', question: 'Which database?', options: ['PostgreSQL', 'SQLite'] };

  it('a request puts a pending question on the call; the answer settles it', () => {
    let state = turn('go', [ev({ type: 'toolCall', callId: 'q1', name: 'ask_user', arguments: { question: 'Which database?' } })]);
    state = reduce(state, { type: 'questionRequested', params: asked });
    assert.equal(tools(state)[0].question?.state, 'pending');
    assert.deepEqual(tools(state)[0].question?.options, ['PostgreSQL', 'SQLite']);
    state = reduce(state, { type: 'questionAnswered', callId: 'q1', answer: 'SQLite' });
    assert.deepEqual([tools(state)[0].question?.state, tools(state)[0].question?.answer], ['answered', 'SQLite']);
  });

  it('an unanswered question expires with its result, or stops with the turn', () => {
    let state = run([{ type: 'userMessage', text: 'go' }, { type: 'questionRequested', params: asked }]);
    const expired = reduce(state, ev({ type: 'toolResult', callId: 'q1', name: 'ask_user', ok: true, output: 'no', error: null, durationMs: 1 }));
    assert.equal(tools(expired)[0].question?.state, 'expired');
    state = reduce(state, { type: 'stopRequested' });
    state = reduce(state, ev({ type: 'done', status: 'cancelled', toolCalls: 1, usage: null }));
    assert.equal(tools(state)[0].question?.state, 'stopped');
  });

  it('the broker answers once, trims, and a cancelled request is no answer', async () => {
    const broker = new QuestionBroker();
    const pending = broker.request(asked);
    assert.equal(broker.answer('q1', '  SQLite '), true);
    assert.equal(broker.answer('q1', 'again'), false);
    assert.equal(await pending, 'SQLite');
    let cancel = () => {};
    const token = { isCancellationRequested: false, onCancellationRequested: (l: () => void) => ((cancel = l), { dispose() {} }) };
    const dropped = broker.request({ ...asked, callId: 'q2' }, token);
    cancel();
    assert.equal(await dropped, null);
  });

  it('the webview\'s answer message is checked', () => {
    assert.equal(isWebviewMessage({ type: 'answer', callId: 'q1', answer: 'x' }), true);
    assert.equal(isWebviewMessage({ type: 'answer', callId: 'q1', answer: null }), true);
    assert.equal(isWebviewMessage({ type: 'answer', callId: 'q1', answer: 3 }), false);
  });
});
