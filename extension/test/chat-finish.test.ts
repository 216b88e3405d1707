// Issue 17 in the chat view: the effects card (issue 15's staged commands), Deny with a note, Retry and the
// endpoint's fixes under a failure, the estimate when a server reports no usage, cost, Undo and Edit & resend.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { ApprovalBroker } from '../src/common/approvals';
import { endpointSetting, formatSessionUsage, formatUsage, needsApiKey, unreachableEndpoint } from '../src/common/format';
import { isCommandLine } from '../src/common/commandline';
import { mentionsFromLabels } from '../src/common/mentions';
import { isWebviewMessage } from '../src/common/messages';
import { initialState, reduce, undoableTurn, waitingForModel, type ChatState } from '../src/common/state';
import type { ApprovalRequest, ChatEvent, EffectsPreview } from '../src/protocol';
import { createMarkdownRenderer } from '../src/webview/markdown';
import { renderItem, type RenderContext } from '../src/webview/render';
import { fileSides } from '../src/common/previewSides';
import { ROOT, turn } from './helpers';

let ctx: RenderContext;
before(() => {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  (globalThis as { document?: Document }).document = dom.window.document;
  ctx = { markdown: createMarkdownRenderer(dom.window as unknown as Window & typeof globalThis), expanded: new Set() };
});

const draw = (state: ChatState, extra: Partial<RenderContext> = {}) => {
  const root = document.createElement('div');
  for (const item of state.items) root.append(renderItem(item, { ...ctx, ...extra }));
  return root;
};
const base = { session: 's', turn: 't' };

const EFFECTS: EffectsPreview = {
  kind: 'effects', command: 'echo hi > new.txt && chmod +x run.sh && rm old.txt', cwd: '.', exitCode: 0, output: 'line 1\nline 2\n',
  changes: [
    { path: 'new.txt', change: 'added', before: null, after: 'hi\n', binary: false },
    { path: 'src/app.py', change: 'modified', before: 'a\n', after: 'b\n', binary: false },
    { path: 'old.txt', change: 'deleted', before: 'old\n', after: null, binary: false },
    { path: 'run.sh', change: 'mode', before: null, after: null, binary: false },
    { path: 'logo.png', change: 'added', before: null, after: null, binary: true },
  ],
  truncated: true,
};

function awaitingEffects(preview: EffectsPreview = EFFECTS): ChatState {
  const args = { command: preview.command };
  let state = turn('run it', [{ ...base, seq: 0, type: 'toolCall', callId: 'e1', name: 'run_command', arguments: args }]);
  const params: ApprovalRequest = { ...base, callId: 'e1', name: 'run_command', arguments: args, risk: 'shell', preview };
  state = reduce(state, { type: 'approvalRequested', params });
  return state;
}

describe('the effects card (a command that ran in a staging overlay)', () => {
  it('lists each changed file with its A/M/D/mode badge and a Show diff, the exit code, and the output folded', () => {
    const card = draw(awaitingEffects()).querySelector('[data-testid="approval-card"]') as HTMLElement;
    assert.equal(card.dataset.state, 'pending');
    const rows = [...card.querySelectorAll<HTMLElement>('[data-testid="effect-change"]')];
    assert.deepEqual(rows.map((r) => [r.dataset.path, r.querySelector('[data-testid="effect-badge"]')?.textContent]),
      [['new.txt', 'A'], ['src/app.py', 'M'], ['old.txt', 'D'], ['run.sh', 'mode'], ['logo.png', 'A']]);
    const diffs = rows.map((r) => r.querySelector<HTMLElement>('[data-testid="effect-show-diff"]')?.dataset.path ?? null);
    assert.deepEqual(diffs, ['new.txt', 'src/app.py', 'old.txt', null, null], 'no diff for a mode change or a binary file');
    assert.match(rows[4].textContent ?? '', /binary/);
    assert.match(card.querySelector('[data-testid="effect-exit-code"]')?.textContent ?? '', /exit code 0/);
    assert.ok(card.querySelector('[data-testid="effect-truncated"]'));
    const output = card.querySelector('[data-testid="effect-output"]') as HTMLDetailsElement;
    assert.equal(output.open, false, 'the output starts folded');
    assert.match(output.querySelector('summary')?.textContent ?? '', /Output \(2 lines\)/);
    for (const id of ['approval-allow', 'approval-allow-session', 'approval-deny', 'approval-deny-note']) {
      assert.ok(card.querySelector(`[data-testid="${id}"]`), id);
    }
  });

  it('shows a failed command\'s exit code as such, and says when nothing changed', () => {
    const card = draw(awaitingEffects({ ...EFFECTS, exitCode: 2, changes: [], truncated: false, output: '' }))
      .querySelector('[data-testid="approval-card"]')!;
    assert.ok(card.querySelector('.exit-code.failed'));
    assert.ok(card.querySelector('[data-testid="effect-none"]'));
    assert.match(card.querySelector('[data-testid="effect-output"] summary')?.textContent ?? '', /none/);
  });

  it('is answered like any approval, and its files\' diffs come from the preview', () => {
    const state = reduce(awaitingEffects(), { type: 'approvalAnswered', callId: 'e1', decision: 'allow' });
    assert.match(draw(state).querySelector('[data-testid="approval-result"]')?.textContent ?? '', /Allowed/);
    assert.deepEqual(fileSides(EFFECTS, 'new.txt'), { path: 'new.txt', before: null, after: 'hi\n' });
    assert.deepEqual(fileSides(EFFECTS, 'old.txt'), { path: 'old.txt', before: 'old\n', after: null });
    assert.equal(fileSides(EFFECTS, 'logo.png'), undefined);
    assert.equal(fileSides(EFFECTS, null), undefined);
    assert.deepEqual(fileSides({ kind: 'diff', path: 'a', before: null, after: 'x' }, null), { path: 'a', before: null, after: 'x' });
  });
});

describe('Deny with a note', () => {
  it('hands the note to the answer, once, and only with a denial', async () => {
    const broker = new ApprovalBroker();
    const params = { ...base, callId: 'c1', name: 'write_file', arguments: {}, risk: 'write', preview: { kind: 'diff', path: 'a', before: null, after: 'x' } } as ApprovalRequest;
    const denied = broker.request(params);
    broker.answer('c1', 'deny', '  use tabs  ');
    assert.equal(await denied, 'deny');
    assert.equal(broker.takeNote('c1'), 'use tabs');
    assert.equal(broker.takeNote('c1'), undefined);
    const allowed = broker.request({ ...params, callId: 'c2' });
    broker.answer('c2', 'allow', 'ignored');
    assert.equal(await allowed, 'allow');
    assert.equal(broker.takeNote('c2'), undefined);
  });

  it('is a checked field of the webview\'s approve message', () => {
    assert.equal(isWebviewMessage({ type: 'approve', callId: 'c', decision: 'deny', note: 'why' }), true);
    assert.equal(isWebviewMessage({ type: 'approve', callId: 'c', decision: 'deny', note: 42 }), false);
    assert.equal(isWebviewMessage({ type: 'openSetting', key: 'sunwell.baseUrl' }), true);
    assert.equal(isWebviewMessage({ type: 'openSetting', key: 'workbench.action.terminal.new' }), false);
  });
});

describe('a failed turn', () => {
  const failed = (error: string) => turn('hi', [{ ...base, seq: 0, type: 'done', status: 'error', toolCalls: 0, usage: null, error }]);

  it('offers Retry, and for a dead endpoint names the URL and where to change it', () => {
    const state = failed('cannot reach http://127.0.0.1:9/v1: All connection attempts failed');
    const end = draw(state, { lastEnd: state.items.at(-1)!.id, model: 'openai-compatible:qwen' }).querySelector('[data-testid="turn-end"]')!;
    assert.ok(end.querySelector('[data-testid="retry-button"]'));
    assert.equal(end.querySelector('[data-testid="failed-url"]')?.textContent, 'http://127.0.0.1:9/v1');
    assert.ok(end.querySelector('[data-testid="fix-model"]') && end.querySelector('[data-testid="fix-key"]'));
    assert.equal((end.querySelector('[data-testid="fix-setting"]') as HTMLElement).dataset.key, 'sunwell.baseUrl');
  });

  it('offers Retry only on the chat\'s last turn; other failures get no endpoint help', () => {
    const state = failed('the model answered 500');
    assert.equal(draw(state).querySelector('[data-testid="retry-button"]'), null);
    const end = draw(state, { lastEnd: state.items.at(-1)!.id }).querySelector('[data-testid="turn-end"]')!;
    assert.ok(end.querySelector('[data-testid="retry-button"]'));
    assert.equal(end.querySelector('[data-testid="failure-help"]'), null);
  });

  it('reads the endpoint and key problems from the engine\'s words', () => {
    assert.equal(unreachableEndpoint('cannot reach https://api.openai.com/v1: timed out'), 'https://api.openai.com/v1');
    assert.equal(unreachableEndpoint('something else'), null);
    assert.equal(needsApiKey('Error code: 401 - invalid api key'), true);
    assert.equal(endpointSetting('anthropic:claude-sonnet-4-5'), 'sunwell.anthropicBaseUrl');
    assert.equal(endpointSetting('ollama:qwen2.5:7b'), 'sunwell.ollamaHost');
    assert.equal(endpointSetting(null), 'sunwell.openaiBaseUrl');
  });
});

describe('usage and cost', () => {
  const done: ChatEvent = { ...base, seq: 1, type: 'done', status: 'completed', toolCalls: 0, usage: null };
  const none = { cacheReadTokens: 0, cacheWriteTokens: 0 };
  const report = { model: 'openai:gpt-4o', inputTokens: 1500, outputTokens: 20, estimated: true, cost: 0.0039, ...none,
    turns: [{ turn: 't', inputTokens: 1500, outputTokens: 20, estimated: true, cost: 0.0039, ...none }] };

  it('marks Sunwell\'s estimate as such, on the turn and in the footer', () => {
    let state = turn('hi', [{ ...base, seq: 0, type: 'text', delta: 'hello' }, done]);
    state = { ...state, session: 's' };
    state = reduce(state, { type: 'usageReported', session: 's', usage: report });
    assert.equal(state.usage?.estimated, true);
    assert.equal(formatUsage(state.usage), '≈1.5k in · ≈20 out');
    const details = draw(state).querySelector('[data-testid="turn-usage"]') as HTMLElement;
    assert.equal(details.textContent, '≈1.5k in · ≈20 out · $0.0039');
    assert.match(details.title, /estimated/i);
    const footer = formatSessionUsage(state.sessionUsage)!;
    assert.equal(footer.text, '≈1.5k tokens · $0.0039');
    assert.match(footer.title, /over 1 turn .*estimated.*openai:gpt-4o/);
  });

  it('tells the tokens read from the prompt cache apart, on the turn, in its tooltip and in the footer\'s', () => {
    let state = turn('hi', [{ ...base, seq: 0, type: 'text', delta: 'hello' }, done]);
    state = { ...state, session: 's' };
    const cached = { model: 'anthropic:claude-sonnet-4-6', inputTokens: 12_000, outputTokens: 30, estimated: false,
      cost: 0.0105, cacheReadTokens: 9_000, cacheWriteTokens: 2_000 };
    state = reduce(state, { type: 'usageReported', session: 's', usage: { ...cached, turns: [{ turn: 't', ...cached }] } });
    const details = draw(state).querySelector('[data-testid="turn-usage"]') as HTMLElement;
    assert.equal(details.textContent, '12.0k in (9.0k cached) · 30 out · $0.0105');
    assert.equal(details.title, 'As the server reported; of the input, 9,000 read from cache, 2,000 written to it');
    const footer = formatSessionUsage(state.sessionUsage)!;
    assert.match(footer.title, /^This session: 12,000 in \(9,000 read from cache, 2,000 written to it\), 30 out/);
  });

  it('ignores a report of another session, and shows no cost for a model without a price', () => {
    const state = { ...turn('hi', [done]), session: 's' };
    assert.equal(reduce(state, { type: 'usageReported', session: 'other', usage: report }), state);
    const free = formatSessionUsage({ ...report, model: 'openai-compatible:qwen', cost: null, estimated: false })!;
    assert.equal(free.text, '1.5k tokens');
    assert.match(free.title, /no price for openai-compatible:qwen/);
  });
});

describe('the turn\'s own buttons', () => {
  const wrote = (turnId: string, callId: string): ChatEvent[] => [
    { session: 's', turn: turnId, seq: 0, type: 'toolCall', callId, name: 'write_file', arguments: { path: 'a' } },
    { session: 's', turn: turnId, seq: 1, type: 'toolResult', callId, name: 'write_file', ok: true, output: 'ok', error: null, durationMs: 1 },
    { session: 's', turn: turnId, seq: 2, type: 'done', status: 'completed', toolCalls: 1, usage: null },
  ];

  it('Undo sits on the newest turn that changed files and is not undone yet', () => {
    let state = turn('one', wrote('t1', 'c1'));
    state = turn('two', wrote('t2', 'c2'), state);
    state = turn('three', [{ session: 's', turn: 't3', seq: 0, type: 'done', status: 'completed', toolCalls: 0, usage: null }], state);
    assert.equal(undoableTurn(state), 't2');
    const end = draw(state, { undoable: 't2' }).querySelectorAll('[data-testid="turn-end"]')[1];
    assert.ok(end.querySelector('[data-testid="undo-turn"]'));
    state = reduce(state, { type: 'turnUndone', turn: 't2' });
    assert.equal(undoableTurn(state), 't1');
    assert.ok(draw(state).querySelectorAll('[data-testid="turn-end"]')[1].querySelector('[data-testid="turn-undone"]'));
    assert.equal(undoableTurn(reduce(state, { type: 'userMessage', text: 'four' })), null, 'nothing to undo while a turn runs');
  });

  it('the last user message offers Edit & resend, a button Tab reaches', () => {
    const state = turn('hello', [{ ...base, seq: 0, type: 'done', status: 'completed', toolCalls: 0, usage: null }]);
    const pencil = draw(state, { editable: state.items[0].id }).querySelector<HTMLElement>('[data-testid="edit-message"]');
    assert.equal(pencil?.tagName, 'BUTTON');
    assert.equal(pencil?.getAttribute('tabindex'), null, 'in the tab order like any button');
    assert.equal(draw(state).querySelector('[data-testid="edit-message"]'), null);
  });

  it('shows the pencil on keyboard focus as on hover (chat.css)', () => {
    const css = readFileSync(path.join(ROOT, 'extension', 'media', 'chat.css'), 'utf8');
    const shown = /([^}]*)\{\s*opacity:\s*1;?\s*\}/g;
    const rules = [...css.matchAll(shown)].map((m) => m[1]).find((selectors) => selectors.includes('.edit-message')) ?? '';
    for (const selector of ['.message.user:hover .edit-message', '.message.user:focus-within .edit-message']) {
      assert.ok(rules.includes(selector), `${selector} shows the pencil`);
    }
  });

  it('Retry sits on the last answer whatever its end; an interrupted turn offers Resume instead', () => {
    for (const status of ['completed', 'cancelled', 'limitReached'] as const) {
      const state = turn('hi', [{ ...base, seq: 0, type: 'done', status, toolCalls: 0, usage: null }]);
      const end = state.items.at(-1)!.id;
      const retry = draw(state, { retryable: end }).querySelector<HTMLElement>('[data-testid="retry-button"]');
      assert.equal(retry?.dataset.action, 'retry', status);
      assert.equal(draw(state).querySelector('[data-testid="retry-button"]'), null, 'only on the last exchange');
    }
    const interrupted = turn('hi', [{ ...base, seq: 0, type: 'done', status: 'interrupted', toolCalls: 0, usage: null,
      resumable: true }]);
    const id = interrupted.items.at(-1)!.id;
    const end = draw(interrupted, { retryable: id, lastEnd: id });
    assert.ok(end.querySelector('[data-testid="resume-button"]'));
    assert.equal(end.querySelector('[data-testid="retry-button"]'), null);
  });

  it('a line sent in place of an exchange says which (checked), and its chips come back from their labels', () => {
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', replaces: 't_1' }), true);
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', replaces: 5 }), false);
    assert.deepEqual(mentionsFromLabels(['@src/app.py', '@selection', '@notes:notes://team/readme']), [
      { kind: 'file', label: '@src/app.py', path: 'src/app.py' },
      { kind: 'selection', label: '@selection' },
      { kind: 'resource', label: '@notes:notes://team/readme', server: 'notes', uri: 'notes://team/readme' }]);
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', mentions: mentionsFromLabels(['@notes:n://a']) }), true);
  });

  it('tells a ::command line from a line for the model, as the sidecar does', () => {
    for (const line of ['::context', '  ::compact keep the API', '::docs:summarise a=1', '::help\n']) {
      assert.equal(isCommandLine(line), true, line);
    }
    for (const line of ['std::vector', '::', '::9x', 'x ::help', ':::note', 'hello']) assert.equal(isCommandLine(line), false, line);
  });
});

describe('waiting for the model', () => {
  it('from the line sent to the first token, and again between a result and the next words', () => {
    let state = reduce(initialState(), { type: 'userMessage', text: 'hi' });
    assert.equal(waitingForModel(state), true);
    state = reduce(state, { ...base, seq: 0, type: 'text', delta: 'he' });
    assert.equal(waitingForModel(state), false);
    state = reduce(state, { ...base, seq: 1, type: 'toolCall', callId: 'c', name: 'read_file', arguments: {} });
    assert.equal(waitingForModel(state), false, 'a call runs');
    state = reduce(state, { ...base, seq: 2, type: 'toolResult', callId: 'c', name: 'read_file', ok: true, output: '', error: null, durationMs: 1 });
    assert.equal(waitingForModel(state), true);
    assert.equal(waitingForModel(reduce(state, { type: 'stopRequested' })), false);
    state = reduce(state, { ...base, seq: 3, type: 'done', status: 'completed', toolCalls: 1, usage: null });
    assert.equal(waitingForModel(state), false);
  });
});

describe('context mentions', async () => {
  const { chipText, fuzzyScore, matchMentions, mentionContext, removeMentionQuery, formatProblems } = await import('../src/common/mentions');
  const files = ['README.md', 'src/app.py', 'src/application/main.py', 'tests/test_app.py', 'docs/sapphire.md'];

  it('opens on an @ that starts a word, not in an e-mail address', () => {
    assert.deepEqual(mentionContext('Explain @sr', 11), { query: 'sr', start: 8, end: 11 });
    assert.equal(mentionContext('mail me@example.com', 19), null);
    assert.deepEqual(mentionContext('@', 1), { query: '', start: 0, end: 1 });
  });

  it('matches files fuzzily, the file name and word starts first, and offers the editor\'s own mentions', () => {
    assert.equal(fuzzyScore('xyz', 'src/app.py'), null);
    assert.equal(matchMentions('srcapp', files)[0].label, '@src/app.py');
    assert.deepEqual(matchMentions('sapp', files).slice(0, 2).map((m) => m.path), ['docs/sapphire.md', 'src/app.py']);
    assert.equal(matchMentions('app', files)[0].path, 'src/app.py');
    assert.deepEqual(matchMentions('sel', files).map((m) => m.label).slice(0, 1), ['@selection']);
    assert.deepEqual(matchMentions('', files).slice(0, 3).map((m) => m.kind), ['selection', 'problems', 'terminal']);
  });

  it('a chip shows a file by its name, anything else by its label (issue 34 item 11)', () => {
    assert.equal(chipText('@src/app.py'), 'app.py');
    assert.equal(chipText('@README.md'), 'README.md');
    assert.equal(chipText('@selection'), '@selection');
    assert.equal(chipText('@notes:notes://team/readme'), '@notes:notes://team/readme');
  });

  it('offers the MCP servers\' resources as @SERVER:URI, typed with their colon', () => {
    const resources = [{ server: 'notes', uri: 'notes://team/readme', name: 'readme' }];
    const [first] = matchMentions('notes:readme', files, 30, resources);
    assert.deepEqual([first.kind, first.label, first.server, first.uri], ['resource', '@notes:notes://team/readme', 'notes', 'notes://team/readme']);
    assert.equal(mentionContext('see @notes:rea', 14)?.query, 'notes:rea');
    assert.equal(matchMentions('zzz', files, 30, resources).length, 0);
  });

  it('takes the @query out of the text when a mention is picked', () => {
    const text = 'Explain @sap please';
    assert.deepEqual(removeMentionQuery(text, mentionContext(text, 12)!), { text: 'Explain please', caret: 8 });
  });

  it('lists problems as path:line:col lines, capped', () => {
    assert.equal(formatProblems([]), 'No problems in the workspace.');
    const many = Array.from({ length: 3 }, (_, i) => ({ path: 'a.py', line: i + 1, column: 1, severity: 'error', message: 'bad\nthing' }));
    assert.equal(formatProblems(many, 2), 'a.py:1:1: error: bad thing\na.py:2:1: error: bad thing\n… and 1 more');
  });

  it('are checked when the webview sends them', () => {
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', mentions: [{ kind: 'file', label: '@a', path: 'a' }] }), true);
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', mentions: [{ kind: 'shell', label: '@a' }] }), false);
    assert.equal(isWebviewMessage({ type: 'send', text: 'x', mentions: 'a' }), false);
  });

  it('show on the line that carried them', () => {
    const state = reduce(initialState(), { type: 'userMessage', text: 'look', mentions: ['@src/app.py'] });
    const chips = [...draw(state).querySelectorAll<HTMLElement>('[data-testid="sent-mention"]')];
    assert.deepEqual(chips.map((e) => [e.textContent, e.title, e.dataset.label]), [['app.py', 'src/app.py', '@src/app.py']]);
  });
});
