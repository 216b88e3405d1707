// Worktree sessions (`sunwell/worktrees`) as the extension shows them: the name a new one gets from its first line,
// the state a row shows, and the files its review opens.
import type { WorktreeRow } from '../protocol';

/** The engine's rule for a name (tools/workspace/worktrees.py NAME_PATTERN). */
export const WORKTREE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

/** A name from the first words of the line (`fix-the-parser`), numbered when taken: as the engine names one. The
 *  extension names it itself, since a name the chat sends that exists already continues that session. */
export function worktreeNameFor(line: string, taken: ReadonlySet<string>): string {
  const words = (line.toLowerCase().match(/[a-z0-9]+/g) ?? []).slice(0, 4);
  const stem = words.join('-').slice(0, 40).replace(/^-+|-+$/g, '') || 'session';
  let name = stem;
  for (let n = 2; taken.has(name); n++) name = `${stem}-${n}`;
  return name;
}

export type WorktreeStateLabel = WorktreeRow['state'] | 'waiting for approval';

/** A running session whose approval waits for the person (`waiting`: the worktrees with one pending) says so. By
 *  name: a first turn's row names its session only once the turn has ended. */
export function stateLabel(row: WorktreeRow, waiting: ReadonlySet<string>): WorktreeStateLabel {
  return row.state === 'running' && waiting.has(row.name) ? 'waiting for approval' : row.state;
}

export interface ChangedFile {
  /** git's letter: A added, M modified, D deleted, R renamed, C copied, T type changed. */
  status: string;
  path: string;
  /** Its path on the base side; null when it is new there. */
  oldPath: string | null;
}

/** The files of `git diff --name-status -z BASE BRANCH`. */
export function changedFiles(nameStatus: string): ChangedFile[] {
  const fields = nameStatus.split('\0');
  const files: ChangedFile[] = [];
  for (let i = 0; i + 1 < fields.length && fields[i];) {
    const status = fields[i][0];
    if (status === 'R' || status === 'C') {
      files.push({ status, oldPath: fields[i + 1], path: fields[i + 2] });
      i += 3;
    } else {
      files.push({ status, path: fields[i + 1], oldPath: status === 'A' ? null : fields[i + 1] });
      i += 2;
    }
  }
  return files;
}
