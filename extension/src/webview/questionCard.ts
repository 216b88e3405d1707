// `ask_user`'s question on its tool card (the sidecar asked this client: `sunwell/ask`).
import type { QuestionCard } from '../common/state';
import { h, icon } from './dom';

/**
 * `ask_user`'s question: the options as buttons, a field for the person's own words (Enter sends, Escape
 * declines), and Skip. Answered, it says what was answered.
 */
export function renderQuestion(card: QuestionCard): HTMLElement {
  if (card.state !== 'pending') {
    const text = card.state === 'stopped' ? 'Stopped'
      : card.state === 'expired' ? 'No answer in time'
      : card.answer === null ? 'Declined' : `Answered: ${card.answer}`;
    return h('div', { className: `approval question approval-${card.state}`, 'data-testid': 'question-card', 'data-state': card.state },
      h('div', { className: 'approval-title' }, icon('question'), ' ', card.question),
      h('div', { className: 'approval-result', 'data-testid': 'question-result' },
        icon(card.state === 'answered' && card.answer !== null ? 'check' : 'circle-slash'), ` ${text}`));
  }
  return h('div', { className: 'approval question approval-pending', 'data-testid': 'question-card', 'data-state': 'pending',
    role: 'group', 'aria-label': 'Question from the model' },
  h('div', { className: 'approval-title', 'data-testid': 'question-text' }, icon('question'), ' ', card.question),
  card.options.length
    ? h('div', { className: 'approval-actions question-options' }, ...card.options.map((option, i) =>
      h('button', { className: `button ${i === 0 ? 'primary' : 'secondary'}`, 'data-action': 'answerOption',
        'data-answer': option, 'data-testid': 'question-option' }, option)))
    : null,
  h('div', { className: 'question-own' },
    h('input', { className: 'question-answer deny-note', type: 'text', maxlength: '4000', 'data-testid': 'question-input',
      placeholder: card.options.length ? 'Or your own answer' : 'Your answer', title: 'Enter sends, Escape declines',
      'aria-label': 'Your answer' }),
    h('button', { className: 'button primary', 'data-action': 'answerText', 'data-testid': 'question-send' }, 'Send'),
    h('button', { className: 'button secondary', 'data-action': 'answerSkip', 'data-testid': 'question-skip',
      title: 'Do not answer: the model goes on without' }, 'Skip')));
}
