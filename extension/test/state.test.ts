// The chat view model: real event streams of the engine in, the transcript the webview draws out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isBusy, pendingApprovals, reduce, type ChatState, type ToolItem } from '../src/common/state';
import type { ApprovalRequest, ChatEvent } from '../src/protocol';
import { recorded, run, turn } from './helpers';

const kinds = (s: ChatState) => s.items.map((i) => i.kind);
const tools = (s: ChatState) => s.items.filter((i): i is ToolItem => i.kind === 'tool');

describe('text answers', () => {
  it('streams deltas into one assistant message and ends the turn with its usage', () => {
    const events = recorded('text');
    let state = run([{ type: 'userMessage', text: 'hi' }]);
    assert.equal(isBusy(state), true);
    state = run(events.slice(0, 3), state);
    const partial = state.items[1];
    assert.equal(partial.kind, 'assistant');
    assert.equal(partial.kind === 'assistant' && partial.streaming, true);
    assert.equal(partial.kind === 'assistant' && partial.text, 'Hello **there**');
    state = run(events.slice(3), state);
    assert.deepEqual(kinds(state), ['user', 'assistant', 'turnEnd']);
    const answer = state.items[1];
    assert.equal(answer.kind === 'assistant' && answer.text, 'Hello **there**.\n\n```py\nprint(1)\n```\n');
    assert.equal(answer.kind === 'assistant' && answer.streaming, false);
    assert.equal(isBusy(state), false);
    assert.deepEqual(state.usage, { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 });
    assert.equal(state.session, events[0].session);
  });

  it('keeps unchanged items identical so the view redraws only the streaming one', () => {
    const events = recorded('text');
    const before = turn('hi', events.slice(0, 2));
    const after = reduce(before, events[2]);
    assert.equal(after.items[0], before.items[0]);
    assert.notEqual(after.items[1], before.items[1]);
  });

  it('starts a new message for text after a tool call, in stream order', () => {
    const state = turn('what does a.txt say?', recorded('tool-round-trip'));
    assert.deepEqual(kinds(state), ['user', 'assistant', 'tool', 'assistant', 'turnEnd']);
    const texts = state.items.filter((i) => i.kind === 'assistant').map((i) => i.kind === 'assistant' && i.text);
    assert.deepEqual(texts, ['Let me look.', 'It says hello.']);
  });
});

describe('tool calls', () => {
  it('fill in live: streaming arguments, the complete call, then the result with its duration', () => {
    const events = recorded('tool-round-trip');
    const start = events.findIndex((e) => e.type === 'toolCallStart');
    let state = turn('go', events.slice(0, start + 3));
    let [tool] = tools(state);
    assert.equal(tool.status, 'streaming');
    assert.equal(tool.name, 'read_file');
    assert.equal(tool.argsText, '{"path":');
    state = run(events.slice(start + 3, events.findIndex((e) => e.type === 'toolCall') + 1), state);
    [tool] = tools(state);
    assert.equal(tool.status, 'running');
    assert.deepEqual(tool.arguments, { path: 'a.txt' });
    state = run(events.slice(events.findIndex((e) => e.type === 'toolResult')), state);
    [tool] = tools(state);
    assert.equal(tool.status, 'ok');
    assert.equal(tool.output, 'hello from a\n');
    assert.equal(typeof tool.durationMs, 'number');
    assert.equal(tool.error, null);
  });

  it('show errors with their code, for each call of a parallel batch', () => {
    const state = turn('go', recorded('bad-call'));
    const [missing, unknown] = tools(state);
    assert.equal(missing.status, 'error');
    assert.equal(missing.error?.code, 'not_found');
    assert.equal(unknown.status, 'error');
    assert.equal(unknown.error?.code, 'unknown_tool');
    const end = state.items.at(-1);
    assert.equal(end?.kind === 'turnEnd' && end.toolCalls, 2);
  });

  it('mark a call whose arguments never completed as incomplete when the turn fails', () => {
    const state = turn('go', recorded('cut-stream'));
    const [tool] = tools(state);
    assert.equal(tool.status, 'incomplete');
    const end = state.items.at(-1);
    assert.equal(end?.kind, 'turnEnd');
    assert.equal(end?.kind === 'turnEnd' && end.status, 'error');
    assert.match(end?.kind === 'turnEnd' ? end.error ?? '' : '', /lost mid-answer/);
  });

  it('end at the tool-turn limit with the summary and that status', () => {
    const state = turn('go', recorded('limit'));
    const end = state.items.at(-1);
    assert.equal(end?.kind === 'turnEnd' && end.status, 'limitReached');
    assert.equal(tools(state).length, 2);
    assert.ok(tools(state).every((t) => t.status === 'ok'));
  });

  it('creates the card from the complete call when the provider streamed no start (emulation)', () => {
    const call: ChatEvent = { type: 'toolCall', session: 's', turn: 't', seq: 0, callId: 'c1', name: 'list_files', arguments: {} };
    const state = turn('go', [call]);
    assert.equal(tools(state)[0].status, 'running');
    assert.equal(tools(state)[0].argsText, '{}');
  });
});

describe('approvals', () => {
  const events = recorded('write-denied');
  const callIndex = events.findIndex((e) => e.type === 'toolCall');
  const call = events[callIndex] as Extract<ChatEvent, { type: 'toolCall' }>;
  const request: ApprovalRequest = {
    session: call.session, turn: call.turn, callId: call.callId, name: call.name, arguments: call.arguments, risk: 'write',
    preview: { kind: 'diff', path: 'b.txt', before: null, after: 'new\n' },
  };

  it('a request puts a pending card on the tool call; the answer and the engine\'s event settle it', () => {
    let state = turn('write b.txt', events.slice(0, callIndex + 1));
    state = reduce(state, { type: 'approvalRequested', params: request });
    assert.equal(pendingApprovals(state).length, 1);
    assert.equal(tools(state)[0].approval?.state, 'pending');
    state = reduce(state, { type: 'approvalAnswered', callId: call.callId, decision: 'allow' });
    assert.equal(pendingApprovals(state).length, 0);
    assert.deepEqual([tools(state)[0].approval?.decision, tools(state)[0].approval?.by], ['allow', 'user']);
    state = reduce(state, { ...(events[callIndex + 1] as ChatEvent), decision: 'allow', by: 'user' } as ChatEvent);
    assert.equal(tools(state)[0].approval?.state, 'answered');
  });

  it('a policy denial of a pending card (the engine\'s timeout) shows it expired, and the result says denied', () => {
    let state = turn('write b.txt', events.slice(0, callIndex + 1));
    state = reduce(state, { type: 'approvalRequested', params: request });
    state = run(events.slice(callIndex + 1), state);
    const [tool] = tools(state);
    assert.equal(tool.approval?.state, 'expired');
    assert.deepEqual(tool.decision, { decision: 'deny', by: 'policy' });
    assert.equal(tool.status, 'error');
    assert.equal(tool.error?.code, 'denied');
  });

  it('a decision by policy without a request is recorded on the card, with no approval to answer', () => {
    const state = turn('write b.txt', recorded('write-allowed'));
    const [tool] = tools(state);
    assert.equal(tool.approval, null);
    assert.deepEqual(tool.decision, { decision: 'allow', by: 'policy' });
    assert.equal(tool.status, 'ok');
  });

  it('Stop while a card waits says Stopped, not "no answer in time"', () => {
    let state = turn('write b.txt', events.slice(0, callIndex + 1));
    state = reduce(state, { type: 'approvalRequested', params: request });
    state = reduce(state, { type: 'stopRequested' });
    state = run(events.slice(callIndex + 1), state);  // the engine's policy deny arrives while stopping
    assert.equal(tools(state)[0].approval?.state, 'stopped');
    let other = turn('write b.txt', events.slice(0, callIndex + 1));
    other = reduce(other, { type: 'approvalRequested', params: request });
    other = reduce(other, { type: 'turnFinished', status: 'cancelled' });
    assert.equal(tools(other)[0].approval?.state, 'stopped');
    // The broker's request is cancelled by the engine's stop before the turn's end arrives (issue 34 bug 2).
    let cancelled = turn('write b.txt', events.slice(0, callIndex + 1));
    cancelled = reduce(cancelled, { type: 'approvalRequested', params: request });
    cancelled = reduce(cancelled, { type: 'stopRequested' });
    cancelled = reduce(cancelled, { type: 'approvalExpired', callId: call.callId });
    assert.equal(tools(cancelled)[0].approval?.state, 'stopped');
  });

  it('an unanswered card expires when the turn ends', () => {
    let state = turn('write b.txt', events.slice(0, callIndex + 1));
    state = reduce(state, { type: 'approvalRequested', params: request });
    state = reduce(state, { type: 'turnFinished', status: 'error', error: 'Sunwell’s engine stopped' });
    assert.equal(tools(state)[0].approval?.state, 'expired');
    assert.equal(tools(state)[0].status, 'error');
    assert.equal(tools(state)[0].error?.code, 'interrupted');
  });

  it('ignores answers for cards that are no longer pending', () => {
    let state = turn('write b.txt', events.slice(0, callIndex + 1));
    state = reduce(state, { type: 'approvalRequested', params: request });
    state = reduce(state, { type: 'approvalExpired', callId: call.callId });
    const same = reduce(state, { type: 'approvalAnswered', callId: call.callId, decision: 'allow' });
    assert.equal(same, state);
  });
});

describe('turn ends', () => {
  const base = { session: 's1', turn: 't1' };
  it('done in each status closes the turn', () => {
    for (const status of ['completed', 'cancelled', 'limitReached', 'error'] as const) {
      const state = turn('go', [
        { ...base, seq: 0, type: 'text', delta: 'partial' },
        { ...base, seq: 1, type: 'done', status, toolCalls: 0, usage: null, ...(status === 'error' ? { error: 'boom' } : {}) },
      ]);
      const end = state.items.at(-1);
      assert.equal(end?.kind === 'turnEnd' && end.status, status);
      assert.equal(end?.kind === 'turnEnd' && end.error, status === 'error' ? 'boom' : null);
      assert.equal(isBusy(state), false);
      const text = state.items[1];
      assert.equal(text.kind === 'assistant' && text.streaming, false);
    }
  });

  it('Stop marks the turn stopping; the cancelled done then ends it; the late answer adds nothing', () => {
    let state = turn('go', [{ ...base, seq: 0, type: 'text', delta: 'working' }]);
    state = reduce(state, { type: 'stopRequested' });
    assert.equal(state.turn?.stopping, true);
    state = reduce(state, { ...base, seq: 1, type: 'done', status: 'cancelled', toolCalls: 0, usage: null });
    const count = state.items.length;
    state = reduce(state, { type: 'turnFinished', status: 'cancelled' });
    assert.equal(state.items.length, count);
  });

  it('a request that failed without a done event still ends the turn, with the error', () => {
    const state = run([{ type: 'userMessage', text: 'go' }, { type: 'turnFinished', status: 'error', error: 'not running' }]);
    const end = state.items.at(-1);
    assert.equal(end?.kind === 'turnEnd' && end.error, 'not running');
    assert.equal(isBusy(state), false);
  });

  it('the chat result names the session when no event did', () => {
    const state = run([{ type: 'userMessage', text: '::help' }, { type: 'turnFinished', status: 'completed',
      result: { session: 's9', turn: 't9', status: 'completed', toolCalls: 0, usage: null } }]);
    assert.equal(state.session, 's9');
  });
});

describe('notices, commands and sessions', () => {
  const base = { session: 's1', turn: 't1' };
  it('notices and command output become their own items', () => {
    const state = turn('::help', [
      { ...base, seq: 0, type: 'notice', level: 'warning', code: 'provider_retry', message: 'retrying in 1 s' },
      { ...base, seq: 1, type: 'commandOutput', command: '::help', output: '**Commands**' },
      { ...base, seq: 2, type: 'done', status: 'completed', toolCalls: 0, usage: null },
    ]);
    assert.deepEqual(kinds(state), ['user', 'notice', 'command', 'turnEnd']);
    const notice = state.items[1];
    assert.equal(notice.kind === 'notice' && notice.code, 'provider_retry');
  });

  it('a turn\'s info notices fold into one notes item; warnings stay apart (issue 34 item 7)', () => {
    const state = turn('go', [
      { ...base, seq: 0, type: 'notice', level: 'info', code: 'tools_fitted', message: 'tool definitions fitted' },
      { ...base, seq: 1, type: 'text', delta: 'ok' },
      { ...base, seq: 2, type: 'notice', level: 'warning', code: 'provider_retry', message: 'retrying in 1 s' },
      { ...base, seq: 3, type: 'notice', level: 'info', code: 'repeated_call', message: 'the model repeated read_file' },
      { ...base, seq: 4, type: 'done', status: 'completed', toolCalls: 0, usage: null },
    ]);
    assert.deepEqual(kinds(state), ['user', 'notes', 'assistant', 'notice', 'turnEnd']);
    const notes = state.items[1];
    assert.deepEqual(notes.kind === 'notes' && notes.notes.map((n) => n.code), ['tools_fitted', 'repeated_call']);
    const next = run([{ ...base, turn: 't2', seq: 0, type: 'notice', level: 'info', code: 'tools_fitted', message: 'again' }],
      reduce(state, { type: 'userMessage', text: 'more' }));
    assert.equal(next.items.filter((i) => i.kind === 'notes').length, 2);  // one per turn
  });

  it('contextUsage fills the meter after each request; a compaction is a notice; a new session empties the meter', () => {
    let state = turn('read it all', [
      { ...base, seq: 0, type: 'contextUsage', usedTokens: 1200, windowTokens: 4096, estimated: true },
      { ...base, seq: 1, type: 'notice', level: 'info', code: 'compacted', message: 'summarised 12 messages (3,100 tokens)' },
      { ...base, seq: 2, type: 'contextUsage', usedTokens: 900, windowTokens: 4096, estimated: false },
      { ...base, seq: 3, type: 'done', status: 'completed', toolCalls: 0, usage: null },
    ]);
    assert.deepEqual(state.context, { used: 900, window: 4096, estimated: false });
    assert.deepEqual(kinds(state), ['user', 'notice', 'turnEnd']);
    assert.equal(state.items[1].kind === 'notice' && state.items[1].code, 'compacted');
    state = reduce(state, { type: 'newSession' });
    assert.equal(state.context, null);
  });

  it('events of another session are ignored', () => {
    const state = turn('go', [{ ...base, seq: 0, type: 'text', delta: 'a' }]);
    const same = reduce(state, { session: 'other', turn: 'x', seq: 0, type: 'text', delta: 'b' });
    assert.equal(same, state);
  });

  it('new session clears the transcript but keeps settings and lists', () => {
    let state = turn('go', recorded('text'));
    state = reduce(state, { type: 'settingsChanged', model: 'openai:gpt-4o', trust: 'shell' });
    state = reduce(state, { type: 'sessionsListed', sessions: [{ id: 's', title: 'x', updatedAt: '2024-01-01T00:00:00Z', turns: 1 }] });
    state = reduce(state, { type: 'newSession' });
    assert.equal(state.items.length, 0);
    assert.equal(state.session, null);
    assert.equal(state.settings.model, 'openai:gpt-4o');
    assert.equal(state.sessions.length, 1);
  });

  it('the state survives a JSON round trip (setState / snapshot)', () => {
    const state = turn('go', recorded('tool-round-trip'));
    assert.deepEqual(JSON.parse(JSON.stringify(state)), state);
  });
});
