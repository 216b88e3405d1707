#!/usr/bin/env bash
# Installs what it takes to run real VS Code (code-server) with Sunwell offline, and to drive it with headless
# Chromium for the end-to-end tests:
#   - Debian packages libkrb5-dev and ripgrep (code-server's native modules) and chromium (the tests' browser):
#     apt, only when missing; needs root
#   - code-server@4.100.3 from npm into a cache dir outside the repo (reused when present)
#   - playwright-core for tests/e2e (npm ci from tests/e2e/package-lock.json)
#   - with --vsix: the extension's .vsix, built (npm ci && npm run package) when missing or older than its sources
# Idempotent: once everything is there it checks and returns in about a second. Exits non-zero with the reason
# when something cannot be installed. Prints "code-server: PATH" (and "vsix: PATH") on stdout, notes on stderr.
#   --no-browser        skip chromium and playwright-core (scripts/start.sh: you bring the browser)
#   --vsix              also make sure the .vsix is built and current
#   --vsix-only         only that: neither code-server nor the browser (scripts/test.sh builds it in the background)
#   SUNWELL_E2E_CACHE   where code-server goes (default ~/.cache/sunwell-e2e)
#   SUNWELL_NO_VSIX_BUILD=1   take the .vsix as it is (only fail when it is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CODE_SERVER_VERSION=4.100.3
CACHE=${SUNWELL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sunwell-e2e}
CS_DIR=$CACHE/code-server-$CODE_SERVER_VERSION
CS_BIN=$CS_DIR/node_modules/.bin/code-server
BROWSER=1
VSIX=0
CODE_SERVER=1
for arg in "$@"; do
  case $arg in
    --no-browser) BROWSER=0 ;;
    --vsix) VSIX=1 ;;
    --vsix-only) VSIX=1 BROWSER=0 CODE_SERVER=0 ;;
    *) echo "setup-vscode: unknown argument $arg" >&2; exit 2 ;;
  esac
done

say() { echo "setup-vscode: $*" >&2; }
die() { say "$*"; exit 1; }

# ---- the .vsix ---------------------------------------------------------------------------------------------------
vsix() {
  VSIX_FILE=$ROOT/sunwell-$(node -p 'require("./package.json").version').vsix
  stale() {
    [ -f "$VSIX_FILE" ] || return 0
    [ "${SUNWELL_NO_VSIX_BUILD:-0}" = 1 ] && return 1
    [ -n "$(find package.json package-lock.json pyproject.toml esbuild.config.mjs tsconfig.json extension/src extension/media \
      extension/build extension/README.md syntaxes server/sunwell -newer "$VSIX_FILE" -type f -not -name '*.pyc' \
      -print -quit 2>/dev/null)" ]
  }
  if stale; then
    say "building $(basename "$VSIX_FILE") (missing or older than its sources; 30 s, or about 5 minutes when pip has none of its wheels)"
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund --loglevel=error >/tmp/sunwell-setup-npm-ci.log 2>&1 \
        || die "npm ci failed; last lines:$(echo; tail -15 /tmp/sunwell-setup-npm-ci.log)"
    fi
    npm run package >/tmp/sunwell-setup-package.log 2>&1 \
      || die "npm run package failed; last lines:$(echo; tail -20 /tmp/sunwell-setup-package.log)"
    [ -f "$VSIX_FILE" ] || die "npm run package made no $VSIX_FILE (log: /tmp/sunwell-setup-package.log)"
  fi
  echo "vsix: $VSIX_FILE"
}
if [ "$CODE_SERVER" = 0 ]; then
  vsix
  exit 0
fi

# ---- Node: code-server 4.100.3 is the last release for Node 20, and its postinstall insists on Node 20 ----------
command -v node >/dev/null || die "node is not installed (code-server $CODE_SERVER_VERSION needs Node 20: apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is not installed (apt-get install npm)"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
[ "$NODE_MAJOR" = 20 ] || die "code-server $CODE_SERVER_VERSION needs Node 20, this is Node $(node --version) (4.103+ want Node 22: not offline-tested)"

# ---- Debian packages ---------------------------------------------------------------------------------------------
missing=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
[ "$BROWSER" = 0 ] || command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
if command -v dpkg-query >/dev/null; then
  have_pkg libkrb5-dev || missing+=(libkrb5-dev)
elif [ ! -f /usr/include/gssapi/gssapi.h ]; then
  missing+=(libkrb5-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get here: install them with your package manager"
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run as root, or: sudo apt-get install -y --no-install-recommends ${missing[*]}"
  say "apt-get install ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >/tmp/sunwell-setup-apt.log 2>&1 || die "apt-get install ${missing[*]} failed (log: /tmp/sunwell-setup-apt.log)"
fi

# ---- code-server -------------------------------------------------------------------------------------------------
cs_works() {
  [ -f "$CS_DIR/.sunwell-installed" ] && [ -x "$CS_BIN" ] &&
    "$CS_BIN" --config /dev/null --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION "
}
if ! cs_works; then
  say "installing code-server@$CODE_SERVER_VERSION into $CS_DIR (about 300 MB, 1-2 minutes)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR/tmp"
  LOG=$CS_DIR/install.log
  # @vscode/ripgrep's postinstall downloads rg from GitHub: pre-seed its cache (read from TMPDIR) with Debian's rg.
  export TMPDIR=$CS_DIR/tmp
  mkdir -p "$TMPDIR/vscode-ripgrep-cache-1.15.11"
  tar czf "$TMPDIR/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  # Native modules build against the system Node headers instead of downloading them; unsafe_perm because the
  # postinstall refuses root otherwise; yes so node-pty's `npx node-gyp` does not stop to ask. npm 11 blocks
  # dependencies' install scripts unless package.json's allowScripts lists them: code-server's postinstall (which
  # installs VS Code's own modules) and argon2 are the two it needs.
  export npm_config_nodedir=/usr npm_config_unsafe_perm=true npm_config_yes=true npm_config_fund=false \
    npm_config_audit=false npm_config_update_notifier=false
  cat >"$CS_DIR/package.json" <<JSON
{
  "name": "sunwell-code-server",
  "private": true,
  "dependencies": { "code-server": "$CODE_SERVER_VERSION" },
  "allowScripts": { "code-server": true, "argon2": true }
}
JSON
  (cd "$CS_DIR" && npm install --foreground-scripts) >"$LOG" 2>&1 \
    || die "npm install code-server@$CODE_SERVER_VERSION failed; last lines of $LOG:$(echo; tail -15 "$LOG")"
  # Older npm (no allowScripts) ran everything already; npm 11 may still have skipped them: run them now.
  if [ ! -e "$CS_DIR/node_modules/code-server/lib/vscode/node_modules.asar" ] \
    || [ -z "$(find "$CS_DIR/node_modules/argon2/lib/binding" -name '*.node' 2>/dev/null | head -1)" ]; then
    (cd "$CS_DIR" && npm install-scripts approve code-server argon2 && npm rebuild --foreground-scripts code-server argon2) >>"$LOG" 2>&1 \
      || die "code-server's install scripts failed; last lines of $LOG:$(echo; tail -15 "$LOG")"
  fi
  for native in node-pty/build/Release/pty.node @vscode/spdlog/build/Release/spdlog.node kerberos/build/Release/kerberos.node; do
    [ -f "$CS_DIR/node_modules/code-server/lib/vscode/node_modules/$native" ] \
      || die "code-server installed without its native module $native (see $LOG)"
  done
  rm -rf "$TMPDIR"
  touch "$CS_DIR/.sunwell-installed"
  cs_works || die "code-server was installed but \`$CS_BIN --version\` does not work (see $LOG)"
  say "code-server $CODE_SERVER_VERSION ready"
fi

# ---- playwright-core (tests/e2e) ---------------------------------------------------------------------------------
if [ "$BROWSER" = 1 ]; then
  E2E=$ROOT/tests/e2e
  if [ ! -f "$E2E/node_modules/.package-lock.json" ] || [ "$E2E/package-lock.json" -nt "$E2E/node_modules/.package-lock.json" ]; then
    say "npm ci in tests/e2e (playwright-core)"
    (cd "$E2E" && npm ci --no-audit --no-fund --loglevel=error) >/tmp/sunwell-setup-e2e-npm.log 2>&1 \
      || die "npm ci in tests/e2e failed; last lines:$(echo; tail -15 /tmp/sunwell-setup-e2e-npm.log)"
  fi
  (cd "$E2E" && node -e 'require("playwright-core")') 2>/dev/null || die "playwright-core does not load from tests/e2e/node_modules"
fi

[ "$VSIX" = 0 ] || vsix
echo "code-server: $CS_BIN"
