// The chat webview: says `ready`, then applies the host's snapshot and actions with the shared reducer and redraws
// what changed, at most once per frame. The transcript is the host's (it keeps the one copy); what the webview
// saves with setState is its own: the draft and which cards are open.
// The frame around the transcript is chrome.ts; what the user does there, userActions.ts.
import type { HostToWebview, WebviewToHost } from '../common/messages';
import { answerOf, initialState, isBusy, lastExchange, reduce, undoableTurn, waitingForModel, type ChatState, type Item } from '../common/state';
import type { ResourceRef } from '../common/mentions';
import { createChrome } from './chrome';
import { ChatInput } from './input';
import { createMarkdownRenderer } from './markdown';
import { renderItem, type RenderContext } from './render';
import { listenToUser } from './userActions';

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
const ctx: RenderContext = { markdown: createMarkdownRenderer(window), expanded: ui.expanded,
  answered: (turn) => answerOf(state, turn) !== null };
const post = (message: WebviewToHost) => vscode.postMessage(message);

let files: string[] = [];
let resources: ResourceRef[] = [];
let filesAsked = false;
const input = new ChatInput({
  send: (text, mentions, images) => actions.sendLine(text, mentions, images),
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
  cancel: () => actions.cancelEdit(),
}, ui.draft);
const chrome = createChrome(input.element);
const { transcript, scroller, waiting, jumpButton } = chrome;
const actions = listenToUser({
  get state() {
    return state;
  },
  ui,
  input,
  post,
  scheduleRender,
  redrawCard,
  jumpToLatest,
});

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
  chrome.draw(state, ui);
  renderWaiting();
  if (stick) scroller.scrollTop = scroller.scrollHeight;
  showJump();
  focusQuestion();
  saveSoon();
}

/** Drops the drawn card of `callId` (a tool card's element and its entry), so the next render draws it anew. */
function redrawCard(callId: string): void {
  drawn.delete(`tool:${callId}`);
  transcript.querySelector(`[data-call-id="${CSS.escape(callId)}"]`)?.remove();
  scheduleRender();
}

function jumpToLatest(): void {
  scroller.scrollTop = scroller.scrollHeight;
  showJump();
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
    case 'refocus': {
      const lastFocused = actions.lastFocused();
      (lastFocused?.isConnected ? lastFocused : input.textarea).focus();
      return;
    }
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
