// What a diff editor of a preview shows: the two sides of a write, or of one file of a command's effects.
import type { Preview } from '../protocol';

/** The two sides of a preview's file: a write's, or one file of a command's effects (none for a binary file). */
export function fileSides(preview: Preview | undefined, file: string | null):
  { path: string; before: string | null; after: string | null } | undefined {
  if (preview?.kind === 'diff') return { path: preview.path, before: preview.before, after: preview.after };
  if (preview?.kind !== 'effects' || file === null) return undefined;
  const change = preview.changes.find((c) => c.path === file);
  return change && !change.binary ? { path: change.path, before: change.before, after: change.after } : undefined;
}
