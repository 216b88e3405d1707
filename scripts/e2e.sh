#!/usr/bin/env bash
# End-to-end tests of the extension in real VS Code (code-server) + headless Chromium, against the scripted fake
# provider. Installs what is missing and rebuilds the .vsix when it is older than its sources
# (scripts/setup-vscode.sh --vsix), then runs tests/e2e/run.mjs. Screenshots: tests/e2e/artifacts/.
# The last line is `e2e: N passed, N failed`; the exit code is non-zero on a failure.
#   E2E_ONLY=stream,tool-card   run only these scenarios (the setup ones always run)
#   E2E_SIDECAR_PYTHON=PATH     use this interpreter (sunwell.python) instead of the Install button's private venv
#   E2E_KEEP=1                  keep the temp dir (profile, workspace, logs)
#   SUNWELL_NO_VSIX_BUILD=1     test the existing .vsix as it is
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
fail() { echo "e2e: $*"; echo "e2e: 0 passed, 1 failed"; exit 1; }

SETUP=$(bash scripts/setup-vscode.sh --vsix) || fail "setup-vscode.sh failed (reason above)"
CODE_SERVER=$(sed -n 's/^code-server: //p' <<<"$SETUP")
VSIX=$(sed -n 's/^vsix: //p' <<<"$SETUP")
[ -x "$CODE_SERVER" ] && [ -f "$VSIX" ] || fail "setup-vscode.sh gave no code-server or .vsix"

# The fake provider needs Python 3.11+ and nothing else.
PY=${E2E_PYTHON:-}
for candidate in "$ROOT/.venv/bin/python" python3; do
  [ -n "$PY" ] && break
  "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && PY=$candidate
done
[ -n "$PY" ] || fail "no Python 3.11+ for the fake provider"

export CODE_SERVER SUNWELL_VSIX=$VSIX E2E_PYTHON=$PY
exec node tests/e2e/run.mjs
