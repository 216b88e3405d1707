#!/usr/bin/env node
// Debug aid: print the tokens (text and scopes) of a file with the same grammars the tests load.
// Usage: node tokens.js FILE [SCOPE]   (SCOPE defaults from the file extension via grammars.json)
'use strict';
const fs = require('fs');
const path = require('path');
const tm = require('vscode-textmate');
const { createRegistry, loadConfiguration } = require('vscode-tmgrammar-test/dist/common/index.js');

async function main() {
  const [file, scopeArg] = process.argv.slice(2);
  if (!file) { console.error('usage: node tokens.js FILE [SCOPE]'); process.exit(2); }
  const { grammars, extensionToScope } = loadConfiguration(path.join(__dirname, 'grammars.json'), scopeArg, []);
  const scope = scopeArg || extensionToScope(path.extname(file));
  const grammar = await createRegistry(grammars).loadGrammar(scope);
  let stack = tm.INITIAL;
  fs.readFileSync(file, 'utf8').split(/\r?\n/).forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack);
    console.log(`${i + 1}: ${line}`);
    for (const t of r.tokens) {
      console.log(`    ${JSON.stringify(line.slice(t.startIndex, t.endIndex)).padEnd(24)} ${t.scopes.slice(1).join(' ')}`);
    }
    stack = r.ruleStack;
  });
}
main().catch((e) => { console.error(e); process.exit(1); });
