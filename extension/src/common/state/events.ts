// The sidecar's events of a running turn (docs/events.md "Events"): streams, tool calls and their results, notices,
// the context meter, the plan, the turn's end. A sub-agent's events go inside its `task` call's card.
import type { ChatEvent } from '../../protocol';
import { appendTool, assertNever, closeStreams, findTool, pretty, replaceItem, unanswered } from './items';
import type { ApprovalCard, AssistantItem, ChatAction, ChatState, CommandItem, NoticeItem, NotesItem, Plan, ThinkingItem, ToolItem, ToolStatus } from './model';
import { endTurn } from './turns';

const EVENT_TYPES = new Set<string>([
  'text', 'thinking', 'toolCallStart', 'toolCallDelta', 'toolCall', 'approval', 'toolResult', 'notice',
  'commandOutput', 'contextUsage', 'plan', 'done',
]);

export function isChatEvent(action: ChatAction): action is ChatEvent {
  return EVENT_TYPES.has(action.type);
}

export function reduceEvent(state: ChatState, ev: ChatEvent): ChatState {
  // Only a turn of this chat adds to it: not a turn it left (New Session, another session opened), nor one of
  // another session.
  if (!state.turn) return state;
  if (state.session && ev.session && ev.session !== state.session) return state;
  let next = state;
  if (!next.session && ev.session) next = { ...next, session: ev.session };
  if (next.turn && next.turn.id === null && ev.type !== 'done') next = { ...next, turn: { ...next.turn, id: ev.turn } };
  if (ev.parentCallId) return reduceNested(next, ev, ev.parentCallId);
  switch (ev.type) {
    case 'text':
    case 'thinking': {
      const kind = ev.type === 'text' ? 'assistant' : 'thinking';
      const last = next.items[next.items.length - 1];
      if (last && last.kind === kind && last.turn === ev.turn && last.streaming) {
        return replaceItem(next, last, { ...last, text: last.text + ev.delta });
      }
      const item = { kind, id: `i${next.nextId}`, turn: ev.turn, text: ev.delta, streaming: true } as AssistantItem | ThinkingItem;
      const closed = closeStreams(next);
      return { ...closed, items: [...closed.items, item], nextId: next.nextId + 1 };
    }
    case 'toolCallStart': {
      const existing = findTool(next, ev.callId);
      if (existing) return replaceItem(next, existing, { ...existing, name: ev.name });
      return appendTool(closeStreams(next), ev.callId, ev.turn, ev.name, { status: 'streaming' });
    }
    case 'toolCallDelta': {
      const tool = findTool(next, ev.callId);
      if (!tool) return appendTool(closeStreams(next), ev.callId, ev.turn, '', { status: 'streaming', argsText: ev.argsDelta });
      return replaceItem(next, tool, { ...tool, argsText: tool.argsText + ev.argsDelta });
    }
    case 'toolCall': {
      const fields = {
        name: ev.name,
        arguments: ev.arguments,
        raw: ev.raw ?? null,
        argsText: ev.raw ?? pretty(ev.arguments),
      };
      const tool = findTool(next, ev.callId);
      if (!tool) return appendTool(closeStreams(next), ev.callId, ev.turn, ev.name, { ...fields, status: 'running' });
      const status = tool.status === 'streaming' || tool.status === 'incomplete' ? 'running' : tool.status;
      return replaceItem(next, tool, { ...tool, ...fields, status });
    }
    case 'approval': {
      const tool = findTool(next, ev.callId);
      if (!tool) return next;
      const decision = { decision: ev.decision, by: ev.by };
      const approval: ApprovalCard | null = tool.approval
        ? { ...tool.approval, state: tool.approval.state === 'pending' && ev.by === 'policy' ? unanswered(next) : 'answered',
            decision: ev.decision, by: ev.by }
        : null;
      return replaceItem(next, tool, { ...tool, decision, approval });
    }
    case 'toolResult': {
      const fields = {
        status: (ev.ok ? 'ok' : 'error') as ToolStatus,
        output: ev.output,
        ...(ev.data ? { data: ev.data } : {}),
        error: ev.error,
        durationMs: ev.durationMs,
      };
      const tool = findTool(next, ev.callId);
      if (!tool) return appendTool(closeStreams(next), ev.callId, ev.turn, ev.name, fields);
      const approval = tool.approval?.state === 'pending' ? { ...tool.approval, state: unanswered(next) } : tool.approval;
      const question = tool.question?.state === 'pending' ? { question: { ...tool.question, state: unanswered(next) } } : {};
      return replaceItem(next, tool, { ...tool, ...fields, name: tool.name || ev.name, approval, ...question });
    }
    case 'notice': {
      if (ev.level === 'info' && ev.code !== 'compacted') {  // a divider of its own
        const note = { code: ev.code, message: ev.message };
        const folded = next.items.find((i): i is NotesItem => i.kind === 'notes' && i.turn === ev.turn);
        if (folded) return replaceItem(next, folded, { ...folded, notes: [...folded.notes, note] });
        const notes: NotesItem = { kind: 'notes', id: `i${next.nextId}`, turn: ev.turn, notes: [note] };
        return { ...next, items: [...next.items, notes], nextId: next.nextId + 1 };
      }
      const item: NoticeItem = { kind: 'notice', id: `i${next.nextId}`, level: ev.level, code: ev.code, message: ev.message };
      return { ...next, items: [...next.items, item], nextId: next.nextId + 1 };
    }
    case 'commandOutput': {
      const item: CommandItem = { kind: 'command', id: `i${next.nextId}`, command: ev.command, output: ev.output };
      const closed = closeStreams(next);
      return { ...closed, items: [...closed.items, item], nextId: next.nextId + 1 };
    }
    case 'contextUsage':
      return { ...next, context: { used: ev.usedTokens, window: ev.windowTokens, estimated: ev.estimated } };
    case 'plan':
      return { ...next, plan: { items: ev.items, explanation: ev.explanation ?? null } };
    case 'done':
      return endTurn(next, ev.turn, { status: ev.status, toolCalls: ev.toolCalls, usage: ev.usage, error: ev.error ?? null,
        ...(ev.resumable ? { resumable: true } : {}) });
    default:
      return assertNever(ev);
  }
}

/** Events a `task` sub-agent shows inside its call's card: its tool calls and notices (its words are its own: the
 *  answer is the call's output). */
const NESTED_TYPES = new Set<string>(['toolCallStart', 'toolCallDelta', 'toolCall', 'approval', 'toolResult', 'notice']);

/** An event of a sub-agent: reduced into the children of its `task` call's card, which gets a new identity so the
 *  renderer redraws it. */
function reduceNested(state: ChatState, ev: ChatEvent, parentCallId: string): ChatState {
  const parent = findTool(state, parentCallId);
  if (!parent || !NESTED_TYPES.has(ev.type)) return state;
  const inner = reduceEvent({ ...state, items: parent.children ?? [] }, { ...ev, parentCallId: null });
  return { ...replaceItem(state, parent, { ...parent, children: inner.items as ToolItem[] }), nextId: inner.nextId };
}

/** The plan's figures as the pinned checklist shows them: `2/5` done and the step in progress, if any. */
export function planProgress(plan: Plan | null | undefined): { done: number; total: number; current: number | null } | null {
  if (!plan?.items.length) return null;
  const current = plan.items.findIndex((item) => item.status === 'in_progress');
  return { done: plan.items.filter((item) => item.status === 'done').length, total: plan.items.length,
    current: current < 0 ? null : current };
}
