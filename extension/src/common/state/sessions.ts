// The session around the transcript: a new one, its usage as the sidecar reports it, an undone turn, the list of
// stored sessions, and what of it is kept between window reloads.
import type { TurnUsage } from '../../protocol';
import { namesOnly } from '../images';
import { assertNever, replaceItem } from './items';
import type { ChatState, LocalAction, ShownUsage, TurnEndItem } from './model';

type SessionAction = Extract<LocalAction, { type: 'newSession' | 'usageReported' | 'turnUndone' | 'sessionsListed' }>;

export function reduceSession(state: ChatState, action: SessionAction): ChatState {
  switch (action.type) {
    case 'newSession':
      return { ...state, session: null, items: [], turn: null, usage: null, sessionUsage: null, context: null, plan: null,
        processes: [] };
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
    case 'sessionsListed':
      return { ...state, sessions: action.sessions };
    default:
      return assertNever(action);
  }
}

/**
 * The transcript as the extension stores it between window reloads: transient parts dropped (nothing runs in a
 * new window) and long tool outputs cut, so the workspace state stays small. A line's images keep their names only:
 * their bytes never enter the transcript, their thumbnails are for the window that sent them.
 */
export function forStorage(state: ChatState, maxOutput = 8000): ChatState {
  const cut = (text: string | null) =>
    text !== null && text.length > maxOutput ? `${text.slice(0, maxOutput)}\n… (${text.length - maxOutput} more characters)` : text;
  return {
    ...state,
    turn: null,
    sessions: [],
    commands: [],
    processes: [], // the sidecar's to tell: what ran in the last window was stopped with it
    items: state.items.map((item) => {
      if (item.kind === 'user' && item.images) return { ...item, images: namesOnly(item.images) };
      if (item.kind !== 'tool') return item;
      const approval = item.approval?.state === 'pending' ? { ...item.approval, state: 'expired' as const } : item.approval;
      const question = item.question?.state === 'pending' ? { question: { ...item.question, state: 'expired' as const } } : {};
      const children = item.children?.map((child) => ({ ...child, output: cut(child.output) }));
      const data = item.data?.kind === 'subagent' ? { data: { ...item.data, answer: cut(item.data.answer) ?? '' } } : {};
      return { ...item, output: cut(item.output), ...data, approval, ...question, ...(children ? { children } : {}) };
    }),
  };
}
