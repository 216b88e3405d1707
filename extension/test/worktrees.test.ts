// Worktree sessions on the extension side: a name from the first line, the state a row shows, the files of a review.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changedFiles, stateLabel, worktreeNameFor } from '../src/common/worktrees';
import type { WorktreeRow } from '../src/protocol';

const row = (over: Partial<WorktreeRow> = {}): WorktreeRow => ({ name: 'a', branch: 'sunwell/a', base: 'main',
  path: '/tmp/a', session: 's1', state: 'running', ...over });

describe('worktreeNameFor', () => {
  it('takes the first words of the first line, as the engine does, numbered when taken', () => {
    assert.equal(worktreeNameFor('Fix the Parser, please now\nmore', new Set()), 'fix-the-parser-please');
    assert.equal(worktreeNameFor('Fix the parser', new Set(['fix-the-parser'])), 'fix-the-parser-2');
    assert.equal(worktreeNameFor('Fix the parser', new Set(['fix-the-parser', 'fix-the-parser-2'])), 'fix-the-parser-3');
  });

  it('a line with no word gives "session"; the name keeps within the engine\'s rule', () => {
    assert.equal(worktreeNameFor('?!', new Set()), 'session');
    const long = worktreeNameFor('a'.repeat(100), new Set());
    assert.match(long, /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/);
  });
});

describe('stateLabel', () => {
  it('a running session with an approval pending says it waits for one, known by its worktree\'s name', () => {
    assert.equal(stateLabel(row(), new Set(['a'])), 'waiting for approval');
    assert.equal(stateLabel(row({ session: null }), new Set(['a'])), 'waiting for approval'); // a first turn
    assert.equal(stateLabel(row(), new Set(['s1'])), 'running');
    assert.equal(stateLabel(row(), new Set(['b'])), 'running');
    assert.equal(stateLabel(row({ state: 'done' }), new Set(['a'])), 'done');
    assert.equal(stateLabel(row({ state: 'interrupted' }), new Set()), 'interrupted');
  });
});

describe('changedFiles', () => {
  it('reads `git diff --name-status -z`: added, modified, deleted, renamed', () => {
    const out = 'A\0new.txt\0M\0src/a b.py\0D\0old.md\0R100\0from.txt\0to.txt\0';
    assert.deepEqual(changedFiles(out), [
      { status: 'A', path: 'new.txt', oldPath: null },
      { status: 'M', path: 'src/a b.py', oldPath: 'src/a b.py' },
      { status: 'D', path: 'old.md', oldPath: 'old.md' },
      { status: 'R', path: 'to.txt', oldPath: 'from.txt' },
    ]);
    assert.deepEqual(changedFiles(''), []);
  });
});
