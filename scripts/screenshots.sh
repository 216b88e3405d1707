#!/usr/bin/env bash
# The marketplace README's screenshots, taken from the end-to-end run's (scripts/e2e.sh writes tests/e2e/artifacts/):
# copies the ones extension/README.md shows into extension/media/screenshots/. Run it after a full e2e run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=extension/media/screenshots
mkdir -p "$out"
for name in diff-editor effects-card light-narrow-plan-question subagent-card mention-chips; do
  shot=$(ls tests/e2e/artifacts/*-"$name".png 2>/dev/null | head -n 1 || true)
  [ -n "$shot" ] || { echo "screenshots: no $name in tests/e2e/artifacts (run scripts/e2e.sh first)" >&2; exit 1; }
  cp "$shot" "$out/$name.png"
done
echo "screenshots: $(ls "$out" | wc -l) in $out"
