// The shape of the chat's view model: the items of the transcript, the state around them and the actions the
// reducer takes (sidecar events and a few local ones). The reducer is in index.ts, one module per area beside it.
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
  ProcessRow,
  ResultData,
  SessionEvent,
  SessionInfo,
  SessionUsage,
  ToolError,
  TurnStatus,
  Usage,
} from '../../protocol';
import type { SentImage } from '../images';
import type { ProcessView } from './processes';

export interface UserItem {
  kind: 'user';
  id: string;
  text: string;
  /** The labels of what the line had attached with `@` (`@src/app.py`, `@selection`). */
  mentions?: string[];
  /** The images it had (pasted, dropped); a replayed line knows only how many (`image 1`, …). */
  images?: SentImage[];
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
  settings: { model: string | null; trust: string | null; lens: string | null; worktree?: string | null };
  sessions: SessionInfo[];
  commands: CommandInfo[];
  sidecar: { status: SidecarStatus; message: string | null };
  /** The open session's background processes (the processes strip). */
  processes: ProcessView[];
}

export type LocalAction =
  /** A line sent; with `replaces`, in place of the exchange that turn ended (Edit & resend, Retry): it goes first. */
  /** `images`: those sent now; `imageCount`: a replayed line's (the log keeps no name or picture to show). */
  | { type: 'userMessage'; text: string; mentions?: string[]; images?: SentImage[]; imageCount?: number | null; replaces?: string }
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
  | { type: 'settingsChanged'; model?: string | null; trust?: string | null; lens?: string | null; worktree?: string | null }
  | { type: 'sidecarStatus'; status: SidecarStatus; message?: string | null }
  /** `sunwell/processes` of `session`: its processes as they are now. */
  | { type: 'processesListed'; session: string; processes: ProcessRow[] }
  /** The strip's Dismiss of an ended process. */
  | { type: 'processDismissed'; processId: number };

export type ChatAction = ChatEvent | LocalAction;
