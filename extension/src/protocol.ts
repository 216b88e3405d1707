// The sidecar's protocol as the extension sees it. Everything wire-shaped, the shared words (trust levels,
// decisions, statuses) and their values come from protocol.generated.ts, made from the Python models by
// `npm run gen`; this module only adds the names the UI uses and what JSON-RPC itself defines.
import type { Event } from './protocol.generated';

export * from './protocol.generated';

export type ChatEvent = Event;

/** JSON-RPC RequestCancelled: how a cancelled `sunwell/chat` may be answered. */
export const REQUEST_CANCELLED = -32800;
