// The chat webview: says `ready`, then applies the host's snapshot and actions with the shared reducer and redraws
// what changed, at most once per frame. The transcript is the host's (it keeps the one copy); what the webview
// saves with setState is its own: the draft and which cards are open.
import type { HostToWebview, WebviewToHost } from '../common/messages';
import { formatContext, formatSessionUsage, formatUsage, relativeTime } from '../common/format';
import { initialState, isBusy, lastExchange, reduce, undoableTurn, waitingForModel, type ChatState, type Item } from '../common/state';
import { h, icon } from './dom';
import { mentionsFromLabels, type MentionRef, type ResourceRef } from '../common/mentions';
import { ChatInput } from './input';
import { createMarkdownRenderer } from './markdown';
import { createPlanPanel, drawPlan } from './plan';
import { renderItem, type RenderContext } from './render';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): Saved | undefined;
  setState(state: Saved): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface Saved {
  /** `editing`: Edit & resend, the turn whose exchange the draft replaces when it is sent. */
  ui: { draft: string; expanded: string[]; editing?: string | null };
}

const vscode = acquireVsCodeApi();
const saved = vscode.getState();
let state: ChatState = initialState();
const ui = { draft: saved?.ui?.draft ?? '', expanded: new Set(saved?.ui?.expanded ?? []), editing: saved?.ui?.editing ?? null };
const ctx: RenderContext = { markdown: createMarkdownRenderer(window), expanded: ui.expanded };
const post = (message: WebviewToHost) => vscode.postMessage(message);

// ---- layout -------------------------------------------------------------------------------------------------
const banner = h('div', { className: 'banner', id: 'sidecar-banner', 'data-testid': 'sidecar-banner', hidden: true, role: 'status' });
const welcome = h('div', { className: 'welcome', 'data-testid': 'welcome' });
const transcript = h('div', { className: 'transcript', id: 'transcript', 'data-testid': 'transcript', role: 'log', 'aria-live': 'polite' });
const waiting = h('div', { className: 'waiting', 'data-testid': 'waiting', hidden: true, role: 'status' },
  icon('loading', 'codicon-modifier-spin'), h('span', { className: 'waiting-text' }));
const scroller = h('main', { className: 'scroller' }, welcome, transcript, waiting);
let files: string[] = [];
let resources: ResourceRef[] = [];
let filesAsked = false;
const input = new ChatInput({
  send: (text, mentions) => sendLine(text, mentions),
  files: () => files,
  resources: () => resources,
  needFiles: () => {
    if (filesAsked) return;
    filesAsked = true;
    post({ type: 'listFiles' });
  },
  stop: () => post({ type: 'stop' }),
  changed: (text) => {
    ui.draft = text;
    scheduleRender();
  },
  commands: () => state.commands,
  busy: () => isBusy(state),
  cancel: () => cancelEdit(),
}, ui.draft);
const editBanner = h('div', { className: 'edit-banner', 'data-testid': 'edit-banner', hidden: true, role: 'status' },
  icon('edit'), h('span', {}, 'Editing your last message'), h('span', { 'aria-hidden': 'true' }, '·'),
  h('button', { className: 'link-button', 'data-action': 'cancelEdit', 'data-testid': 'edit-cancel',
    title: 'Keep the message and its answer as they are (Escape)' }, 'Cancel'));
const chip = (target: 'model' | 'trust' | 'lens', iconName: string, title: string) =>
  h('button', { className: 'chip', id: `pick-${target}`, 'data-testid': `pick-${target}`, 'data-action': `pick-${target}`, title },
    icon(iconName), h('span', { className: 'chip-label' }));
const modelChip = chip('model', 'sparkle', 'Select model');
const trustChip = chip('trust', 'shield', 'Set trust level');
const lensChip = chip('lens', 'eye', 'Use lens');
const usage = h('span', { className: 'usage', 'data-testid': 'usage', title: 'Tokens used by the last turn' });
const sessionUsage = h('span', { className: 'usage session-usage', 'data-testid': 'session-usage', hidden: true });
const contextMeter = h('span', { className: 'context-meter', 'data-testid': 'context-meter', hidden: true },
  h('span', { className: 'context-bar' }, h('span', { className: 'context-fill' })), h('span', { className: 'context-label' }));
const sendButton = h('button', { className: 'icon-button send', id: 'send', 'data-testid': 'send-button', 'data-action': 'send',
  title: 'Send (Enter)', 'aria-label': 'Send' }, icon('send'));
const stopButton = h('button', { className: 'icon-button stop', id: 'stop', 'data-testid': 'stop-button', 'data-action': 'stop',
  title: 'Stop (Escape)', 'aria-label': 'Stop', hidden: true }, icon('debug-stop'));
// Shown while the user is scrolled up from the newest part (issue 34 item 9): the stream goes on without pulling them
// down, and one click or Enter takes them there.
const jumpButton = h('button', { className: 'jump-latest', 'data-testid': 'jump-latest', 'data-action': 'jumpLatest',
  title: 'Jump to latest', 'aria-label': 'Jump to latest', hidden: true }, icon('arrow-down'));
const planPanel = createPlanPanel();
let drawnPlan: ChatState['plan'] | undefined;
const composer = h('footer', { className: 'composer', 'data-testid': 'composer' },
  jumpButton,
  planPanel,
  editBanner,
  input.element,
  h('div', { className: 'composer-bar' }, modelChip, trustChip, lensChip, h('span', { className: 'spacer' }), contextMeter, usage, sessionUsage, sendButton, stopButton));
document.getElementById('app')!.append(banner, scroller, composer);

// ---- rendering ----------------------------------------------------------------------------------------------
const drawn = new Map<string, { item: Item; el: HTMLElement }>();
let frame = 0;

function scheduleRender(): void {
  if (!frame) frame = requestAnimationFrame(render);
}

/** What items show besides their own data (Undo, Edit, Retry): an item it concerns is redrawn when it moves. */
function updateContext(): void {
  const busy = isBusy(state);
  const lastUser = [...state.items].reverse().find((i) => i.kind === 'user');
  const last = state.items.at(-1);
  const exchange = lastExchange(state);
  const next = {
    undoable: undoableTurn(state),
    editable: !busy && lastUser ? lastUser.id : null,
    lastEnd: !busy && last?.kind === 'turnEnd' ? last.id : null,
    retryable: exchange && !exchange.command ? exchange.end.id : null,
    model: state.settings.model,
  };
  const stale = new Set<string | null | undefined>();
  if (next.editable !== ctx.editable) stale.add(ctx.editable).add(next.editable);
  if (next.lastEnd !== ctx.lastEnd) stale.add(ctx.lastEnd).add(next.lastEnd);
  if (next.retryable !== ctx.retryable) stale.add(ctx.retryable).add(next.retryable);
  if (next.undoable !== ctx.undoable || next.model !== ctx.model) {
    for (const item of state.items) if (item.kind === 'turnEnd') stale.add(item.id);
  }
  Object.assign(ctx, next);
  for (const id of stale) if (id) drawn.delete(id);
  for (const el of [...transcript.children]) if (stale.has((el as HTMLElement).dataset.id)) el.remove();
}

let waitingSince = 0;
function renderWaiting(): void {
  const now = waitingForModel(state);
  if (now && !waitingSince) waitingSince = Date.now();
  if (!now) waitingSince = 0;
  waiting.hidden = !now;
  if (now) {
    const seconds = Math.floor((Date.now() - waitingSince) / 1000);
    waiting.querySelector('.waiting-text')!.textContent = `Waiting for the model… ${seconds} s`;
  }
}
setInterval(() => waitingSince && renderWaiting(), 500);

const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
const showJump = () => {
  jumpButton.hidden = atBottom();
};
scroller.addEventListener('scroll', showJump, { passive: true });

function render(): void {
  frame = 0;
  const stick = atBottom();
  updateContext();
  const seen = new Set<string>();
  let previous: Element | null = null;
  for (const item of state.items) {
    seen.add(item.id);
    let entry = drawn.get(item.id);
    if (!entry || entry.item !== item) {
      const el = renderItem(item, ctx);
      entry?.el.replaceWith(el);
      entry = { item, el };
      drawn.set(item.id, entry);
    }
    const expected: Element | null = previous ? previous.nextElementSibling : transcript.firstElementChild;
    if (expected !== entry.el) {
      if (previous) previous.after(entry.el);
      else transcript.prepend(entry.el);
    }
    previous = entry.el;
  }
  for (const [id, entry] of drawn) {
    if (!seen.has(id)) {
      entry.el.remove();
      drawn.delete(id);
    }
  }
  renderChrome();
  if (stick) scroller.scrollTop = scroller.scrollHeight;
  showJump();
  focusQuestion();
  saveSoon();
}

/** A new question takes the keyboard, unless the user is typing a line of their own. */
let focusedQuestion: string | undefined;
function focusQuestion(): void {
  const field = transcript.querySelector<HTMLInputElement>('[data-testid="question-card"][data-state="pending"] .question-answer');
  const callId = field?.closest<HTMLElement>('[data-call-id]')?.dataset.callId;
  if (!field || !callId || callId === focusedQuestion || input.value.trim()) return;
  focusedQuestion = callId;
  field.focus();
}

let saveTimer: ReturnType<typeof setTimeout> | undefined;
function saveSoon(): void {
  saveTimer ??= setTimeout(save, 300);
}
function save(): void {
  clearTimeout(saveTimer);
  saveTimer = undefined;
  vscode.setState({ ui: { draft: ui.draft, expanded: [...ui.expanded], editing: ui.editing } });
}
window.addEventListener('pagehide', save);
document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && save());

function renderChrome(): void {
  const busy = isBusy(state);
  sendButton.hidden = busy;
  stopButton.hidden = !busy;
  stopButton.toggleAttribute('disabled', !!state.turn?.stopping);
  document.body.classList.toggle('busy', busy);
  if (ui.editing && lastExchange(state)?.end.turn !== ui.editing) ui.editing = null; // the chat moved on
  editBanner.hidden = !ui.editing;
  const model = state.settings.model;
  setChip(modelChip, model ? model.slice(model.indexOf(':') + 1) : 'Default model', model ? `Model: ${model} (click to change)` : 'Select model');
  setChip(trustChip, state.settings.trust ?? 'workspace');
  setChip(lensChip, state.settings.lens ?? 'No lens');
  lensChip.classList.toggle('inactive', !state.settings.lens);
  usage.textContent = formatUsage(state.usage);
  usage.title = state.usage?.estimated ? 'Tokens of the last turn, estimated by Sunwell: the server reported no usage'
    : 'Tokens used by the last turn';
  usage.dataset.estimated = state.usage?.estimated ? 'true' : 'false';
  const session = formatSessionUsage(state.sessionUsage);
  sessionUsage.hidden = !session;
  sessionUsage.textContent = session?.text ?? '';
  sessionUsage.title = session?.title ?? '';
  renderWaiting();
  const meter = formatContext(state.context);
  contextMeter.hidden = !meter;
  if (meter) {
    contextMeter.title = meter.title;
    contextMeter.querySelector<HTMLElement>('.context-label')!.textContent = meter.text;
    contextMeter.querySelector<HTMLElement>('.context-fill')!.style.width = `${meter.percent}%`;
    contextMeter.classList.toggle('full', meter.percent >= 80);
  }
  if (state.plan !== drawnPlan) {
    drawnPlan = state.plan;
    drawPlan(planPanel, state.plan);
  }
  renderBanner();
  renderWelcome();
}

function setChip(el: HTMLElement, text: string, title?: string): void {
  const label = el.querySelector('.chip-label')!;
  if (label.textContent !== text) label.textContent = text;
  if (title && el.title !== title) el.title = title;
}

function renderBanner(): void {
  const { status, message } = state.sidecar;
  banner.hidden = status === 'ready';
  banner.dataset.status = status;
  const text = message ?? {
    starting: 'Starting Sunwell…',
    ready: '',
    stopped: 'Sunwell’s engine is stopped.',
    notInstalled: 'Sunwell’s Python package is not installed.',
    error: 'Sunwell’s engine is not running.',
  }[status];
  const action = status === 'notInstalled'
    ? h('button', { className: 'button primary', 'data-action': 'install', 'data-testid': 'install-button' }, 'Install')
    : status === 'error' ? h('button', { className: 'button secondary', 'data-action': 'showLog' }, 'Show Log') : null;
  banner.replaceChildren(icon(status === 'starting' ? 'loading' : status === 'error' ? 'error' : 'info',
    status === 'starting' ? 'codicon-modifier-spin' : ''), h('span', { className: 'banner-text' }, text), action ?? '');
}

function renderWelcome(): void {
  welcome.hidden = state.items.length > 0;
  if (welcome.hidden) return;
  const recent = state.sessions.slice(0, 6);
  welcome.replaceChildren(...[
    h('div', { className: 'welcome-title' }, icon('sparkle'), ' Sunwell'),
    h('p', {}, 'Ask about this workspace or have Sunwell change it. Every write and command asks you first.'),
    h('p', { className: 'hint' }, 'Type ', h('code', {}, '::'), ' for commands, ', h('code', {}, '::help'), ' for a list.'),
    recent.length ? h('div', { className: 'section-label' }, 'Recent sessions') : null,
    recent.length ? h('div', { className: 'session-list', 'data-testid': 'session-list' }, ...recent.map((s) =>
      h('button', { className: 'session-item', 'data-action': 'openSession', 'data-session': s.id, 'data-testid': 'session-item' },
        icon('comment-discussion'), h('span', { className: 'session-title' }, s.title || s.id),
        h('span', { className: 'session-time' }, relativeTime(s.updatedAt))))) : null,
  ].filter((el): el is HTMLElement => el !== null));
}

// ---- user actions (one delegated listener) ------------------------------------------------------------------
// Where the focus was in the chat: a picker opened from a chip gives it back there when it closes (issue 34 bug 4).
let lastFocused: HTMLElement | undefined;
document.addEventListener('focusin', (e) => {
  if (e.target instanceof HTMLElement) lastFocused = e.target;
});

// A turn's folded notes stay open or closed as the user left them when a new note redraws them.
document.addEventListener('toggle', (e) => {
  const notes = e.target instanceof HTMLDetailsElement && e.target.classList.contains('notes') ? e.target : null;
  const id = notes?.dataset.id;
  if (!notes || !id) return;
  if (notes.open) ui.expanded.add(id);
  else ui.expanded.delete(id);
}, true);

document.addEventListener('click', (e) => {
  const target = e.target as HTMLElement;
  const link = target.closest<HTMLAnchorElement>('a[href]');
  if (link) {
    e.preventDefault();
    post({ type: 'openLink', href: link.getAttribute('href') ?? '' });
    return;
  }
  const actionEl = target.closest<HTMLElement>('[data-action]');
  if (!actionEl) return;
  const callId = actionEl.closest<HTMLElement>('[data-call-id]')?.dataset.callId;
  switch (actionEl.dataset.action) {
    case 'send':
      if (input.value.trim() && !isBusy(state)) {
        sendLine(input.value, input.mentions);
        input.clear();
      }
      input.focus();
      break;
    case 'stop':
      post({ type: 'stop' });
      break;
    case 'allow':
    case 'allowSession':
      if (callId) post({ type: 'approve', callId, decision: actionEl.dataset.action });
      break;
    case 'deny':
      if (callId) deny(callId, actionEl);
      break;
    case 'showDiff':
      if (callId) post(actionEl.dataset.path ? { type: 'showDiff', callId, path: actionEl.dataset.path } : { type: 'showDiff', callId });
      break;
    case 'toggleTool':
      if (callId) {
        if (ui.expanded.has(callId)) ui.expanded.delete(callId);
        else ui.expanded.add(callId);
        // redraw this card with its new open state: a sub-agent's card is drawn by its `task` card, the outermost
        const outer = outermostCard(actionEl) ?? callId;
        drawn.delete(`tool:${outer}`);
        transcript.querySelector(`[data-call-id="${CSS.escape(outer)}"]`)?.remove();
        scheduleRender();
      }
      break;
    case 'answerOption':
      if (callId) post({ type: 'answer', callId, answer: actionEl.dataset.answer ?? '' });
      break;
    case 'answerText':
      if (callId) answerText(callId, actionEl);
      break;
    case 'answerSkip':
      if (callId) post({ type: 'answer', callId, answer: null });
      break;
    case 'jumpLatest':
      scroller.scrollTop = scroller.scrollHeight;
      showJump();
      break;
    case 'copyCode': {
      const code = actionEl.closest('.code-block')?.querySelector('code')?.textContent ?? '';
      post({ type: 'copy', text: code });
      actionEl.classList.add('copied');
      setTimeout(() => actionEl.classList.remove('copied'), 1200);
      break;
    }
    case 'openSession':
      if (actionEl.dataset.session) post({ type: 'openSession', session: actionEl.dataset.session });
      break;
    case 'pick-model':
      post({ type: 'pick', target: 'model' });
      break;
    case 'pick-trust':
      post({ type: 'pick', target: 'trust' });
      break;
    case 'pick-lens':
      post({ type: 'pick', target: 'lens' });
      break;
    case 'install':
      post({ type: 'installPythonPackage' });
      break;
    case 'showLog':
      post({ type: 'showLog' });
      break;
    case 'retry':
      if (!isBusy(state)) post({ type: 'retry' });
      break;
    case 'resume':
      if (!isBusy(state)) post({ type: 'resume' });
      break;
    case 'undoTurn':
      if (actionEl.dataset.turn) post({ type: 'undoTurn', turn: actionEl.dataset.turn });
      break;
    case 'setApiKey':
      post({ type: 'setApiKey' });
      break;
    case 'openSetting':
      if (actionEl.dataset.key) post({ type: 'openSetting', key: actionEl.dataset.key });
      break;
    case 'editLast':
      startEdit();
      break;
    case 'cancelEdit':
      cancelEdit();
      break;
  }
});

/**
 * Edit & resend: the last line (and its chips) back in the input, to change; sent, it replaces its exchange (the
 * transcript drops it and the model never sees it). A `::command`'s line only comes back, to send as a new one.
 */
function startEdit(): void {
  const exchange = lastExchange(state);
  const line = exchange?.user ?? [...state.items].reverse().find((i) => i.kind === 'user');
  if (line?.kind === 'user') {
    ui.editing = exchange && !exchange.command ? exchange.end.turn : null;
    input.value = line.text;
    input.setMentions(mentionsFromLabels(line.mentions ?? []));
    input.textarea.setSelectionRange(line.text.length, line.text.length);
  }
  input.focus();
  scheduleRender();
}

/** Escape or Cancel while editing: the input empties, the exchange stays. False when nothing was being edited. */
function cancelEdit(): boolean {
  if (!ui.editing) return false;
  ui.editing = null;
  input.clear();
  input.focus();
  scheduleRender();
  return true;
}

function sendLine(text: string, mentions: MentionRef[]): void {
  post({ type: 'send', text, mentions, ...(ui.editing ? { replaces: ui.editing } : {}) });
  ui.editing = null;
  scheduleRender();
}

/** The call id of the outermost card around `el` (a `task` card holds its sub-agent's cards). */
function outermostCard(el: HTMLElement): string | undefined {
  let found: string | undefined;
  for (let at: HTMLElement | null = el; at; at = at.parentElement?.closest<HTMLElement>('[data-call-id]') ?? null) {
    if (at.dataset.callId) found = at.dataset.callId;
  }
  return found;
}

/** The words typed in a question card's field, as the answer (an empty field sends nothing). */
function answerText(callId: string, from: HTMLElement): void {
  const text = from.closest('[data-testid="question-card"]')?.querySelector<HTMLInputElement>('.question-answer')?.value.trim();
  if (text) post({ type: 'answer', callId, answer: text });
}

/** Deny, with the words typed in the card's note field, which the model receives with the denial. */
function deny(callId: string, from: HTMLElement): void {
  const note = from.closest('[data-testid="approval-card"]')?.querySelector<HTMLInputElement>('.deny-note')?.value.trim();
  post(note ? { type: 'approve', callId, decision: 'deny', note } : { type: 'approve', callId, decision: 'deny' });
}

// Enter in a card's note field denies with that note.
document.addEventListener('keydown', (e) => {
  const target = e.target as HTMLElement;
  if (!target.classList.contains('deny-note')) return;
  const callId = target.closest<HTMLElement>('[data-call-id]')?.dataset.callId;
  if (!callId) return;
  // A question card's field: Enter answers with its words, Escape declines.
  if (target.classList.contains('question-answer')) {
    if (e.key === 'Enter') answerText(callId, target);
    else if (e.key === 'Escape') post({ type: 'answer', callId, answer: null });
    else return;
    e.preventDefault();
    e.stopPropagation();
    return;
  }
  if (e.key !== 'Enter') return;
  e.preventDefault();
  deny(callId, target);
});

// ---- host messages ------------------------------------------------------------------------------------------
window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'snapshot':
      state = message.state;
      break;
    case 'action':
      state = reduce(state, message.action);
      break;
    case 'focusInput':
      input.focus();
      return;
    case 'refocus':
      (lastFocused?.isConnected ? lastFocused : input.textarea).focus();
      return;
    case 'setDraft':
      input.value = message.text;
      input.focus();
      return;
    case 'files':
      files = message.files;
      resources = message.resources ?? [];
      filesAsked = false; // asked again next time the picker opens with none (a workspace that was empty)
      input.filesChanged();
      return;
  }
  scheduleRender();
});

// Nothing is drawn before the host's snapshot: the transcript and the engine's status are the host's to tell.
post({ type: 'ready' });
input.focus();
