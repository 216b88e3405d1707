// The agent's plan, pinned above the input: a collapsible checklist whose summary says `2/5` and the step in
// progress, the same step highlighted in the list. It is drawn from the reducer's `plan` (the session's latest,
// live or replayed) and redrawn only when that changes; whether it is open is the person's and is kept.
import { planProgress, type Plan } from '../common/state';
import { h, icon } from './dom';

const STATUS_ICONS = { done: 'pass-filled', in_progress: 'arrow-circle-right', pending: 'circle-large-outline' } as const;

export function createPlanPanel(): HTMLDetailsElement {
  return h('details', { className: 'plan', 'data-testid': 'plan', hidden: true }) as HTMLDetailsElement;
}

export function drawPlan(panel: HTMLDetailsElement, plan: Plan | null | undefined): void {
  const progress = planProgress(plan);
  panel.hidden = !progress;
  if (!plan || !progress) {
    panel.replaceChildren();
    return;
  }
  const current = progress.current === null ? null : plan.items[progress.current];
  const headline = current?.step ?? (progress.done === progress.total ? 'All steps done' : 'Plan');
  const summary = h('summary', { className: 'plan-summary', title: 'The model’s plan (update_plan); ::plan shows it too' },
    icon('checklist'),
    h('span', { className: 'plan-count', 'data-testid': 'plan-count' }, `${progress.done}/${progress.total}`),
    h('span', { className: 'plan-current', 'data-testid': 'plan-current' }, headline));
  const steps = h('ol', { className: 'plan-steps' }, ...plan.items.map((item, index) =>
    h('li', { className: `plan-step ${item.status}`, 'data-status': item.status, 'data-testid': 'plan-step',
      'aria-current': index === progress.current ? 'step' : undefined },
    icon(STATUS_ICONS[item.status]), h('span', { className: 'plan-step-text' }, item.step))));
  const why = plan.explanation ? h('div', { className: 'plan-explanation' }, plan.explanation) : null;
  panel.replaceChildren(summary, steps, why ?? '');
}
