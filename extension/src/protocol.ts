// The sidecar's protocol as the extension sees it. Everything wire-shaped comes from protocol.generated.ts (made
// from the Python models by `npm run gen`); this module only narrows what Python leaves open (the approval
// preview is a plain dict there) and names the unions the UI switches on.
import type { ApproveParams as GeneratedApproveParams, Event } from './protocol.generated';

export * from './protocol.generated';

export type ChatEvent = Event;
export type EventType = Event['type'];
export type Decision = 'allow' | 'deny' | 'allowSession';
export type TrustLevel = 'discovery' | 'read_only' | 'workspace' | 'shell' | 'full';
export const TRUST_LEVELS: readonly TrustLevel[] = ['discovery', 'read_only', 'workspace', 'shell', 'full'];
export type TurnStatus = 'completed' | 'cancelled' | 'limitReached' | 'error';

/** PROTOCOL.md: `{kind: "diff", path, before, after}` with `before` null for a new file. */
export interface DiffPreview {
  kind: 'diff';
  path: string;
  before: string | null;
  after: string;
}

/** PROTOCOL.md: `{kind: "command", command, cwd}`. */
export interface CommandPreview {
  kind: 'command';
  command: string;
  cwd: string;
}

/** A preview of a kind this client does not know yet is shown as its raw JSON. */
export interface OtherPreview {
  kind: string;
  [key: string]: unknown;
}

export type Preview = DiffPreview | CommandPreview | OtherPreview;

export interface ApproveParams extends Omit<GeneratedApproveParams, 'preview'> {
  preview: Preview;
}

export function isDiffPreview(p: Preview | null | undefined): p is DiffPreview {
  return !!p && p.kind === 'diff' && typeof (p as DiffPreview).after === 'string';
}

export function isCommandPreview(p: Preview | null | undefined): p is CommandPreview {
  return !!p && p.kind === 'command' && typeof (p as CommandPreview).command === 'string';
}

/** JSON-RPC RequestCancelled: how a cancelled `sunwell/chat` may be answered. */
export const REQUEST_CANCELLED = -32800;
