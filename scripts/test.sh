#!/usr/bin/env bash
# Every test of the project, on a fresh machine: installs what is missing, then runs the tiers.
#   The installs that only a later tier needs run in the background from the start, each with its log, and are
#   waited for just before that tier: the real-model tier's preparation (the models fetched, llama-cpp-python
#   compiled: about 5 minutes of both cores when pip has no wheel of it), the extension's npm ci, and code-server
#   with Chromium for the end-to-end tier. They overlap the fast tier, whose tests mostly wait on subprocesses;
#   that tier runs on pytest-xdist (SUNWELL_TEST_WORKERS, default 4; 0 runs it in one process).
#   SUNWELL_SLOW=0 skips the real-model tier's preparation; its tests are then skipped with the reason, as they are
#   when the preparation fails. SUNWELL_E2E=0 skips the end-to-end tier (real VS Code in headless Chromium); it is
#   also skipped, with the reason, when code-server or Chromium cannot be installed here.
#   Arguments go to both pytest runs (`-m "not slow"` on the workers, then `-m slow`). Every tier runs even when
#   one before it failed; the exit code is non-zero when any failed, and the last line names them.
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

# ---- background installs: `begin NAME FUNCTION` starts one in its own process group (so that an early exit stops
# all of it), its output in a log; `ready NAME` waits for it and tells whether it worked. ---------------------------
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/sunwell-test.XXXXXX")
declare -A job=() status=()
took=()  # how long each install and tier took, said at the end: where CI's time goes
# Niced: the tests' own deadlines come first, the installs take the CPU that the tests leave while they wait.
begin() {
  export -f $(compgen -A function)
  TOOK="$LOGS/$1.took" setsid nice -n 10 bash -c 'trap "echo \$SECONDS >\"\$TOOK\"" EXIT; set -euo pipefail; '"$2" \
    >"$LOGS/$1.log" 2>&1 </dev/null &
  job[$1]=$!
}
ready() {
  local name=$1 since=$SECONDS
  if [ -z "${status[$name]:-}" ]; then
    if wait "${job[$name]}"; then status[$name]=0; else status[$name]=$?; fi
    took+=("$name $(cat "$LOGS/$name.took" 2>/dev/null || echo ?) s (waited $((SECONDS - since)) s)")
  fi
  return "${status[$name]}"
}
log_of() { tail -n "${2:-5}" "$LOGS/$1.log" | sed 's/^/    /'; }
stop_jobs() {
  for name in "${!job[@]}"; do
    [ -n "${status[$name]:-}" ] || kill -- "-${job[$name]}" 2>/dev/null || true
  done
  rm -rf "$LOGS"
}
trap stop_jobs EXIT
trap 'exit 130' INT TERM

# The MCP servers from npm that tests/tools/mcp/test_mcp_npm.py runs (sandboxed); without npm or the registry those tests are
# skipped with the reason.
export SUNWELL_MCP_SERVERS_DIR=${SUNWELL_MCP_SERVERS_DIR:-$HOME/.cache/sunwell-mcp-servers}
install_mcp_servers() {
  local bin="$SUNWELL_MCP_SERVERS_DIR/node_modules/.bin"
  [ -x "$bin/mcp-server-filesystem" ] && [ -x "$bin/mcp-server-everything" ] && return 0
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  timeout 300 npm install --prefix "$SUNWELL_MCP_SERVERS_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31
}
begin mcp install_mcp_servers

# The venv first (the .vsix build below runs pip from it), its packages in the foreground after the jobs start.
[ -x .venv/bin/python ] || python3 -m venv .venv

# The extension's dependencies (npm test, the bundle), then the .vsix for the end-to-end tier: mostly pip downloading
# the wheels it carries. A .vsix that fails to build here is built again, or the failure said, by scripts/e2e.sh.
export E2E=${SUNWELL_E2E:-1}
install_node_modules() {
  [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] && return 0
  npm ci --no-audit --no-fund --loglevel=error
}
extension_deps() {
  install_node_modules || return 1
  [ "$E2E" = 0 ] || bash scripts/setup-vscode.sh --vsix-only || echo "(scripts/e2e.sh builds the .vsix again)"
}
begin node extension_deps
# code-server, Chromium and playwright-core for the end-to-end tier (scripts/setup-vscode.sh, which prints why not).
setup_vscode() { bash scripts/setup-vscode.sh; }
[ "$E2E" = 0 ] || begin e2e-setup setup_vscode

.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

# The slow tier needs the model files and llama-cpp-python; prepare them when possible, else say why not. The models
# are also read by a fast-tier test of scripts/fetch-models.sh, so that tier waits for them (a download, not CPU).
export SUNWELL_MODELS_DIR=${SUNWELL_MODELS_DIR:-$HOME/.cache/sunwell-models}
fetch_models() { PYTHON=.venv/bin/python bash scripts/fetch-models.sh "$SUNWELL_MODELS_DIR" >/dev/null; }
install_llama() {
  .venv/bin/python -c "import llama_cpp.server" 2>/dev/null && return 0
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF" timeout 1500 \
    .venv/bin/python -m pip install -q --disable-pip-version-check 'llama-cpp-python[server]==0.3.36'
}
SLOW=${SUNWELL_SLOW:-1}
if [ "$SLOW" != 0 ]; then
  begin models fetch_models
  begin llama install_llama
fi

failed=()
run_tier() { local name=$1 since=$SECONDS; shift; "$@" || failed+=("$name"); took+=("$name $((SECONDS - since)) s"); }

# pytest: exit 5 is "no test selected", which one of the two runs may be when arguments pick tests.
pytest_status=()
pytest_run() { local rc=0; .venv/bin/python -m pytest "$@" || rc=$?; pytest_status+=("$rc"); [ "$rc" = 0 ] || [ "$rc" = 5 ]; }

ready mcp || { echo "mcp: npm could not install the MCP servers into $SUNWELL_MCP_SERVERS_DIR; their tests will be skipped:" >&2; log_of mcp >&2; }
if [ "$SLOW" != 0 ] && ! ready models; then
  echo "slow tier: could not fetch the models into $SUNWELL_MODELS_DIR; real-model tests will be skipped:" >&2
  log_of models >&2
fi
workers=${SUNWELL_TEST_WORKERS:-4}
if [ "$workers" = 0 ]; then xdist=(); else xdist=(-n "$workers" --dist worksteal); fi
run_tier "pytest (fast tier)" pytest_run -q -rs "${xdist[@]}" -m "not slow" "$@"

run_tier grammar bash tests/grammar/run.sh

# The extension: typecheck, unit tests (webview reducer, settings, generated protocol types current), bundle.
if ready node; then
  run_tier "npm test" env PATH="$PWD/.venv/bin:$PATH" npm test
  run_tier "npm run build" npm run build --silent
else
  echo "npm ci failed:" >&2; log_of node 15 >&2
  failed+=("npm ci")
fi

# The real-model tier, on its own: its llama server takes both cores.
if [ "$SLOW" != 0 ] && ready models && ! ready llama; then
  echo "slow tier: llama-cpp-python did not install; real-model tests will be skipped:" >&2
  log_of llama >&2
fi
run_tier "pytest (slow tier)" pytest_run -q -rs -m slow "$@"
[ "${pytest_status[*]}" != "5 5" ] || failed+=("pytest (no test selected)")

# End to end in real VS Code (code-server + headless Chromium, scripts/e2e.sh): screenshots in tests/e2e/artifacts/.
if [ "$E2E" = 0 ]; then
  echo "e2e tier: skipped (SUNWELL_E2E=0)"
elif ! ready e2e-setup; then
  echo "e2e tier: skipped: code-server or Chromium could not be installed here:"
  log_of e2e-setup
else
  run_tier e2e bash scripts/e2e.sh
fi

echo "test.sh: $SECONDS s: $(IFS=,; echo "${took[*]}" | sed 's/,/, /g')" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: failed: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
  exit 1
fi
