// Draws transcript items. Each item becomes one element keyed by its id; the reducer gives a changed item a new
// object, so an item is redrawn only when it changed (a streaming answer redraws itself, not the transcript).
// A tool card is drawn here with its approval; a question card, the longer previews and a turn's end have modules
// of their own.
import { diffStat, formatDuration, toolTarget, toolTitle } from '../common/format';
import type { ApprovalCard, Item, ToolItem } from '../common/state';
import { chipText } from '../common/mentions';
import { h, icon } from './dom';
import type { RenderMarkdown } from './markdown';
import { renderEffects, renderFetch, renderLearn, unknownPreview } from './previews';
import { renderQuestion } from './questionCard';
import { renderTurnEnd } from './turnEnd';
import { renderResultLine, renderSubagentAnswer } from './resultCards';

export interface RenderContext {
  markdown: RenderMarkdown;
  /** Tool cards the user opened. */
  expanded: Set<string>;
  /** The turn whose Undo button shows (state.undoableTurn), the user message that can be edited and resent, and
   *  the model in use (which endpoint setting a failure points to). An item they concern is redrawn when they change. */
  undoable?: string | null;
  editable?: string | null;
  model?: string | null;
  /** The last item when it ends a turn and nothing runs: a failed one offers Retry. */
  lastEnd?: string | null;
  /** The end of the last exchange of the conversation (state.lastExchange, not a `::command`'s): it offers Retry. */
  retryable?: string | null;
  /** Whether a turn's answer has words to copy (its end offers Copy). */
  answered?: (turn: string) => boolean;
}

export function renderItem(item: Item, ctx: RenderContext): HTMLElement {
  switch (item.kind) {
    case 'user':
      return h('div', { className: 'message user', 'data-testid': 'user-message', 'data-id': item.id },
        item.id === ctx.editable
          ? h('button', { className: 'icon-button edit-message', 'data-action': 'editLast', 'data-testid': 'edit-message',
            title: 'Edit and resend', 'aria-label': 'Edit and resend' }, icon('edit'))
          : null,
        h('div', { className: 'user-bubble' }, item.text,
          item.mentions?.length
            ? h('div', { className: 'user-mentions', 'data-testid': 'user-mentions' },
              ...item.mentions.map((label) => h('span', { className: 'mention-chip', 'data-testid': 'sent-mention', 'data-label': label,
              title: label.replace(/^@/, '') }, chipText(label))))
            : null,
          item.images?.length
            ? h('div', { className: 'user-images', 'data-testid': 'user-images' }, ...item.images.map((image) =>
              h('span', { className: `sent-image${image.thumb ? '' : ' unseen'}`, 'data-testid': 'sent-image', 'data-name': image.name,
                title: image.name },
              // a line of an earlier window, or replayed: its picture was not kept, its name says it was there
              image.thumb ? h('img', { src: image.thumb, alt: image.name }) : icon('file-media'),
              image.thumb ? null : h('span', {}, image.name))))
            : null));
    case 'assistant': {
      const body = h('div', { className: 'markdown' });
      body.innerHTML = ctx.markdown(item.text);
      return h('div', { className: `message assistant${item.streaming ? ' streaming' : ''}`, 'data-testid': 'assistant-message',
        'data-id': item.id }, body);
    }
    case 'thinking': {
      const body = h('div', { className: 'markdown' });
      body.innerHTML = ctx.markdown(item.text);
      const details = h('details', { className: 'thinking', 'data-testid': 'thinking', 'data-id': item.id },
        h('summary', {}, icon(item.streaming ? 'loading' : 'lightbulb', item.streaming ? 'codicon-modifier-spin' : ''),
          item.streaming ? ' Thinking…' : ' Thought'),
        body);
      return details;
    }
    case 'tool':
      return renderTool(item, ctx);
    case 'notice':
      if (item.code === 'compacted') {  // older turns were summarised: a divider in the conversation
        return h('div', { className: 'compacted', 'data-testid': 'compacted', 'data-id': item.id, role: 'separator', title: item.message },
          h('span', {}, 'Conversation compacted'), h('span', { className: 'compacted-detail' }, item.message));
      }
      return h('div', { className: `notice notice-${item.level}`, 'data-testid': 'notice', 'data-code': item.code, 'data-id': item.id },
        icon(item.level === 'error' ? 'error' : item.level === 'warning' ? 'warning' : 'info'),
        h('span', {}, item.message));
    case 'notes': {
      const [first] = item.notes;
      const more = item.notes.length > 1 ? ` (+${item.notes.length - 1} more)` : '';
      return h('details', { className: 'notes', 'data-testid': 'notes', 'data-id': item.id, open: ctx.expanded.has(item.id) },
        h('summary', { title: 'Notes from Sunwell about this turn' },
          icon('info'), h('span', { className: 'notes-first' }, first.message), h('span', { className: 'notes-more' }, more)),
        h('ul', {}, ...item.notes.map((note) => h('li', { 'data-testid': 'notice', 'data-code': note.code }, note.message))));
    }
    case 'command': {
      const body = h('div', { className: 'markdown' });
      body.innerHTML = ctx.markdown(item.output);
      return h('div', { className: 'command-output', 'data-testid': 'command-output', 'data-id': item.id },
        h('div', { className: 'command-name' }, icon('terminal'), h('code', {}, item.command)), body);
    }
    case 'turnEnd':
      return renderTurnEnd(item, ctx);
  }
}

const STATUS_ICON: Record<ToolItem['status'], [string, string]> = {
  streaming: ['loading', 'codicon-modifier-spin'],
  running: ['loading', 'codicon-modifier-spin'],
  ok: ['check', ''],
  error: ['error', ''],
  incomplete: ['circle-slash', ''],
};

function renderTool(tool: ToolItem, ctx: RenderContext): HTMLElement {
  const open = ctx.expanded.has(tool.callId);
  const awaiting = tool.approval?.state === 'pending' || tool.question?.state === 'pending';
  const [iconName, modifier] = awaiting ? [tool.question ? 'question' : 'shield', ''] : STATUS_ICON[tool.status];
  const task = tool.name === 'task';
  const target = task ? null : toolTarget(tool.name, tool.arguments, tool.argsText);
  const calls = task ? (tool.children ?? []).filter((c) => c.kind === 'tool').length : 0;
  const head = h('button', { className: 'tool-head', 'data-action': 'toggleTool', 'aria-expanded': open ? 'true' : 'false',
    'data-testid': 'tool-head' },
    icon(iconName, `tool-status ${modifier}`),
    h('span', { className: 'tool-title' }, toolTitle(tool.name)),
    target ? h('code', { className: 'tool-target', title: target }, target) : null,
    h('span', { className: 'tool-spacer' }),
    calls ? h('span', { className: 'tool-calls', 'data-testid': 'subagent-calls' }, `${calls} call${calls === 1 ? '' : 's'}`) : null,
    tool.durationMs !== null ? h('span', { className: 'tool-duration', 'data-testid': 'tool-duration' }, formatDuration(tool.durationMs)) : null,
    icon(open ? 'chevron-down' : 'chevron-right', 'tool-chevron'));
  const answer = tool.status === 'ok' ? renderSubagentAnswer(tool, ctx.markdown) : null;
  const body = h('div', { className: 'tool-body', hidden: !open },
    h('div', { className: 'section-label' }, tool.raw !== null ? 'Arguments (unparsable)' : 'Arguments'),
    h('pre', { className: 'tool-args', 'data-testid': 'tool-args' }, tool.argsText || '…'),
    tool.output !== null ? h('div', { className: 'section-label' }, answer ? 'Answer' : 'Output') : null,
    answer ?? (tool.output !== null ? h('pre', { className: 'tool-output', 'data-testid': 'tool-output' }, tool.output || '(no output)') : null));
  const error = tool.error
    ? h('div', { className: 'tool-error', 'data-testid': 'tool-error', 'data-code': tool.error.code },
      h('span', { className: 'error-code' }, tool.error.code), ` ${tool.error.message}`,
      tool.error.suggestion ? h('div', { className: 'error-suggestion' }, tool.error.suggestion) : null)
    : null;
  return h('div', {
    className: `tool-card status-${tool.status}${awaiting ? ' awaiting' : ''}`,
    'data-testid': 'tool-card', 'data-id': tool.id, 'data-call-id': tool.callId, 'data-tool': tool.name,
    'data-status': awaiting ? 'awaitingApproval' : tool.status,
  }, head, task ? renderTaskDescription(tool) : null, tool.status === 'ok' ? renderResultLine(tool) : null, tool.question ? renderQuestion(tool.question) : null,
  tool.name === 'task' ? renderSubagent(tool, ctx, open) : null, body, error,
  tool.approval ? renderApproval(tool, tool.approval)
    : tool.decision?.by === 'user' ? renderAnswered('answered', tool.decision.decision, 'user', null) : null);
}

/** What a sub-agent does, under its card's head and wrapped: a narrow sidebar shows it whole. */
function renderTaskDescription(tool: ToolItem): HTMLElement | null {
  const description = typeof tool.arguments?.description === 'string' ? tool.arguments.description : '';
  return description ? h('div', { className: 'task-description', 'data-testid': 'subagent-title' }, description) : null;
}

/**
 * A `task` sub-agent's own tool cards, inside its card: shown while it works, folded with the card once it is done
 * (the head's chevron opens it again).
 */
function renderSubagent(tool: ToolItem, ctx: RenderContext, open: boolean): HTMLElement | null {
  const children = tool.children ?? [];
  if (!children.length) return null;
  const working = tool.status === 'running' || tool.status === 'streaming';
  return h('div', { className: 'subagent', 'data-testid': 'subagent', hidden: !(open || working),
    role: 'group', 'aria-label': 'Sub-agent tool calls' }, ...children.map((child) => renderItem(child as Item, ctx)));
}

const DECISION_TEXT: Record<string, string> = {
  allow: 'Allowed',
  allowSession: 'Allowed for this session',
  deny: 'Denied',
};

function renderApproval(tool: ToolItem, card: ApprovalCard): HTMLElement {
  const preview = card.preview;
  const parts: (HTMLElement | null)[] = [];
  const showDiff = preview.kind === 'diff'
    ? h('button', { className: 'link-button', 'data-action': 'showDiff', 'data-testid': 'approval-show-diff' }, icon('diff'), ' Show diff')
    : null;
  if (card.state !== 'pending') {
    const answered = renderAnswered(card.state, card.decision, card.by, showDiff, preview.kind === 'fetch' ? preview.host : null);
    answered.dataset.risk = card.risk;
    return answered;
  }
  switch (preview.kind) {
    case 'diff': {
      const stat = diffStat(preview.before, preview.after);
      parts.push(h('div', { className: 'approval-title' }, icon('shield'),
        ` ${preview.before === null ? 'Create' : tool.name === 'edit_file' ? 'Edit' : 'Overwrite'} `,
        h('code', { 'data-testid': 'approval-path' }, preview.path), '?'));
      parts.push(h('div', { className: 'diffstat', 'data-testid': 'approval-diffstat' },
        h('span', { className: 'added' }, `+${stat.added}`), ' ', h('span', { className: 'removed' }, `−${stat.removed}`),
        preview.before === null ? ' (new file)' : ''));
      if (preview.remoteSchema) {
        parts.push(h('div', { className: 'approval-cwd approval-warning', 'data-testid': 'approval-remote-schema' },
          icon('globe'), ' This file names a remote schema: ', h('code', {}, preview.remoteSchema),
          ' — VS Code will fetch it when the file is opened'));
      }
      break;
    }
    case 'effects':
      parts.push(...renderEffects(preview));
      break;
    case 'command':
      parts.push(h('div', { className: 'approval-title' }, icon('shield'), ' Run this command?'));
      parts.push(h('pre', { className: 'approval-command', 'data-testid': 'approval-command' }, preview.command));
      parts.push(h('div', { className: 'approval-cwd', 'data-testid': 'approval-cwd' }, 'in ', h('code', {}, preview.cwd || '.')));
      if (preview.background) {
        parts.push(h('div', { className: 'approval-cwd approval-warning', 'data-testid': 'approval-background' },
          icon('sync'), ' It keeps running in the background until it is stopped (Stop in the processes strip below, ::stop, or the session ends)'));
      }
      break;
    case 'fetch':
      parts.push(...renderFetch(preview));
      break;
    case 'learn':
      parts.push(...renderLearn(preview));
      break;
    case 'tool':
      parts.push(h('div', { className: 'approval-title' }, icon('shield'), ` Allow ${tool.name} (${card.risk})?`));
      parts.push(h('pre', { className: 'approval-command' }, JSON.stringify(tool.arguments ?? preview, null, 2)));
      break;
    default:
      parts.push(...unknownPreview(preview));
  }
  const [sessionLabel, sessionTitle] = preview.kind === 'fetch'
    ? ['Allow host for session', `Fetch any page of ${preview.host} without asking again in this session`]
    : ['Allow for this session', `Allow ${tool.name} without asking again in this session`];
  // learning an API is asked every time: no session rule is offered for it
  const allowSession = preview.kind === 'learn' ? null
    : h('button', { className: 'button secondary', 'data-action': 'allowSession', 'data-testid': 'approval-allow-session',
      title: sessionTitle }, sessionLabel);
  parts.push(h('div', { className: 'approval-actions' },
    h('button', { className: 'button primary', 'data-action': 'allow', 'data-testid': 'approval-allow' }, 'Allow'),
    allowSession,
    h('button', { className: 'button secondary', 'data-action': 'deny', 'data-testid': 'approval-deny',
      title: 'Deny; the note beside it, if any, goes to the model with the denial' }, 'Deny'),
    showDiff),
  h('input', { className: 'deny-note', type: 'text', maxlength: '500', 'data-testid': 'approval-deny-note',
    placeholder: 'Why not? A note for the model with Deny (optional)', 'aria-label': 'Note for the model with the denial' }));
  return h('div', { className: `approval approval-${card.state}`, 'data-testid': 'approval-card', 'data-state': card.state,
    'data-risk': card.risk, role: 'group', 'aria-label': 'Approval' }, ...parts);
}


/**
 * An answered question: one line says how. Also for a call of a replayed session that a person answered (the
 * log keeps the decision, not the question).
 */
function renderAnswered(state: 'answered' | 'expired' | 'stopped', decision: ApprovalCard['decision'], by: ApprovalCard['by'],
  showDiff: HTMLElement | null, host: string | null = null): HTMLElement {
  const text = state === 'stopped' ? 'Stopped'
    : state === 'expired' ? 'No answer in time: denied'
    : decision === 'allowSession' && host ? `Allowed ${host} for this session`
    : `${DECISION_TEXT[decision ?? 'deny']}${by === 'policy' ? ' by policy' : ''}`;
  return h('div', { className: `approval approval-${state}`, 'data-testid': 'approval-card', 'data-state': state },
    h('div', { className: 'approval-result', 'data-testid': 'approval-result' },
      icon(state === 'stopped' ? 'debug-stop' : state === 'expired' || decision === 'deny' ? 'circle-slash' : 'check'), ` ${text}`, showDiff ? ' · ' : '', showDiff));
}
