// Messages between the extension host and the chat webview, as tagged unions (STYLE.md 9). The webview starts
// with `ready`; the host answers with a `snapshot` of the transcript it keeps, then streams `action`s that both
// sides feed to the same reducer (common/state.ts).
import { Vocabulary, type Decision } from '../protocol';
import { isImageUpload, MAX_IMAGES, type ImageUpload } from './images';
import type { MentionRef, ResourceRef } from './mentions';
import type { ChatAction, ChatState } from './state';

export type PickTarget = 'model' | 'trust' | 'lens';

export type HostToWebview =
  | { type: 'snapshot'; state: ChatState }
  | { type: 'action'; action: ChatAction }
  | { type: 'focusInput' }
  /** A picker the chat opened has closed: focus goes back where it was in the chat (the chip), else the input. */
  | { type: 'refocus' }
  | { type: 'setDraft'; text: string }
  | { type: 'files'; files: string[]; resources?: ResourceRef[] };

export type WebviewToHost =
  | { type: 'ready' }
  /** `replaces`: Edit & resend, the turn whose exchange the line is sent in place of; `images`: pasted or dropped. */
  | { type: 'send'; text: string; mentions?: MentionRef[]; images?: ImageUpload[]; replaces?: string }
  | { type: 'stop' }
  | { type: 'approve'; callId: string; decision: Decision; note?: string }
  | { type: 'answer'; callId: string; answer: string | null }
  | { type: 'showDiff'; callId: string; path?: string }
  | { type: 'newSession' }
  | { type: 'openSession'; session: string }
  | { type: 'refreshSessions' }
  | { type: 'pick'; target: PickTarget }
  | { type: 'copy'; text: string }
  | { type: 'openLink'; href: string }
  | { type: 'installPythonPackage' }
  | { type: 'showLog' }
  | { type: 'retry' }
  | { type: 'resume' }
  | { type: 'undoTurn'; turn: string }
  | { type: 'setApiKey' }
  | { type: 'openSetting'; key: string }
  | { type: 'listFiles' }
  /** The processes strip: Stop, Open in browser (one of the process's ports), Dismiss (an ended one). */
  | { type: 'processStop'; processId: number }
  | { type: 'processOpen'; processId: number; port: number }
  | { type: 'processDismiss'; processId: number };

/** The string fields each message must carry (the webview is a browser page: check what it sends). */
const REQUIRED: Record<WebviewToHost['type'], readonly string[]> = {
  ready: [],
  send: ['text'],
  stop: [],
  approve: ['callId', 'decision'],
  answer: ['callId'],
  showDiff: ['callId'],
  newSession: [],
  openSession: ['session'],
  refreshSessions: [],
  pick: ['target'],
  copy: ['text'],
  openLink: ['href'],
  installPythonPackage: [],
  showLog: [],
  retry: [],
  resume: [],
  undoTurn: ['turn'],
  setApiKey: [],
  openSetting: ['key'],
  listFiles: [],
  processStop: [],
  processOpen: [],
  processDismiss: [],
};

/** The whole-number fields each message must carry, with their ranges. */
const NUMBERS: Partial<Record<WebviewToHost['type'], Record<string, [number, number]>>> = {
  processStop: { processId: [1, 2 ** 31] },
  processOpen: { processId: [1, 2 ** 31], port: [1, 65535] },
  processDismiss: { processId: [1, 2 ** 31] },
};
const inRange = (value: unknown, [low, high]: [number, number]) => Number.isInteger(value) && (value as number) >= low
  && (value as number) <= high;

const MENTION_KINDS = new Set(['file', 'selection', 'problems', 'terminal', 'resource']);
const optionalString = (value: unknown) => value === undefined || typeof value === 'string';

function isMentionList(value: unknown): boolean {
  return Array.isArray(value) && value.length <= 50 && value.every((m) => typeof m === 'object' && m !== null
    && MENTION_KINDS.has((m as MentionRef).kind) && typeof (m as MentionRef).label === 'string'
    && optionalString((m as MentionRef).path) && optionalString((m as MentionRef).server) && optionalString((m as MentionRef).uri));
}

const DECISIONS = new Set<string>(Vocabulary.Decision);
const PICK_TARGETS = new Set(['model', 'trust', 'lens']);

export function isWebviewMessage(value: unknown): value is WebviewToHost {
  if (typeof value !== 'object' || value === null) return false;
  const message = value as Record<string, unknown>;
  const fields = REQUIRED[message.type as WebviewToHost['type']];
  if (!fields || !Object.hasOwn(REQUIRED, message.type as string)) return false;
  if (!fields.every((f) => typeof message[f] === 'string')) return false;
  const numbers = NUMBERS[message.type as WebviewToHost['type']] ?? {};
  if (!Object.entries(numbers).every(([f, range]) => inRange(message[f], range))) return false;
  if (message.type === 'approve' && !DECISIONS.has(message.decision as string)) return false;
  if (message.type === 'approve' && message.note !== undefined && typeof message.note !== 'string') return false;
  if (message.type === 'answer' && message.answer !== null && typeof message.answer !== 'string') return false;
  if (message.type === 'pick' && !PICK_TARGETS.has(message.target as string)) return false;
  if (message.type === 'send' && message.mentions !== undefined && !isMentionList(message.mentions)) return false;
  if (message.type === 'send' && !optionalString(message.replaces)) return false;
  if (message.type === 'send' && message.images !== undefined
    && !(Array.isArray(message.images) && message.images.length <= MAX_IMAGES && message.images.every(isImageUpload))) return false;
  if (message.type === 'showDiff' && message.path !== undefined && typeof message.path !== 'string') return false;
  if (message.type === 'openSetting' && !/^sunwell\.[A-Za-z]+$/.test(message.key as string)) return false;
  return true;
}
