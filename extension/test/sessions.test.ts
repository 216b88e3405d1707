// The chat view model across turns and sessions: stored sessions replayed, a turn left running, the transcript kept
// between windows, the plan, durable turns, Edit & resend and Retry.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forStorage, initialState, isBusy, lastExchange, planProgress, reduce, replay, type ChatState, type Item, type ToolItem } from '../src/common/state';
import type { ChatEvent } from '../src/protocol';
import { recorded, replayed, run, turn } from './helpers';

const kinds = (s: ChatState) => s.items.map((i) => i.kind);
const tools = (s: ChatState) => s.items.filter((i): i is ToolItem => i.kind === 'tool');

describe('stored sessions', () => {
  /** What the user sees of an item (ids, durations and streaming order aside). */
  const seen = (state: ChatState) => state.items.map((item: Item) => {
    switch (item.kind) {
      case 'tool':
        return [item.kind, item.name, item.status, item.output, item.error?.code ?? null, item.decision?.decision ?? null];
      case 'turnEnd':
        return [item.kind, item.status, item.toolCalls, item.usage, item.error?.replace(/ to \S+ was/, ' was') ?? null];
      case 'notice':
        return [item.kind, item.code];
      case 'notes':
        return [item.kind, item.notes.map((n) => n.code)];
      case 'command':
        return [item.kind, item.command];
      default:
        return [item.kind, item.text];
    }
  });

  for (const name of ['text', 'tool-round-trip', 'write-denied', 'write-allowed', 'bad-call', 'limit', 'plan']) {
    it(`replay the transcript the live stream drew (${name})`, () => {
      const live = turn('go', recorded(name));
      const events = replayed(name);
      const stored = replay(initialState(), events[0].session, events);
      assert.deepEqual(seen(stored), seen(live));
      assert.equal(stored.session, events[0].session);
      assert.equal(isBusy(stored), false);
      assert.deepEqual(stored.usage, live.usage);
    });
  }

  it('replay a turn cut mid-call without the call that never completed (the log never had it)', () => {
    const events = replayed('cut-stream');
    const stored = replay(initialState(), events[0].session, events);
    assert.deepEqual(stored.items.map((i) => i.kind), ['user', 'turnEnd']);
    const end = stored.items[1];
    assert.equal(end.kind === 'turnEnd' && end.status, 'error');
  });

  it('replace whatever the chat showed, keeping settings and lists', () => {
    let state = turn('something else', recorded('text'));
    state = reduce(state, { type: 'settingsChanged', model: 'openai:gpt-4o' });
    const events = replayed('tool-round-trip');
    state = reduce(state, { type: 'sessionLoaded', session: events[0].session, events });
    assert.deepEqual(state.items.map((i) => i.kind), ['user', 'assistant', 'tool', 'assistant', 'turnEnd']);
    assert.equal(state.items[0].kind === 'user' && state.items[0].text, 'go');
    assert.equal(state.settings.model, 'openai:gpt-4o');
    assert.equal(new Set(state.items.map((i) => i.id)).size, state.items.length);
  });

  it('end a turn the log left open, so the chat is not busy', () => {
    const base = { session: 's1', turn: 't1' };
    const state = replay(initialState(), 's1', [{ ...base, seq: 0, type: 'userMessage', text: 'go' },
      { ...base, seq: 1, type: 'text', delta: 'partial' }]);
    assert.equal(isBusy(state), false);
    assert.equal(state.items.at(-1)?.kind, 'turnEnd');
  });
});

describe('leaving a running turn', () => {
  it('New Session: what the left turn still sends adds nothing, and the next turn starts a session of its own', () => {
    const events = recorded('tool-round-trip');
    let state = turn('go', events.slice(0, 4));
    state = reduce(state, { type: 'newSession' });
    state = run(events.slice(4), state);
    state = reduce(state, { type: 'turnFinished', status: 'cancelled' });
    assert.deepEqual(state.items, []);
    assert.equal(state.session, null);
    assert.equal(isBusy(state), false);
    const next = turn('fresh', recorded('text'), state);
    assert.deepEqual(next.items.map((i) => i.kind), ['user', 'assistant', 'turnEnd']);
    assert.equal(next.session, recorded('text')[0].session);
  });

  it('an approval request with no turn of this chat running puts up no card', () => {
    const state = reduce(initialState(), { type: 'approvalRequested', params: {
      session: 's', turn: 't', callId: 'c', name: 'write_file', arguments: {}, risk: 'write',
      preview: { kind: 'diff', path: 'a', before: null, after: '' } } });
    assert.deepEqual(state.items, []);
  });
});

describe('keeping the transcript between windows', () => {
  it('stores it without transient parts and with long outputs cut', () => {
    const events = recorded('write-denied');
    const callIndex = events.findIndex((e) => e.type === 'toolCall');
    let state = turn('go', events.slice(0, callIndex + 1));
    const call = events[callIndex] as Extract<ChatEvent, { type: 'toolCall' }>;
    state = reduce(state, { type: 'approvalRequested', params: { session: call.session, turn: call.turn, callId: call.callId,
      name: call.name, arguments: call.arguments, risk: 'write', preview: { kind: 'diff', path: 'b.txt', before: null, after: 'x' } } });
    state = reduce(state, { type: 'toolResult', session: call.session, turn: call.turn, seq: 99, callId: 'other', name: 'read_file',
      ok: true, output: 'x'.repeat(20_000), error: null, durationMs: 1 });
    const stored = forStorage(state, 100);
    assert.equal(stored.turn, null);
    assert.equal(tools(stored)[0].approval?.state, 'expired');
    assert.ok((tools(stored)[1].output ?? '').length < 200);
  });
});

describe('the plan', () => {
  const last = { items: [{ step: 'Read a.txt', status: 'done' }, { step: 'Summarise it', status: 'in_progress' }],
    explanation: 'a.txt is short' };

  it('keeps the latest plan of the turn, which replaces the one before, and adds no item to the transcript', () => {
    const events = recorded('plan');
    const first = events.findIndex((e) => e.type === 'plan');
    let state = turn('go', events.slice(0, first + 1));
    assert.deepEqual(state.plan, { items: [{ step: 'Read a.txt', status: 'in_progress' }, { step: 'Summarise it', status: 'pending' }],
      explanation: null });
    assert.deepEqual(planProgress(state.plan), { done: 0, total: 2, current: 0 });
    state = run(events.slice(first + 1), state);
    assert.deepEqual(state.plan, last);
    assert.deepEqual(planProgress(state.plan), { done: 1, total: 2, current: 1 });
    assert.deepEqual(kinds(state), ['user', 'tool', 'tool', 'assistant', 'turnEnd']);
  });

  it('comes back with a replay of the stored session, and goes with a new session', () => {
    const events = replayed('plan');
    const stored = replay(initialState(), events[0].session, events);
    assert.deepEqual(stored.plan, last);
    assert.equal(reduce(stored, { type: 'newSession' }).plan, null);
    // another stored session without a plan shows none, not the one before
    const other = replayed('text');
    assert.equal(reduce(stored, { type: 'sessionLoaded', session: other[0].session, events: other }).plan, null);
  });

  it('is kept for a reload of the window', () => {
    const state = turn('go', recorded('plan'));
    assert.deepEqual(forStorage(state).plan, last);
  });

  it('ignores a plan from another session, and counts a plan with nothing in progress', () => {
    const state = turn('go', recorded('text'));
    const foreign = { ...recorded('plan').find((e) => e.type === 'plan')!, session: 'someone-else' };
    assert.equal(reduce(state, foreign).plan, null);
    assert.deepEqual(planProgress({ items: [{ step: 'a', status: 'done' }, { step: 'b', status: 'pending' }], explanation: null }),
      { done: 1, total: 2, current: null });
    assert.equal(planProgress(null), null);
    assert.equal(planProgress({ items: [], explanation: null }), null);
  });
});

describe('durable turns', () => {
  const base = { session: 's1', turn: 't1' };
  it('an interrupted turn read back from the log can be resumed: its end goes, its next events follow', () => {
    let state = replay(initialState(), 's1', [
      { ...base, seq: 0, type: 'userMessage', text: 'count', mentions: [] },
      { ...base, seq: 1, type: 'toolCall', callId: 'c1', name: 'run_command', arguments: { command: 'x' } },
      { ...base, seq: 2, type: 'done', status: 'interrupted', toolCalls: 1, usage: null, error: 'the process ended',
        resumable: true },
    ]);
    const end = state.items[state.items.length - 1];
    assert.equal(end.kind === 'turnEnd' && end.status, 'interrupted');
    assert.equal(end.kind === 'turnEnd' && end.resumable, true);
    state = reduce(state, { type: 'turnResumed', turn: 't1' });
    assert.equal(isBusy(state), true);
    assert.deepEqual(kinds(state), ['user', 'tool']);
    state = run([
      { ...base, seq: 3, type: 'toolResult', callId: 'c1', name: 'run_command', ok: false, output: '', durationMs: 0,
        error: { code: 'interrupted', message: 'not run again', suggestion: null } },
      { ...base, seq: 4, type: 'done', status: 'completed', toolCalls: 1, usage: null },
    ], state);
    assert.deepEqual(kinds(state), ['user', 'tool', 'turnEnd']);
    assert.equal(tools(state)[0].error?.code, 'interrupted');
    assert.equal(isBusy(state), false);
  });
});

describe('Edit & resend and Retry (issue 34 items 8 and 10)', () => {
  const answered = (turnId: string, text: string, status: 'completed' | 'error' | 'cancelled' = 'completed',
    resumable = false): ChatEvent[] => [
    { session: 's', turn: turnId, seq: 0, type: 'text', delta: text },
    { session: 's', turn: turnId, seq: 1, type: 'toolCall', callId: `c-${turnId}`, name: 'read_file', arguments: {} },
    { session: 's', turn: turnId, seq: 2, type: 'toolResult', callId: `c-${turnId}`, name: 'read_file', ok: true, output: 'x',
      error: null, durationMs: 1 },
    { session: 's', turn: turnId, seq: 3, type: 'done', status, toolCalls: 1, usage: null,
      ...(status === 'error' ? { error: 'boom' } : {}), ...(resumable ? { resumable: true } : {}) },
  ];
  const texts = (s: ChatState) => s.items.map((i) => (i.kind === 'user' || i.kind === 'assistant' ? i.text : i.kind));

  it('the last exchange is the last line through its turn\'s end, and only when nothing runs', () => {
    assert.equal(lastExchange(initialState()), null);
    let state = turn('one', answered('t1', 'One.'));
    state = turn('two', answered('t2', 'Two.'), state);
    const exchange = lastExchange(state)!;
    assert.deepEqual([exchange.user.text, exchange.end.turn, exchange.command, exchange.logged], ['two', 't2', false, true]);
    const running = reduce(state, { type: 'userMessage', text: 'three' });
    assert.equal(lastExchange(running), null, 'a turn runs: nothing to replace');
  });

  it('a turn that failed before it began, or a ::command, never reached the log: it is replaced in the transcript only', () => {
    const failed = turn('hi', [{ session: 's', turn: 'tx', seq: 0, type: 'done', status: 'error', toolCalls: 0, usage: null,
      error: 'no model configured' }]);
    assert.equal(lastExchange(failed)?.logged, false);
    assert.equal(lastExchange(turn('hi', answered('t1', 'x', 'error', true)))?.logged, true, 'a provider error is logged');
    assert.equal(lastExchange(turn('hi', answered('t1', 'x', 'cancelled')))?.logged, true);
    const command = turn('::context', [
      { session: 's', turn: 'tc', seq: 0, type: 'commandOutput', command: 'context', output: 'ctx' },
      { session: 's', turn: 'tc', seq: 1, type: 'done', status: 'completed', toolCalls: 0, usage: null }]);
    assert.deepEqual([lastExchange(command)?.command, lastExchange(command)?.logged], [true, false]);
  });

  it('a line sent in place of the last exchange takes its place: its line, answer, calls and end go', () => {
    let state = turn('one', answered('t1', 'One.'));
    state = turn('two', answered('t2', 'Two.'), state);
    const kept = state.items.slice(0, 4);
    state = reduce(state, { type: 'userMessage', text: 'two, edited', replaces: 't2' });
    assert.equal(isBusy(state), true);
    assert.deepEqual(texts(state), ['one', 'One.', 'tool', 'turnEnd', 'two, edited']);
    assert.ok(state.items.slice(0, 4).every((item, i) => item === kept[i]), 'the earlier exchange is untouched');
    state = run(answered('t3', 'Two, again.'), state);
    assert.deepEqual(texts(state), ['one', 'One.', 'tool', 'turnEnd', 'two, edited', 'Two, again.', 'tool', 'turnEnd']);
    assert.equal(new Set(state.items.map((i) => i.id)).size, state.items.length, 'ids stay unique');
    // Retry: the same line in place of the answer it got
    state = reduce(state, { type: 'userMessage', text: 'two, edited', replaces: 't3' });
    assert.deepEqual(texts(state), ['one', 'One.', 'tool', 'turnEnd', 'two, edited']);
  });

  it('a line that names a turn the transcript does not end with an exchange is only appended', () => {
    const state = turn('one', answered('t1', 'One.'));
    assert.deepEqual(texts(reduce(state, { type: 'userMessage', text: 'two', replaces: 'nope' })),
      ['one', 'One.', 'tool', 'turnEnd', 'two']);
  });
});
