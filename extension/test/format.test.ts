import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffStat, formatContext, formatDuration, formatUsage, relativeTime, toolTarget, toolTitle, undoSummary } from '../src/common/format';

describe('display helpers', () => {
  it('show the context meter as a share of the window, marked when estimated', () => {
    assert.equal(formatContext(null), null);
    assert.equal(formatContext({ used: 10, window: 0, estimated: false }), null);
    const exact = formatContext({ used: 1536, window: 4096, estimated: false })!;
    assert.deepEqual([exact.text, exact.percent], ['38% of 4.1k', 38]);
    const estimate = formatContext({ used: 9000, window: 8192, estimated: true })!;
    assert.deepEqual([estimate.text, estimate.percent], ['≈100% of 8.2k', 100]);
    assert.match(estimate.title, /estimated/);
  });

  it('name a call by its path or command, also while its arguments stream', () => {
    assert.equal(toolTarget('run_command', { command: 'npm   test\n--watch' }, ''), 'npm test --watch');
    assert.equal(toolTarget('read_file', null, '{"path": "src/a.py", "off'), 'src/a.py');
    assert.equal(toolTarget('read_file', null, '{"path": "src/a'), '');
    assert.equal(toolTitle('write_file'), 'Write');
    assert.equal(toolTitle('my_skill'), 'my_skill');
  });

  it('format durations, usage and ages', () => {
    assert.equal(formatDuration(12), '12 ms');
    assert.equal(formatDuration(1530), '1.5 s');
    assert.equal(formatDuration(125_000), '2 min 5 s');
    assert.equal(formatUsage({ inputTokens: 1234, outputTokens: 56 }), '1.2k in · 56 out');
    assert.equal(formatUsage({ inputTokens: 12_345, outputTokens: 56, cacheReadTokens: 10_100, cacheWriteTokens: 0 }),
      '12.3k in (10.1k cached) · 56 out');
    assert.equal(formatUsage(null), '');
    assert.equal(relativeTime('2024-01-01T00:00:00Z', Date.parse('2024-01-01T02:00:00Z')), '2 h ago');
  });

  it('count added and removed lines for the approval card', () => {
    assert.deepEqual(diffStat(null, 'a\nb\n'), { added: 2, removed: 0 });
    assert.deepEqual(diffStat('a\nb\nc\n', 'a\nB\nc\nd\n'), { added: 2, removed: 1 });
    assert.deepEqual(diffStat('same\n', 'same\n'), { added: 0, removed: 0 });
  });
});

describe('undoSummary (issue 46 item 7)', () => {
  it('says what Undo did, never "restored nothing"', () => {
    assert.equal(undoSummary({ restored: ['hello.py'], deleted: ['hello.py'] }), 'Sunwell deleted hello.py (created by the turn).');
    assert.equal(undoSummary({ restored: ['a.py', 'b.py'], deleted: ['b.py'], conflicts: ['a.py'] }),
      'Sunwell restored a.py; deleted b.py (created by the turn); overwrote your later changes to a.py.');
    assert.equal(undoSummary({ restored: [] }), 'Sunwell: the turn changed no files.');
  });
});
