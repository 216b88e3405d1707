#!/usr/bin/env bash
# Grammar tests for syntaxes/: Sunwell's ::command injection and lens grammar, tokenized by vscode-textmate (through
# vscode-tmgrammar-test) together with VS Code's own markdown and YAML grammars. Installs its pinned tooling with
# `npm ci` when node_modules is missing or older than package-lock.json. Prints "grammar: N passed, N failed" (one
# per case file under cases/) and exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.sunwell-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "grammar: installing test tooling (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi

# vscode-tmgrammar-test's assertion parser backtracks for ever on a line with two " - " exclusion markers;
# exclusions are written once: "^^^ - scope.a scope.b".
if grep -nE '^(#|<!--)[[:space:]]*(\^|<~*-).* - .* - ' cases/*.test.*; then
  echo "grammar: the assertion lines above have more than one ' - '; write exclusions as '- a b'" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
node check-manifest.js || status=1
# The check itself must fail when the grammars vanish from the manifest (it once skipped, exit 0, instead).
node -e 'const m = require("../../package.json"); delete (m.contributes || {}).grammars; console.log(JSON.stringify(m))' \
  > "$tmp/no-grammars.json"
for manifest in "$tmp/no-grammars.json" "$tmp/missing.json"; do
  if node check-manifest.js "$manifest" > /dev/null 2>&1; then
    echo "grammar: check-manifest.js passed $(basename "$manifest"); it must fail" >&2
    status=1
  fi
done

log=$tmp/unit.log
# Markdown's grammar references the grammars of ~50 fenced-code languages; only ours and markdown/YAML are loaded,
# so vscode-textmate warns about the others. Warnings about a grammar these tests need are kept.
set +e
timeout 300 node node_modules/vscode-tmgrammar-test/dist/unit.js --config grammars.json 'cases/*.test.*' \
  > "$log" 2>&1
rc=$?
set -e
grep -vE '^grammar not found for "' "$log" || true
grep -E '^grammar not found for "(text\.html\.markdown|source\.yaml[^"]*|source\.lens|sunwell\.[^"]*)"' "$log" && rc=1

passed=$(grep -c '^✓ ' "$log" || true)
failed=$(grep -c '^✖ ' "$log" || true)
assertions=$(cat cases/*.test.* | grep -cE '^(#|<!--)[[:space:]]*(\^|<~*-)' || true)
mismatches=$(grep -c '^  at \[' "$log" || true)
echo "grammar: $((passed + failed)) case files, $assertions assertion lines, $mismatches mismatching tokens"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "grammar: vscode-tmgrammar-test exited $rc" >&2
  failed=1
fi
[ "$rc" -ne 0 ] && status=1
echo "grammar: $passed passed, $failed failed"
exit $status
