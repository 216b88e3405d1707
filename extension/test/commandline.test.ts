// `::commands` in the chat input: what is highlighted and what completes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { COMMAND_DOCS, COMMAND_NAME } from '../src/commands.generated';
import { applyCompletion, commandLine, completionContext, isCommandLine, isCompleteCommand, matchCommands, segments } from '../src/common/commandline';
import { ROOT } from './helpers';

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

// The `::command` grammar is declared once, in server/sunwell/commands_spec.py; commands.generated.ts is made from it.
describe('the ::command grammar, from commands_spec.py', () => {
  const python = process.env.SUNWELL_PYTHON || 'python3';

  it('is what the generator makes from commands_spec.py now (else: npm run gen)', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-commands.mjs'), '--check'], { encoding: 'utf8', cwd: ROOT });
    assert.equal(result.status, 0, `${result.stderr}${result.stdout}`);
  });

  it('takes a line as a command exactly when the engine\'s parse_command does', () => {
    const lines = ['::help', '::HELP', '  ::lens review  ', '\t::save   notes/today.md\n', '::help-me', '::run_tests x', '::focus\nsrc/**',
      '::help:x', '::Docs:Review path="a b.py"', 'a::b', 'std::vector', 'x ::help', '::', '::9x', ':::note', '::save/tmp', '::close(fd)',
      '::héllo', '::lens\r\n', '  ', 'hello ::help', '::a.b:c/d', '::a:b c', '::-x'];
    const script = 'import json, sys\nfrom sunwell.commands_spec import parse_command\n'
      + 'print(json.dumps([parse_command(line) is not None for line in json.load(sys.stdin)]))';
    const result = spawnSync(python, ['-c', script], { input: JSON.stringify(lines), encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'server') } });
    assert.equal(result.status, 0, result.stderr);
    const engine = JSON.parse(result.stdout) as boolean[];
    assert.ok(engine.includes(true) && engine.includes(false));
    assert.deepEqual(lines.map((line) => isCommandLine(line)), engine, JSON.stringify(lines));
  });

  it('names each command in the table, with its usage', () => {
    assert.deepEqual(COMMAND_DOCS.find((c) => c.name === 'run'), { name: 'run', usage: '::run <skill> [args]',
      description: 'Run a skill of the active lens; args as a JSON object or `key=value` pairs.', terminalOnly: false });
    assert.equal(COMMAND_DOCS.find((c) => c.name === 'exit')?.terminalOnly, true);
    assert.equal(commandLine('run', 'review_file'), '::run review_file');
    assert.equal(commandLine('help'), '::help');
  });

  it('is the name the TextMate grammar marks in markdown, YAML and lens files', () => {
    const grammar = JSON.parse(readFileSync(path.join(ROOT, 'syntaxes', 'sunwell-command.injection.tmLanguage.json'), 'utf8'));
    const patterns = Object.entries(grammar.repository as Record<string, { match: string }>);
    assert.deepEqual(patterns.map(([name]) => name), ['command-line', 'command']);
    // possessive in the grammar (Oniguruma `*+`): a name never gives back a character
    const name = `(::)(${COMMAND_NAME.replace(/\*$/, '*+')})`;
    for (const [rule, { match }] of patterns) assert.ok(match.includes(name), `${rule}: ${match} does not mark ${name}`);
  });
});
