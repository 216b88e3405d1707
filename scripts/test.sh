#!/usr/bin/env bash
# Every test of the project, on a fresh machine: installs what is missing, then runs the suites.
#   The real-model tier (Qwen2.5-Coder-0.5B through llama-cpp-python, about 30 s of tests) is prepared first: the
#   models are fetched and llama-cpp-python installed (about 5 minutes when pip must compile it). SUNWELL_SLOW=0
#   skips that; the tier's tests are then skipped with the reason, as they are when the preparation fails.
#   SUNWELL_E2E=0 skips the end-to-end tier (real VS Code in headless Chromium); it is also skipped, with the
#   reason, when code-server or Chromium cannot be installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v strace >/dev/null || need+=(strace)  # the durable-turn tests kill a process at one system call
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "note: ${need[*]} missing and not root: tests that need them are skipped" >&2
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

# The slow tier needs the model files and llama-cpp-python; prepare them when possible, else say why not.
export SUNWELL_MODELS_DIR=${SUNWELL_MODELS_DIR:-$HOME/.cache/sunwell-models}
if [ "${SUNWELL_SLOW:-1}" != 0 ]; then
  if ! PYTHON=.venv/bin/python bash scripts/fetch-models.sh "$SUNWELL_MODELS_DIR" >/dev/null 2>&1; then
    echo "slow tier: could not fetch the models into $SUNWELL_MODELS_DIR; real-model tests will be skipped" >&2
  elif ! .venv/bin/python -c "import llama_cpp.server" 2>/dev/null; then
    CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF" timeout 900 \
      .venv/bin/python -m pip install -q --disable-pip-version-check 'llama-cpp-python[server]==0.3.36' \
      || echo "slow tier: llama-cpp-python did not install; real-model tests will be skipped" >&2
  fi
fi

# The MCP servers from npm that tests/tools/mcp/test_mcp_npm.py runs (sandboxed); without npm or the registry those tests are
# skipped with the reason.
export SUNWELL_MCP_SERVERS_DIR=${SUNWELL_MCP_SERVERS_DIR:-$HOME/.cache/sunwell-mcp-servers}
mcp_bin="$SUNWELL_MCP_SERVERS_DIR/node_modules/.bin"
if [ ! -x "$mcp_bin/mcp-server-filesystem" ] || [ ! -x "$mcp_bin/mcp-server-everything" ]; then
  if ! command -v npm >/dev/null || ! timeout 300 npm install --prefix "$SUNWELL_MCP_SERVERS_DIR" --ignore-scripts \
      --no-audit --no-fund --loglevel=error @modelcontextprotocol/server-filesystem@2026.8.31 \
      @modelcontextprotocol/server-everything@2026.8.31 >/dev/null 2>&1; then
    echo "mcp: npm could not install the MCP servers into $SUNWELL_MCP_SERVERS_DIR; their tests will be skipped" >&2
  fi
fi

.venv/bin/python -m pytest -q -rs "$@"
bash tests/grammar/run.sh

# The extension: typecheck, unit tests (webview reducer, settings, generated protocol types current), bundle.
[ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error
PATH="$PWD/.venv/bin:$PATH" npm test
npm run build --silent

# End to end in real VS Code (code-server + headless Chromium, scripts/e2e.sh): screenshots in tests/e2e/artifacts/.
if [ "${SUNWELL_E2E:-1}" = 0 ]; then
  echo "e2e tier: skipped (SUNWELL_E2E=0)"
elif ! bash scripts/setup-vscode.sh >/tmp/sunwell-e2e-setup.log 2>&1; then
  echo "e2e tier: skipped: code-server or Chromium could not be installed here:"
  tail -n 5 /tmp/sunwell-e2e-setup.log
else
  bash scripts/e2e.sh
fi
