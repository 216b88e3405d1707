// Messages between the extension host and the chat webview, as tagged unions (STYLE.md 9). The webview starts
// with `ready` (carrying what it saved with setState); the host answers with a `snapshot`, then streams `action`s
// that both sides feed to the same reducer (common/state.ts).
import type { Decision } from '../protocol';
import type { ChatAction, ChatState } from './state';

export type PickTarget = 'model' | 'trust' | 'lens';

export type HostToWebview =
  | { type: 'snapshot'; state: ChatState }
  | { type: 'action'; action: ChatAction }
  | { type: 'focusInput' }
  | { type: 'setDraft'; text: string };

export type WebviewToHost =
  | { type: 'ready'; saved: ChatState | null }
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

const WEBVIEW_MESSAGE_TYPES = new Set<WebviewToHost['type']>([
  'ready', 'send', 'stop', 'approve', 'showDiff', 'newSession', 'openSession', 'refreshSessions', 'pick', 'copy',
  'openLink', 'installPythonPackage', 'showLog',
]);

/** The webview is a browser page: check what it sends before acting on it. */
export function isWebviewMessage(value: unknown): value is WebviewToHost {
  return typeof value === 'object' && value !== null && WEBVIEW_MESSAGE_TYPES.has((value as { type: WebviewToHost['type'] }).type);
}
