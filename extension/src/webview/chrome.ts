// The frame around the transcript: the engine's status banner, the welcome with recent sessions, the waiting line,
// and the composer (the processes strip, the pinned plan, the edit banner, the input, the chips for model, trust and lens, the context
// meter, usage, Send and Stop, Jump to latest). Built once around the input; drawn from the state after each change.
import { formatContext, formatSessionUsage, formatUsage, relativeTime } from '../common/format';
import { isBusy, lastExchange, shownProcesses, type ChatState } from '../common/state';
import { h, icon } from './dom';
import { createPlanPanel, drawPlan } from './plan';
import { createProcessStrip, drawProcesses } from './processes';

export type Chrome = ReturnType<typeof createChrome>;

/** The chat's elements around the input, appended to `#app`; `draw` brings them up to date with the state. */
export function createChrome(inputElement: HTMLElement) {
  const banner = h('div', { className: 'banner', id: 'sidecar-banner', 'data-testid': 'sidecar-banner', hidden: true, role: 'status' });
  const welcome = h('div', { className: 'welcome', 'data-testid': 'welcome' });
  const transcript = h('div', { className: 'transcript', id: 'transcript', 'data-testid': 'transcript', role: 'log', 'aria-live': 'polite' });
  const waiting = h('div', { className: 'waiting', 'data-testid': 'waiting', hidden: true, role: 'status' },
    icon('loading', 'codicon-modifier-spin'), h('span', { className: 'waiting-text' }));
  const scroller = h('main', { className: 'scroller' }, welcome, transcript, waiting);
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
  // The worktree session this chat's lines run in (its own checkout and branch): shown, not picked here.
  const worktreeChip = h('span', { className: 'chip worktree-chip', 'data-testid': 'worktree-chip', hidden: true },
    icon('git-branch'), h('span', { className: 'chip-label' }));
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
  const processStrip = createProcessStrip();
  const composer = h('footer', { className: 'composer', 'data-testid': 'composer' },
    jumpButton,
    processStrip,
    planPanel,
    editBanner,
    inputElement,
    h('div', { className: 'composer-bar' }, modelChip, trustChip, lensChip, worktreeChip, h('span', { className: 'spacer' }), contextMeter, usage, sessionUsage, sendButton, stopButton));
  document.getElementById('app')!.append(banner, scroller, composer);
  let drawnPlan: ChatState['plan'] | undefined;
  let drawnProcesses: ChatState['processes'] | undefined;

  /** Everything but the transcript; `ui.editing` ends when the chat moved on from the exchange it edits. */
  function draw(state: ChatState, ui: { editing: string | null }): void {
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
    const worktree = state.settings.worktree;
    worktreeChip.hidden = worktree === undefined || worktree === null;
    setChip(worktreeChip, worktree || 'new worktree', worktree ? `Runs in worktree ${worktree}, on branch sunwell/${worktree}`
      : 'Runs in a new worktree, named from the first line');
    usage.textContent = formatUsage(state.usage);
    usage.title = state.usage?.estimated ? 'Tokens of the last turn, estimated by Sunwell: the server reported no usage'
      : 'Tokens used by the last turn';
    usage.dataset.estimated = state.usage?.estimated ? 'true' : 'false';
    const session = formatSessionUsage(state.sessionUsage);
    sessionUsage.hidden = !session;
    sessionUsage.textContent = session?.text ?? '';
    sessionUsage.title = session?.title ?? '';
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
    if (state.processes !== drawnProcesses) {
      drawnProcesses = state.processes;
      drawProcesses(processStrip, shownProcesses(state));
    }
    renderBanner(state);
    renderWelcome(state);
  }

  function renderBanner(state: ChatState): void {
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

  function renderWelcome(state: ChatState): void {
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

  return { transcript, scroller, waiting, jumpButton, draw };
}

function setChip(el: HTMLElement, text: string, title?: string): void {
  const label = el.querySelector('.chip-label')!;
  if (label.textContent !== text) label.textContent = text;
  if (title && el.title !== title) el.title = title;
}
