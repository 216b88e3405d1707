// The turn's own actions (a line sent, stopped, resumed, finished), how a turn ends, and what the view asks about
// the turn: is one running, does it wait for the model, which one Undo takes back, which exchange Retry replaces.
import type { TurnStatus, Usage } from '../../protocol';
import { assertNever, closeStreams, lastIndex } from './items';
import type { ChatState, Item, LocalAction, ToolItem, TurnEndItem, UserItem } from './model';

type TurnAction = Extract<LocalAction, { type: 'userMessage' | 'turnResumed' | 'stopRequested' | 'turnFinished' }>;

export function reduceTurn(state: ChatState, action: TurnAction): ChatState {
  switch (action.type) {
    case 'userMessage': {
      const images = action.images ?? Array.from({ length: action.imageCount ?? 0 }, (_, i) => ({ name: `image ${i + 1}` }));
      return {
        ...state,
        items: [...(action.replaces ? withoutExchange(state.items, action.replaces) : state.items),
          { kind: 'user', id: `i${state.nextId}`, text: action.text,
          ...(action.mentions?.length ? { mentions: action.mentions } : {}), ...(images.length ? { images } : {}) }],
        nextId: state.nextId + 1,
        turn: { id: null, stopping: false },
      };
    }
    case 'turnResumed': {
      const items = state.items.filter((i) => !(i.kind === 'turnEnd' && i.turn === action.turn));
      return { ...state, items, turn: { id: action.turn, stopping: false } };
    }
    case 'stopRequested':
      return state.turn ? { ...state, turn: { ...state.turn, stopping: true } } : state;
    case 'turnFinished': {
      let next = state;
      if (!next.session && action.result?.session) next = { ...next, session: action.result.session };
      if (!next.turn) return next; // the done event already closed the turn
      const turn = action.result?.turn ?? next.turn.id ?? '';
      return endTurn(next, turn, {
        status: action.result?.status ?? action.status,
        toolCalls: action.result?.toolCalls ?? 0,
        usage: action.result?.usage ?? null,
        error: action.result?.error ?? action.error ?? null,
      });
    }
    default:
      return assertNever(action);
  }
}

export function isBusy(state: ChatState): boolean {
  return state.turn !== null;
}

/**
 * The turn waits for the model: it runs, nothing streams, and no call is on its way, waiting for an answer or
 * running (before the first token, and between a tool's result and the model's next words).
 */
export function waitingForModel(state: ChatState): boolean {
  if (!state.turn || state.turn.stopping) return false;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === 'user') return true;
    if ((item.kind === 'assistant' || item.kind === 'thinking') && item.streaming) return false;
    if (item.kind === 'tool' && (item.status === 'streaming' || item.status === 'running' || item.approval?.state === 'pending')) return false;
    if (item.kind === 'command') return false;
  }
  return true;
}

/**
 * The turn whose file changes the Undo button takes back: the session's newest turn that ran a write, an edit or a
 * command and is not undone yet (`sunwell/undo` undoes the newest not-yet-undone turn, so only that one offers it).
 */
export function undoableTurn(state: ChatState): string | null {
  if (state.turn) return null;
  const changing = new Set(['write_file', 'edit_file', 'run_command']);
  const changed = new Set(state.items.filter((i): i is ToolItem => i.kind === 'tool' && changing.has(i.name) && i.status === 'ok')
    .map((i) => i.turn));
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === 'turnEnd' && changed.has(item.turn) && !item.undone) return item.turn;
  }
  return null;
}

/**
 * The transcript's last exchange, when nothing runs: the last line the user sent through the end of its turn. It is
 * what Edit & resend and Retry replace. `command`: the line was a `::command`, no turn of the conversation. `logged`:
 * the turn is in the session's log, so the sidecar can take the conversation back to before it (`replaceTurn`); a
 * command, or a turn that failed before it began (no model was asked), never reached the log or the model.
 */
export interface Exchange {
  user: UserItem;
  end: TurnEndItem;
  command: boolean;
  logged: boolean;
}

export function lastExchange(state: ChatState): Exchange | null {
  if (state.turn) return null;
  const start = lastIndex(state.items, (i) => i.kind === 'user');
  const end = lastIndex(state.items, (i) => i.kind === 'turnEnd');
  if (start < 0 || end < start) return null;
  const user = state.items[start] as UserItem;
  const last = state.items[end] as TurnEndItem;
  const command = state.items.slice(start, end).some((i) => i.kind === 'command');
  return { user, end: last, command, logged: !command && (last.status !== 'error' || !!last.resumable) };
}

/** The items without the exchange the turn `turn` ended: its user line through its end. */
function withoutExchange(items: Item[], turn: string): Item[] {
  const end = lastIndex(items, (i) => i.kind === 'turnEnd' && i.turn === turn);
  const start = end < 0 ? -1 : lastIndex(items.slice(0, end), (i) => i.kind === 'user');
  return start < 0 ? items : [...items.slice(0, start), ...items.slice(end + 1)];
}

/** The turn is over: streams stop, calls that never completed are marked, unanswered approvals expire. */
export function endTurn(state: ChatState, turn: string,
  end: { status: TurnStatus; toolCalls: number; usage: Usage | null; error: string | null; resumable?: boolean }): ChatState {
  const ended = (item: ToolItem): ToolItem => {
    let next = item.children?.length ? { ...item, children: item.children.map(ended) } : item;
    if (item.status === 'streaming') next = { ...next, status: 'incomplete' };
    else if (item.status === 'running' && end.status !== 'completed') {
      next = { ...next, status: 'error', error: { code: 'interrupted', message: 'The turn ended before this call finished.' } };
    }
    if (item.approval?.state === 'pending') {
      next = { ...next, approval: { ...item.approval, state: end.status === 'cancelled' ? 'stopped' : 'expired' } };
    }
    if (item.question?.state === 'pending') {
      next = { ...next, question: { ...item.question, state: end.status === 'cancelled' ? 'stopped' : 'expired' } };
    }
    return next;
  };
  const items = closeStreams(state).items.map((item) => (item.kind === 'tool' ? ended(item) : item));
  const endItem: TurnEndItem = { kind: 'turnEnd', id: `i${state.nextId}`, turn, ...end };
  return { ...state, items: [...items, endItem], nextId: state.nextId + 1, turn: null, usage: end.usage ?? state.usage };
}

/**
 * What Copy under a finished turn puts on the clipboard: the turn's answer as the model wrote it (markdown), its
 * paragraphs between tool calls joined; thinking, cards and notes left out. Null while it streams or when it said
 * nothing.
 */
export function answerOf(state: ChatState, turn: string): string | null {
  const parts = state.items.filter((i): i is Extract<Item, { kind: 'assistant' }> => i.kind === 'assistant' && i.turn === turn);
  if (parts.some((p) => p.streaming)) return null;
  const text = parts.map((p) => p.text.trim()).filter(Boolean).join('\n\n');
  return text || null;
}
