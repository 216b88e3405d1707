#!/usr/bin/env bash
# Every test of the project, on a fresh machine: installs what is missing, then runs the suites.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "note: ${need[*]} missing and not root: tests that need them are skipped" >&2
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

.venv/bin/python -m pytest -q "$@"
bash tests/grammar/run.sh
