// Messages between the extension host and the chat webview, as tagged unions (STYLE.md 9). The webview starts
// with `ready`; the host answers with a `snapshot` of the transcript it keeps, then streams `action`s that both
// sides feed to the same reducer (common/state.ts).
import { Vocabulary, type Decision } from '../protocol';
import type { ChatAction, ChatState } from './state';

export type PickTarget = 'model' | 'trust' | 'lens';

export type HostToWebview =
  | { type: 'snapshot'; state: ChatState }
  | { type: 'action'; action: ChatAction }
  | { type: 'focusInput' }
  | { type: 'setDraft'; text: string };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'approve'; callId: string; decision: Decision }
  | { type: 'showDiff'; callId: string }
  | { type: 'newSession' }
  | { type: 'openSession'; session: string }
  | { type: 'refreshSessions' }
  | { type: 'pick'; target: PickTarget }
  | { type: 'copy'; text: string }
  | { type: 'openLink'; href: string }
  | { type: 'installPythonPackage' }
  | { type: 'showLog' };

/** The string fields each message must carry (the webview is a browser page: check what it sends). */
const REQUIRED: Record<WebviewToHost['type'], readonly string[]> = {
  ready: [],
  send: ['text'],
  stop: [],
  approve: ['callId', 'decision'],
  showDiff: ['callId'],
  newSession: [],
  openSession: ['session'],
  refreshSessions: [],
  pick: ['target'],
  copy: ['text'],
  openLink: ['href'],
  installPythonPackage: [],
  showLog: [],
};

const DECISIONS = new Set<string>(Vocabulary.Decision);
const PICK_TARGETS = new Set(['model', 'trust', 'lens']);

export function isWebviewMessage(value: unknown): value is WebviewToHost {
  if (typeof value !== 'object' || value === null) return false;
  const message = value as Record<string, unknown>;
  const fields = REQUIRED[message.type as WebviewToHost['type']];
  if (!fields || !Object.hasOwn(REQUIRED, message.type as string)) return false;
  if (!fields.every((f) => typeof message[f] === 'string')) return false;
  if (message.type === 'approve' && !DECISIONS.has(message.decision as string)) return false;
  if (message.type === 'pick' && !PICK_TARGETS.has(message.target as string)) return false;
  return true;
}
