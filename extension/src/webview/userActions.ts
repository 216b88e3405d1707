// What the user does in the chat, through one delegated listener per kind of event: the buttons of the cards and
// the composer (a `data-action` on the element), links, the keys of a card's field, Edit & resend.
import type { ImageUpload } from '../common/images';
import type { WebviewToHost } from '../common/messages';
import { mentionsFromLabels, type MentionRef } from '../common/mentions';
import { answerOf, isBusy, lastExchange, type ChatState } from '../common/state';
import type { ChatInput } from './input';

export interface UserActionHost {
  readonly state: ChatState;
  /** What is the webview's own: the cards it opened, the exchange the draft replaces when sent (Edit & resend). */
  readonly ui: { expanded: Set<string>; editing: string | null };
  readonly input: ChatInput;
  post(message: WebviewToHost): void;
  scheduleRender(): void;
  /** Draws the card of `callId` anew (with its new open state) at the next render. */
  redrawCard(callId: string): void;
  jumpToLatest(): void;
}

export function listenToUser(host: UserActionHost) {
  const { ui, input, post, scheduleRender } = host;
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
        if (input.value.trim() && !isBusy(host.state)) {
          sendLine(input.value, input.mentions, input.images);
          input.clear();
        }
        input.focus();
        break;
      case 'stop':
        post({ type: 'stop' });
        break;
      case 'processStop':
      case 'processDismiss':
      case 'processOpen': {
        const processId = Number(actionEl.closest<HTMLElement>('[data-process-id]')?.dataset.processId);
        if (actionEl.dataset.action === 'processOpen') post({ type: 'processOpen', processId, port: Number(actionEl.dataset.port) });
        else post({ type: actionEl.dataset.action as 'processStop' | 'processDismiss', processId });
        break;
      }
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
          host.redrawCard(outermostCard(actionEl) ?? callId);
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
        host.jumpToLatest();
        break;
      case 'copyAnswer': {
        const answer = actionEl.dataset.turn ? answerOf(host.state, actionEl.dataset.turn) : null;
        if (answer) post({ type: 'copy', text: answer });
        actionEl.classList.add('copied');
        setTimeout(() => actionEl.classList.remove('copied'), 1200);
        break;
      }
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
        if (!isBusy(host.state)) post({ type: 'retry' });
        break;
      case 'resume':
        if (!isBusy(host.state)) post({ type: 'resume' });
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
    const exchange = lastExchange(host.state);
    const line = exchange?.user ?? [...host.state.items].reverse().find((i) => i.kind === 'user');
    if (line?.kind === 'user') {
      ui.editing = exchange && !exchange.command ? exchange.end.turn : null;
      input.value = line.text;
      input.setMentions(mentionsFromLabels(line.mentions ?? []));
      // its images, when this webview sent it (the transcript keeps no bytes of them)
      input.setImages(lastSent?.text === line.text ? lastSent.images : []);
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

  /** The images of the line this webview sent last, for Edit & resend. */
  let lastSent: { text: string; images: ImageUpload[] } | undefined;

  function sendLine(text: string, mentions: MentionRef[], images: ImageUpload[] = []): void {
    lastSent = { text: text.trim(), images: [...images] };
    post({ type: 'send', text, mentions, ...(images.length ? { images } : {}), ...(ui.editing ? { replaces: ui.editing } : {}) });
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

  return { sendLine, cancelEdit, lastFocused: () => lastFocused };
}
