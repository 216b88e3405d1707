// The extension's TypeScript stays small enough to read whole (STYLE.md 10): every file under MAX_LINES, split by
// concept when it grows. Generated files (`*.generated.ts`, made from the Python side) are exempt.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './helpers';

const MAX_LINES = 400;

function typescriptFiles(): string[] {
  return ['extension/src', 'extension/test'].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => path.join(dir, file)));
}

/** The lines an editor shows: a last line without its newline counts too. */
function lineCount(text: string): number {
  return (text.match(/\n/g)?.length ?? 0) + (text && !text.endsWith('\n') ? 1 : 0);
}

describe('the size of a TypeScript file', () => {
  it(`stays under ${MAX_LINES} lines, generated files aside`, () => {
    const files = typescriptFiles();
    assert.ok(files.some((f) => f.endsWith(path.join('webview', 'main.ts'))), 'the walk finds the sources');
    const long = files.filter((file) => !file.endsWith('.generated.ts'))
      .map((file) => ({ file, lines: lineCount(readFileSync(path.join(ROOT, file), 'utf8')) }))
      .filter(({ lines }) => lines >= MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    assert.deepEqual(long, [], 'split these by concept');
  });

  it('counts the lines an editor shows', () => {
    assert.equal(lineCount('a\nb\n'), 2);
    assert.equal(lineCount('a\nb'), 2);
    assert.equal(lineCount(''), 0);
  });
});
