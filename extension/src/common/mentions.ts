// Context mentions in the chat input: `@` opens a picker of workspace files (fuzzy) and of what only the editor
// knows (@selection, @problems, @terminal); a choice becomes a removable chip that is sent with the line. Pure
// helpers for the webview's picker; the host turns the chips into the sidecar's `mentions` (chatController.ts).
import type { Mention } from '../protocol';

export type MentionKind = Mention['kind'];

/** A chip in the input: what the user picked, before the host fills in what it stands for. */
export interface MentionRef {
  kind: MentionKind;
  label: string;
  /** A file's workspace-relative path. */
  path?: string;
  /** A resource (`@SERVER:URI`): its MCP server and URI. */
  server?: string;
  uri?: string;
}

/** An MCP server's resource, as `sunwell/commands` lists it for the picker. */
export interface ResourceRef {
  server: string;
  uri: string;
  name: string;
}

export const SPECIAL_MENTIONS: readonly (MentionRef & { description: string })[] = [
  { kind: 'selection', label: '@selection', description: 'The active editor’s selection, with its file and lines' },
  { kind: 'problems', label: '@problems', description: 'The problems (diagnostics) of the workspace' },
  { kind: 'terminal', label: '@terminal', description: 'The last command and output of the active terminal' },
];

export interface MentionContext {
  /** What was typed after `@`. */
  query: string;
  /** The range of `@query` in the text, removed when a mention is picked. */
  start: number;
  end: number;
}

/** When the caret is in an `@word` that starts a word (not `me@example.com`), what to look up. */
/** What a chip shows: a file by its name (its path is the chip's title), anything else by its label. */
export function chipText(label: string): string {
  const special = SPECIAL_MENTIONS.some((m) => m.label === label) || /^@[\w.-]+:/.test(label);  // @server:uri
  return special ? label : label.slice(label.lastIndexOf('/') + 1).replace(/^@/, '');
}

/**
 * The chips a sent line had, from the labels its transcript kept (`@src/app.py`, `@selection`, `@docs:file:///a`):
 * what Edit & resend puts back in the input and Retry sends again. The host reads them anew when the line goes.
 */
export function mentionsFromLabels(labels: readonly string[]): MentionRef[] {
  return labels.map((label): MentionRef => {
    const special = SPECIAL_MENTIONS.find((m) => m.label === label);
    if (special) return { kind: special.kind, label };
    const resource = /^@([\w.-]+):(.+)$/.exec(label);
    if (resource) return { kind: 'resource', label, server: resource[1], uri: resource[2] };
    return { kind: 'file', label, path: label.replace(/^@/, '') };
  });
}

export function mentionContext(text: string, caret: number): MentionContext | null {
  const before = text.slice(0, caret);
  const m = /(?:^|\s)@([\w./:-]*)$/.exec(before);
  if (!m) return null;
  const start = caret - m[1].length - 1;
  let end = caret;
  while (end < text.length && /[\w./:-]/.test(text[end])) end++;
  return { query: m[1], start, end };
}

/**
 * How well `query` matches `path`, fuzzily (its characters in order, case-insensitive), or null when it does not:
 * higher for matches in the file name, at word starts and in runs; shorter paths first among equals.
 */
export function fuzzyScore(query: string, path: string): number | null {
  if (!query) return -path.length / 1000;
  const q = query.toLowerCase();
  const p = path.toLowerCase();
  const nameStart = p.lastIndexOf('/') + 1;
  let score = 0;
  let at = -1;
  let run = 0;
  for (const ch of q) {
    const found = p.indexOf(ch, at + 1);
    if (found < 0) return null;
    run = found === at + 1 ? run + 1 : 0;
    score += 1 + run * 2;
    if (found >= nameStart) score += 2;
    if (found === 0 || /[/._-]/.test(p[found - 1])) score += 3;
    at = found;
  }
  if (p.slice(nameStart).startsWith(q)) score += 10;
  return score - path.length / 1000;
}

/** The picker's entries for `query`: the special mentions that match, then the best files (at most `limit`). */
export function matchMentions(query: string, files: readonly string[], limit = 30,
  resources: readonly ResourceRef[] = []): (MentionRef & { description?: string })[] {
  const special = SPECIAL_MENTIONS.filter((m) => m.label.slice(1).startsWith(query.toLowerCase()));
  const scored: { path: string; score: number }[] = [];
  for (const path of files) {
    const score = fuzzyScore(query, path);
    if (score !== null) scored.push({ path, score });
  }
  scored.sort((a, b) => b.score - a.score);
  const fileRefs = scored.slice(0, limit).map(({ path }) => ({ kind: 'file' as const, label: `@${path}`, path }));
  const resourceRefs = resources.filter((r) => fuzzyScore(query, `${r.server}:${r.uri}`) !== null).slice(0, limit)
    .map((r) => ({ kind: 'resource' as const, label: `@${r.server}:${r.uri}`, server: r.server, uri: r.uri,
      description: `${r.name} (MCP resource of ${r.server})` }));
  return [...special, ...resourceRefs, ...fileRefs];
}

/** The text once a mention is picked: its `@query` taken out (the chip stands for it). */
export function removeMentionQuery(text: string, ctx: MentionContext): { text: string; caret: number } {
  const rest = text.slice(ctx.end).replace(/^ /, '');
  return { text: text.slice(0, ctx.start) + rest, caret: ctx.start };
}

/** The workspace's problems as lines a model reads: `path:line:col: severity: message`. */
export function formatProblems(problems: { path: string; line: number; column: number; severity: string; message: string }[],
  limit = 200): string {
  if (!problems.length) return 'No problems in the workspace.';
  const lines = problems.slice(0, limit).map((p) => `${p.path}:${p.line}:${p.column}: ${p.severity}: ${p.message.replace(/\s+/g, ' ')}`);
  return lines.join('\n') + (problems.length > limit ? `\n… and ${problems.length - limit} more` : '');
}
