// `::commands` in the chat input: what is highlighted and what completes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyCompletion, completionContext, isCompleteCommand, matchCommands, segments } from '../src/common/commandline';

const commands = [
  { name: 'help', usage: '::help', description: 'List commands' },
  { name: 'lens', usage: '::lens [name|path]', description: 'Activate a lens' },
  { name: 'clear', usage: '::clear', description: 'Clear the context' },
  { name: 'skills', usage: '::skills', description: 'List skills' },
];

describe('highlighting', () => {
  it('marks a command at the start of a line', () => {
    assert.deepEqual(segments('::lens review\nthen ::not\n  ::help'), [
      { text: '::lens', command: true },
      { text: ' review\nthen ::not\n  ', command: false },
      { text: '::help', command: true },
    ]);
  });

  it('does not fire on a::b, std::vector, :: alone or ::9x', () => {
    for (const text of ['a::b', 'std::vector<int>', '::', '::9x', 'use ::help']) {
      assert.ok(segments(text).every((s) => !s.command), text);
    }
  });

  it('keeps every character, so the overlay lines up with the textarea', () => {
    const text = '::help me\n\n::clear';
    assert.equal(segments(text).map((s) => s.text).join(''), text);
  });
});

describe('completion', () => {
  it('offers commands while the caret is in a ::name at the start of a line', () => {
    assert.deepEqual(completionContext('::le', 4), { prefix: 'le', start: 0, end: 4 });
    assert.deepEqual(completionContext('hi\n  ::', 7), { prefix: '', start: 5, end: 7 });
    assert.equal(completionContext('say ::le', 8), null);
    assert.equal(completionContext('::lens x', 8), null);
  });

  it('matches prefixes first, then substrings', () => {
    assert.deepEqual(matchCommands(commands, 'l').map((c) => c.name), ['lens', 'help', 'clear', 'skills']);
    assert.deepEqual(matchCommands(commands, 'sk').map((c) => c.name), ['skills']);
  });

  it('replaces the typed name and puts the caret after a space', () => {
    const ctx = completionContext('::le', 4)!;
    assert.deepEqual(applyCompletion('::le', ctx, commands[1]), { text: '::lens ', caret: 7 });
    const mid = completionContext('::hxyz rest', 3)!;
    assert.deepEqual(applyCompletion('::hxyz rest', mid, commands[0]), { text: '::help rest', caret: 7 });
  });
});

describe('a command typed out in full', () => {
  const commands = [{ name: 'help', usage: '::help', description: '' }, { name: 'context', usage: '::context', description: '' },
    { name: 'compact', usage: '::compact', description: '' }];
  it('is complete: Enter sends it instead of completing it again (issue 17, bug 3)', () => {
    assert.equal(isCompleteCommand(commands, 'help'), true);
    assert.equal(isCompleteCommand(commands, 'Context'), true);
  });
  it('is not when only a prefix was typed, or nothing', () => {
    assert.equal(isCompleteCommand(commands, 'co'), false);
    assert.equal(isCompleteCommand(commands, ''), false);
  });
});
