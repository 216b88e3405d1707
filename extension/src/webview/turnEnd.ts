// The line that ends a turn: how it ended, its calls, tokens and cost, Undo and Retry; under a failed or interrupted
// turn, what can be done about it.
import { cacheNote, endpointSetting, formatCost, formatUsage, needsApiKey, unreachableEndpoint } from '../common/format';
import type { TurnEndItem } from '../common/state';
import { h, icon } from './dom';
import type { RenderContext } from './render';

const END_TEXT: Record<TurnEndItem['status'], string> = {
  completed: '',
  cancelled: 'Stopped.',
  limitReached: 'Stopped at the tool-turn limit.',
  error: 'The turn failed.',
  interrupted: 'Interrupted: Sunwell stopped while this turn ran.',
};

export function renderTurnEnd(item: TurnEndItem, ctx: RenderContext): HTMLElement {
  const cost = formatCost(item.usage?.cost);
  const details = [
    item.toolCalls ? `${item.toolCalls} tool call${item.toolCalls === 1 ? '' : 's'}` : '',
    formatUsage(item.usage),
    cost,
  ].filter(Boolean).join(' · ');
  const undo = item.turn === ctx.undoable
    ? h('button', { className: 'link-button', 'data-action': 'undoTurn', 'data-turn': item.turn, 'data-testid': 'undo-turn',
      title: 'Put back the files this turn changed' }, icon('discard'), ' Undo')
    : item.undone ? h('span', { className: 'turn-end-undone', 'data-testid': 'turn-undone' }, icon('discard'), ' Undone') : null;
  // An answer of any end asks again in its place; a failure's own Retry and an interrupted turn's Resume are below.
  const retry = item.id === ctx.retryable && item.status !== 'error' && item.status !== 'interrupted'
    ? h('button', { className: 'link-button', 'data-action': 'retry', 'data-testid': 'retry-button',
      title: 'Ask again: a new answer takes the place of this one, and the model does not see this one' },
    icon('refresh'), ' Retry')
    : null;
  return h('div', { className: `turn-end status-${item.status}`, 'data-testid': 'turn-end', 'data-status': item.status, 'data-id': item.id },
    h('div', { className: 'turn-end-line' },
      item.status !== 'completed' ? icon(item.status === 'error' || item.status === 'interrupted' ? 'error' : 'debug-stop') : null,
      END_TEXT[item.status] ? h('span', { className: 'turn-end-status' }, END_TEXT[item.status]) : null,
      item.error ? h('span', { className: 'turn-end-error', 'data-testid': 'turn-end-error' }, item.error) : null,
      details ? h('span', { className: 'turn-end-details', 'data-testid': 'turn-usage',
        title: item.usage?.estimated ? 'Estimated by Sunwell: the server reported no usage'
          : `As the server reported${cacheNote(item.usage) ? `; of the input, ${cacheNote(item.usage)}` : ''}` }, details) : null,
      undo, retry),
    item.status === 'error' && item.id === ctx.lastEnd ? renderFailureHelp(item, ctx.model ?? null) : null,
    item.status === 'interrupted' && item.id === ctx.lastEnd ? renderResume() : null);
}

/** Under an interrupted turn: take it up where the log ends (no finished call runs again). */
function renderResume(): HTMLElement {
  return h('div', { className: 'turn-end-actions' },
    h('button', { className: 'button secondary', 'data-action': 'resume', 'data-testid': 'resume-button',
      title: 'Go on from where the turn stopped; nothing it finished runs again' }, icon('debug-continue'), ' Resume'));
}

/** Under a failed turn: Retry, and when the endpoint or the key is the problem, where to change it. */
function renderFailureHelp(item: TurnEndItem, model: string | null): HTMLElement {
  const error = item.error;
  const url = unreachableEndpoint(error);
  const setting = endpointSetting(model);
  const fixes = url || needsApiKey(error)
    ? h('div', { className: 'failure-help', 'data-testid': 'failure-help' },
      url ? h('span', {}, 'Sunwell could not reach ', h('code', { 'data-testid': 'failed-url' }, url),
        '. Is the server running? To use another endpoint or model: ')
        : h('span', {}, 'The provider did not accept the API key. '),
      h('button', { className: 'link-button', 'data-action': 'pick-model', 'data-testid': 'fix-model' }, icon('sparkle'), ' Select Model'),
      h('button', { className: 'link-button', 'data-action': 'setApiKey', 'data-testid': 'fix-key' }, icon('key'), ' Set API Key'),
      h('button', { className: 'link-button', 'data-action': 'openSetting', 'data-key': setting, 'data-testid': 'fix-setting' },
        icon('settings-gear'), ' ', h('code', {}, setting)))
    : null;
  return h('div', { className: 'turn-end-actions' },
    // A turn in the log resumes: only the request that failed goes again, no call it finished runs again.
    h('button', { className: 'button secondary', 'data-action': item.resumable ? 'resume' : 'retry', 'data-testid': 'retry-button',
      title: item.resumable ? 'Send the request that failed again and go on' : 'Send your last message again, in place of this one' },
    icon('refresh'), ' Retry'),
    fixes);
}
