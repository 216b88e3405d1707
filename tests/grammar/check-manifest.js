#!/usr/bin/env node
// Checks that the extension manifest (the repo-root package.json, or the file given as the argument) contributes
// Sunwell's grammars and the lens language the way grammars.json registers them for these tests. Any difference,
// a manifest without contributes.grammars included, fails (exit 1): the tests cannot drift from what VS Code loads,
// and grammars that vanish from the manifest are a failure, not a skip.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const manifestPath = path.resolve(process.argv[2] || path.join(root, 'package.json'));
const expected = {
  grammars: [
    { language: 'lens', scopeName: 'source.lens', path: './syntaxes/lens.tmLanguage.json' },
    {
      scopeName: 'sunwell.command.injection',
      path: './syntaxes/sunwell-command.injection.tmLanguage.json',
      injectTo: ['text.html.markdown', 'source.yaml', 'source.lens'],
    },
  ],
  language: { id: 'lens', extensions: ['.lens'], configuration: './syntaxes/lens.language-configuration.json' },
};

const norm = (p) => path.posix.normalize(String(p || '').replace(/\\/g, '/')).replace(/^\.\//, '');
const problems = [];

// The files themselves must exist and parse, whatever the manifest says.
for (const p of [...expected.grammars.map((g) => g.path), expected.language.configuration]) {
  try {
    JSON.parse(fs.readFileSync(path.join(root, p), 'utf8'));
  } catch (e) {
    problems.push(`${p}: ${e.message}`);
  }
}

let manifest = null;
try {
  manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
} catch (e) {
  problems.push(`${manifestPath}: ${e.message}`);
}
const contributes = (manifest && manifest.contributes) || {};
if (manifest && !Array.isArray(contributes.grammars)) {
  problems.push(`${manifestPath} has no contributes.grammars: the grammars tested here are not contributed`);
} else if (manifest) {
  for (const want of expected.grammars) {
    const got = contributes.grammars.find((g) => g.scopeName === want.scopeName);
    if (!got) { problems.push(`contributes.grammars lacks scopeName ${want.scopeName}`); continue; }
    if (norm(got.path) !== norm(want.path)) problems.push(`${want.scopeName}: path ${got.path}, expected ${want.path}`);
    if (want.language && got.language !== want.language) problems.push(`${want.scopeName}: language ${got.language}, expected ${want.language}`);
    if (want.injectTo) {
      const a = [...(got.injectTo || [])].sort().join(',');
      const b = [...want.injectTo].sort().join(',');
      if (a !== b) problems.push(`${want.scopeName}: injectTo [${a}], expected [${b}]`);
    }
  }
  const lang = (contributes.languages || []).find((l) => l.id === expected.language.id);
  if (!lang) problems.push(`contributes.languages lacks id ${expected.language.id}`);
  else {
    if (!(lang.extensions || []).includes('.lens')) problems.push('lens language: extensions lack .lens');
    if (norm(lang.configuration) !== norm(expected.language.configuration)) {
      problems.push(`lens language: configuration ${lang.configuration}, expected ${expected.language.configuration}`);
    }
  }
  if (!problems.length) console.log('manifest: package.json contributes the lens language and both grammars as tested');
}
for (const p of problems) console.error(`manifest: ${p}`);
process.exit(problems.length ? 1 : 0);
