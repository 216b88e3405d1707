// Finding, adding and replacing transcript items without touching the others: an unchanged item keeps its identity,
// which is what lets the renderer redraw only what changed.
import type { ChatState, Item, ToolItem } from './model';

export function findTool(state: ChatState, callId: string): ToolItem | undefined {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === 'tool' && item.callId === callId) return item;
  }
  return undefined;
}

export function lastIndex(items: readonly Item[], match: (item: Item) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (match(items[i])) return i;
  return -1;
}

/** How a card nobody answered ends: stopped with its turn, or denied for want of an answer. */
export function unanswered(state: ChatState): 'stopped' | 'expired' {
  return state.turn?.stopping ? 'stopped' : 'expired';
}

export function closeStreams(state: ChatState): ChatState {
  if (!state.items.some((i) => (i.kind === 'assistant' || i.kind === 'thinking') && i.streaming)) return state;
  return {
    ...state,
    items: state.items.map((i) => ((i.kind === 'assistant' || i.kind === 'thinking') && i.streaming ? { ...i, streaming: false } : i)),
  };
}

export function appendTool(state: ChatState, callId: string, turn: string, name: string, fields: Partial<ToolItem>): ChatState {
  const tool: ToolItem = {
    kind: 'tool', id: `tool:${callId}`, callId, turn, name, argsText: '', arguments: null, raw: null,
    status: 'streaming', approval: null, decision: null, output: null, error: null, durationMs: null, ...fields,
  };
  return { ...state, items: [...state.items, tool] };
}

export function replaceItem<T extends Item>(state: ChatState, old: T, item: T): ChatState {
  return { ...state, items: state.items.map((i) => (i === old ? item : i)) };
}

export function pretty(value: unknown): string {
  return JSON.stringify(value ?? {}, null, 2);
}

export function assertNever(value: never): never {
  throw new Error(`unexpected action ${JSON.stringify(value)}`);
}
