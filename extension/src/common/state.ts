// The chat's view model: a pure reducer from sidecar events (PROTOCOL.md "Events") and a few local actions to the
// state the webview draws. The extension host runs it to keep the transcript of the open session; the webview runs
// the same reducer on the same actions, so both agree without sending the whole state on every delta. A stored
// session is rebuilt the same way, by replaying its events (`sunwell/session`) through this reducer. Unchanged
// items keep their identity, which is what lets the renderer redraw only what changed.
import type {
  ApprovalRequest,
  AskParams,
  ChatEvent,
  ChatResult,
  CommandInfo,
  DecidedBy,
  Decision,
  NoticeLevel,
  PlanItem,
  Preview,
  ResultData,
  SessionEvent,
  SessionInfo,
  SessionUsage,
  ToolError,
  TurnStatus,
  TurnUsage,
  Usage,
} from '../protocol';

export interface UserItem {
  kind: 'user';
  id: string;
  text: string;
  /** The labels of what the line had attached with `@` (`@src/app.py`, `@selection`). */
  mentions?: string[];
}

export interface AssistantItem {
  kind: 'assistant';
  id: string;
  turn: string;
  text: string;
  streaming: boolean;
}

export interface ThinkingItem {
  kind: 'thinking';
  id: string;
  turn: string;
  text: string;
  streaming: boolean;
}

export interface ApprovalCard {
  risk: ApprovalRequest['risk'];
  preview: Preview;
  /** expired: no answer in time (denied by policy); stopped: the turn was stopped while it waited. */
  state: 'pending' | 'answered' | 'expired' | 'stopped';
  decision: Decision | null;
  by: DecidedBy | null;
}

/** `ask_user`'s question, when the sidecar asked this client (`sunwell/ask`). */
export interface QuestionCard {
  question: string;
  options: string[];
  /** expired: no answer in time; stopped: the turn was stopped while it waited. */
  state: 'pending' | 'answered' | 'expired' | 'stopped';
  /** What the person answered; null when they declined (or never answered). */
  answer: string | null;
}

/**
 * streaming: arguments are arriving; running: the call is complete and is being validated, approved or executed;
 * ok / error: its result came; incomplete: the turn ended before the call was complete (it was never executed).
 */
export type ToolStatus = 'streaming' | 'running' | 'ok' | 'error' | 'incomplete';

export interface ToolItem {
  kind: 'tool';
  id: string;
  callId: string;
  turn: string;
  name: string;
  argsText: string;
  arguments: Record<string, unknown> | null;
  raw: string | null;
  status: ToolStatus;
  /** The approval request, when the sidecar asked this client. */
  approval: ApprovalCard | null;
  /** How the call was approved, from the `approval` event (also when a policy decided and nobody was asked). */
  decision: { decision: Decision; by: DecidedBy } | null;
  output: string | null;
  /** What the tool gave back for its card (a page, search hits, an API's answer, a sub-agent's), when it gave any. */
  data?: ResultData | null;
  error: ToolError | null;
  durationMs: number | null;
  /** `ask_user`: the question card. */
  question?: QuestionCard | null;
  /** `task`: the sub-agent's own tool calls (its events carry this call's id as `parentCallId`). */
  children?: ToolItem[];
}

export interface NoticeItem {
  kind: 'notice';
  id: string;
  level: NoticeLevel;
  code: string;
  message: string;
}

/** A turn's info notices, folded into one quiet line that opens (warnings and errors stay notices of their own). */
export interface NotesItem {
  kind: 'notes';
  id: string;
  turn: string;
  notes: { code: string; message: string }[];
}

export interface CommandItem {
  kind: 'command';
  id: string;
  command: string;
  output: string;
}

export interface TurnEndItem {
  kind: 'turnEnd';
  id: string;
  turn: string;
  status: TurnStatus;
  toolCalls: number;
  usage: ShownUsage | null;
  error: string | null;
  /** The user undid this turn's file changes from its Undo button. */
  undone?: boolean;
  /** `sunwell/resume` takes it up: it was interrupted (the sidecar died) or ended in a provider error. */
  resumable?: boolean;
}

/** Tokens as the chat shows them: the server's count, or Sunwell's estimate when the server sent none. */
export interface ShownUsage extends Usage {
  estimated?: boolean;
  /** USD at the model's price (`prices:`); absent when the model has no price. */
  cost?: number | null;
}

export type Item = UserItem | AssistantItem | ThinkingItem | ToolItem | NoticeItem | NotesItem | CommandItem | TurnEndItem;

export interface ContextMeter {
  used: number;
  window: number;
  /** No usage from the server: `used` is Sunwell's estimate. */
  estimated: boolean;
}

/** The agent's checklist, as `update_plan` last set it in this session (the `plan` event). */
export interface Plan {
  items: PlanItem[];
  explanation: string | null;
}

export type SidecarStatus = 'starting' | 'ready' | 'stopped' | 'notInstalled' | 'error';

export interface ChatState {
  version: 1;
  /** null until the sidecar names the session of the first turn. */
  session: string | null;
  items: Item[];
  nextId: number;
  /** The running turn; `id` is known from its first event. */
  turn: { id: string | null; stopping: boolean } | null;
  /** Usage of the last finished turn. */
  usage: ShownUsage | null;
  /** Tokens and cost of the whole session (`sunwell/usage`, after each turn). */
  sessionUsage: SessionUsage | null;
  /** How full the model's context window is, after the last model request (`contextUsage`). */
  context: ContextMeter | null;
  /** The session's latest plan (live, or from a replay of a stored session); null before its first. */
  plan: Plan | null;
  settings: { model: string | null; trust: string | null; lens: string | null };
  sessions: SessionInfo[];
  commands: CommandInfo[];
  sidecar: { status: SidecarStatus; message: string | null };
}

export type LocalAction =
  /** A line sent; with `replaces`, in place of the exchange that turn ended (Edit & resend, Retry): it goes first. */
  | { type: 'userMessage'; text: string; mentions?: string[]; replaces?: string }
  | { type: 'stopRequested' }
  /** Resume: the turn runs again from where its log ends; its end goes, its next events follow what it showed. */
  | { type: 'turnResumed'; turn: string }
  | { type: 'turnFinished'; status: TurnStatus; result?: ChatResult; error?: string }
  | { type: 'approvalRequested'; params: ApprovalRequest }
  | { type: 'approvalAnswered'; callId: string; decision: Decision }
  | { type: 'approvalExpired'; callId: string }
  | { type: 'questionRequested'; params: AskParams }
  | { type: 'questionAnswered'; callId: string; answer: string | null }
  | { type: 'questionExpired'; callId: string }
  | { type: 'sessionLoaded'; session: string; events: SessionEvent[] }
  | { type: 'newSession' }
  | { type: 'problem'; code: string; message: string }
  | { type: 'sessionsListed'; sessions: SessionInfo[] }
  | { type: 'usageReported'; session: string; usage: SessionUsage }
  | { type: 'turnUndone'; turn: string }
  | { type: 'commandsListed'; commands: CommandInfo[] }
  | { type: 'settingsChanged'; model?: string | null; trust?: string | null; lens?: string | null }
  | { type: 'sidecarStatus'; status: SidecarStatus; message?: string | null };

export type ChatAction = ChatEvent | LocalAction;

export function initialState(): ChatState {
  return {
    version: 1,
    session: null,
    items: [],
    nextId: 0,
    turn: null,
    usage: null,
    sessionUsage: null,
    context: null,
    plan: null,
    settings: { model: null, trust: null, lens: null },
    sessions: [],
    commands: [],
    sidecar: { status: 'starting', message: null },
  };
}

export function isBusy(state: ChatState): boolean {
  return state.turn !== null;
}

export function pendingApprovals(state: ChatState): ToolItem[] {
  return state.items.filter((i): i is ToolItem => i.kind === 'tool' && i.approval?.state === 'pending');
}

export function findTool(state: ChatState, callId: string): ToolItem | undefined {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === 'tool' && item.callId === callId) return item;
  }
  return undefined;
}

const EVENT_TYPES = new Set<string>([
  'text', 'thinking', 'toolCallStart', 'toolCallDelta', 'toolCall', 'approval', 'toolResult', 'notice',
  'commandOutput', 'contextUsage', 'plan', 'done',
]);

export function isChatEvent(action: ChatAction): action is ChatEvent {
  return EVENT_TYPES.has(action.type);
}

export function reduce(state: ChatState, action: ChatAction): ChatState {
  if (isChatEvent(action)) return reduceEvent(state, action);
  switch (action.type) {
    case 'userMessage':
      return {
        ...state,
        items: [...(action.replaces ? withoutExchange(state.items, action.replaces) : state.items),
          { kind: 'user', id: `i${state.nextId}`, text: action.text,
          ...(action.mentions?.length ? { mentions: action.mentions } : {}) }],
        nextId: state.nextId + 1,
        turn: { id: null, stopping: false },
      };
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
    case 'approvalRequested': {
      const p = action.params;
      if (!state.turn || (state.session && p.session && p.session !== state.session)) return state;
      const card: ApprovalCard = { risk: p.risk, preview: p.preview, state: 'pending', decision: null, by: null };
      const existing = findTool(state, p.callId);
      if (existing) return replaceItem(state, existing, { ...existing, approval: card, arguments: p.arguments });
      return appendTool(state, p.callId, p.turn, p.name, { arguments: p.arguments, status: 'running', approval: card,
        argsText: pretty(p.arguments) });
    }
    case 'approvalAnswered':
    case 'approvalExpired': {
      const tool = findTool(state, action.callId);
      if (!tool?.approval || tool.approval.state !== 'pending') return state;
      const approval: ApprovalCard = action.type === 'approvalAnswered'
        ? { ...tool.approval, state: 'answered', decision: action.decision, by: 'user' }
        : { ...tool.approval, state: unanswered(state), decision: 'deny', by: 'policy' };
      return replaceItem(state, tool, { ...tool, approval });
    }
    case 'questionRequested': {
      const p = action.params;
      if (!state.turn || (state.session && p.session && p.session !== state.session)) return state;
      const question: QuestionCard = { question: p.question, options: p.options ?? [], state: 'pending', answer: null };
      const existing = findTool(state, p.callId);
      if (existing) return replaceItem(state, existing, { ...existing, question });
      return appendTool(state, p.callId, p.turn, 'ask_user', { status: 'running', question,
        arguments: { question: p.question, options: p.options }, argsText: pretty({ question: p.question, options: p.options }) });
    }
    case 'questionAnswered':
    case 'questionExpired': {
      const tool = findTool(state, action.callId);
      if (!tool?.question || tool.question.state !== 'pending') return state;
      const question: QuestionCard = action.type === 'questionAnswered'
        ? { ...tool.question, state: 'answered', answer: action.answer }
        : { ...tool.question, state: unanswered(state) };
      return replaceItem(state, tool, { ...tool, question });
    }
    case 'sessionLoaded':
      return replay(state, action.session, action.events);
    case 'newSession':
      return { ...state, session: null, items: [], turn: null, usage: null, sessionUsage: null, context: null, plan: null };
    case 'usageReported': {
      if (action.session !== state.session) return state;
      const byTurn = new Map(action.usage.turns?.map((t) => [t.turn, t]) ?? []);
      const shown = (t: TurnUsage): ShownUsage => ({ inputTokens: t.inputTokens, outputTokens: t.outputTokens,
        cacheReadTokens: t.cacheReadTokens ?? 0, cacheWriteTokens: t.cacheWriteTokens ?? 0, estimated: t.estimated,
        cost: t.cost ?? null });
      const items = state.items.map((item) => {
        const reported = item.kind === 'turnEnd' ? byTurn.get(item.turn) : undefined;
        return reported && item.kind === 'turnEnd' ? { ...item, usage: shown(reported) } : item;
      });
      const last = action.usage.turns?.at(-1);
      return { ...state, items, sessionUsage: action.usage, usage: last ? shown(last) : state.usage };
    }
    case 'turnUndone': {
      const end = state.items.find((i): i is TurnEndItem => i.kind === 'turnEnd' && i.turn === action.turn);
      return end ? replaceItem(state, end, { ...end, undone: true }) : state;
    }
    case 'problem': {
      const item: NoticeItem = { kind: 'notice', id: `i${state.nextId}`, level: 'warning', code: action.code, message: action.message };
      return { ...state, items: [...state.items, item], nextId: state.nextId + 1 };
    }
    case 'sessionsListed':
      return { ...state, sessions: action.sessions };
    case 'commandsListed':
      return { ...state, commands: action.commands };
    case 'settingsChanged': {
      const { type: _type, ...changes } = action;
      return { ...state, settings: { ...state.settings, ...changes } };
    }
    case 'sidecarStatus':
      return { ...state, sidecar: { status: action.status, message: action.message ?? null } };
    default:
      return assertNever(action);
  }
}

function reduceEvent(state: ChatState, ev: ChatEvent): ChatState {
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

function lastIndex(items: readonly Item[], match: (item: Item) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (match(items[i])) return i;
  return -1;
}

/** How a card nobody answered ends: stopped with its turn, or denied for want of an answer. */
function unanswered(state: ChatState): 'stopped' | 'expired' {
  return state.turn?.stopping ? 'stopped' : 'expired';
}

/** The turn is over: streams stop, calls that never completed are marked, unanswered approvals expire. */
function endTurn(state: ChatState, turn: string,
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

function closeStreams(state: ChatState): ChatState {
  if (!state.items.some((i) => (i.kind === 'assistant' || i.kind === 'thinking') && i.streaming)) return state;
  return {
    ...state,
    items: state.items.map((i) => ((i.kind === 'assistant' || i.kind === 'thinking') && i.streaming ? { ...i, streaming: false } : i)),
  };
}

function appendTool(state: ChatState, callId: string, turn: string, name: string, fields: Partial<ToolItem>): ChatState {
  const tool: ToolItem = {
    kind: 'tool', id: `tool:${callId}`, callId, turn, name, argsText: '', arguments: null, raw: null,
    status: 'streaming', approval: null, decision: null, output: null, error: null, durationMs: null, ...fields,
  };
  return { ...state, items: [...state.items, tool] };
}

function replaceItem<T extends Item>(state: ChatState, old: T, item: T): ChatState {
  return { ...state, items: state.items.map((i) => (i === old ? item : i)) };
}

function pretty(value: unknown): string {
  return JSON.stringify(value ?? {}, null, 2);
}

/**
 * A stored session's transcript: its events (`sunwell/session`: each turn a `userMessage`, what the log kept, one
 * `done`) through the same reducer as the live chat.
 */
export function replay(state: ChatState, session: string, events: readonly SessionEvent[]): ChatState {
  let next: ChatState = { ...state, session, items: [], turn: null, usage: null, sessionUsage: null, context: null, plan: null };
  for (const event of events) next = reduce(next, event);
  // The sidecar ends every turn it replays; should one be open, the chat must not stay busy.
  return next.turn ? reduce(next, { type: 'turnFinished', status: 'error' }) : next;
}

/**
 * The transcript as the extension stores it between window reloads: transient parts dropped (nothing runs in a
 * new window) and long tool outputs cut, so the workspace state stays small.
 */
export function forStorage(state: ChatState, maxOutput = 8000): ChatState {
  const cut = (text: string | null) =>
    text !== null && text.length > maxOutput ? `${text.slice(0, maxOutput)}\n… (${text.length - maxOutput} more characters)` : text;
  return {
    ...state,
    turn: null,
    sessions: [],
    commands: [],
    items: state.items.map((item) => {
      if (item.kind !== 'tool') return item;
      const approval = item.approval?.state === 'pending' ? { ...item.approval, state: 'expired' as const } : item.approval;
      const question = item.question?.state === 'pending' ? { question: { ...item.question, state: 'expired' as const } } : {};
      const children = item.children?.map((child) => ({ ...child, output: cut(child.output) }));
      const data = item.data?.kind === 'subagent' ? { data: { ...item.data, answer: cut(item.data.answer) ?? '' } } : {};
      return { ...item, output: cut(item.output), ...data, approval, ...question, ...(children ? { children } : {}) };
    }),
  };
}

function assertNever(value: never): never {
  throw new Error(`unexpected action ${JSON.stringify(value)}`);
}
