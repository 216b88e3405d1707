// The chat's view model: a pure reducer from sidecar events (docs/events.md "Events") and a few local actions to the
// state the webview draws. The extension host runs it to keep the transcript of the open session; the webview runs
// the same reducer on the same actions, so both agree without sending the whole state on every delta. A stored
// session is rebuilt the same way, by replaying its events (`sunwell/session`) through this reducer. Unchanged
// items keep their identity, which is what lets the renderer redraw only what changed.
// The shape is in model.ts; each area reduces its own actions (turns, events, approvals, sessions, settings).
import type { SessionEvent } from '../../protocol';
import { reduceRequest } from './approvals';
import { isChatEvent, reduceEvent } from './events';
import { assertNever } from './items';
import type { ChatAction, ChatState } from './model';
import { reduceSession } from './sessions';
import { reduceSettings } from './settings';
import { reduceTurn } from './turns';

export * from './model';
export { pendingApprovals } from './approvals';
export { isChatEvent, planProgress } from './events';
export { findTool } from './items';
export { forStorage } from './sessions';
export { isBusy, lastExchange, undoableTurn, waitingForModel, type Exchange } from './turns';

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

export function reduce(state: ChatState, action: ChatAction): ChatState {
  if (isChatEvent(action)) return reduceEvent(state, action);
  switch (action.type) {
    case 'userMessage':
    case 'turnResumed':
    case 'stopRequested':
    case 'turnFinished':
      return reduceTurn(state, action);
    case 'approvalRequested':
    case 'approvalAnswered':
    case 'approvalExpired':
    case 'questionRequested':
    case 'questionAnswered':
    case 'questionExpired':
      return reduceRequest(state, action);
    case 'sessionLoaded':
      return replay(state, action.session, action.events);
    case 'newSession':
    case 'usageReported':
    case 'turnUndone':
    case 'sessionsListed':
      return reduceSession(state, action);
    case 'problem':
    case 'commandsListed':
    case 'settingsChanged':
    case 'sidecarStatus':
      return reduceSettings(state, action);
    default:
      return assertNever(action);
  }
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
