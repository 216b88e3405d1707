import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChatEvent, SessionEvent } from '../src/protocol';
import { initialState, reduce, type ChatAction, type ChatState } from '../src/common/state';

export const ROOT = path.resolve(__dirname, '..', '..');

/** A stream the real engine printed (`sunwell run --json`, recorded by fixtures/record.py). */
export function recorded(name: string): ChatEvent[] {
  return readFileSync(path.join(__dirname, 'fixtures', `${name}.jsonl`), 'utf8')
    .split('\n').filter(Boolean).map((line) => JSON.parse(line) as ChatEvent);
}

/** The same session as `sunwell/session` replays it from the session log (`events`), recorded with it. */
export function replayed(name: string): SessionEvent[] {
  return readFileSync(path.join(__dirname, 'fixtures', `${name}.replay.jsonl`), 'utf8')
    .split('\n').filter(Boolean).map((line) => JSON.parse(line) as SessionEvent);
}

export function run(actions: ChatAction[], from: ChatState = initialState()): ChatState {
  return actions.reduce(reduce, from);
}

/** A user line followed by what the engine answered. */
export function turn(text: string, events: ChatEvent[], from: ChatState = initialState()): ChatState {
  return run([{ type: 'userMessage', text }, ...events], from);
}
