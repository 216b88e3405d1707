#!/usr/bin/env bash
# Set up Sunwell on a fresh machine and start chatting in a demo workspace.
#   - installs the Python package into .venv (and ripgrep + bubblewrap when root)
#   - with OPENAI_API_KEY or ANTHROPIC_API_KEY set, uses that provider;
#     otherwise fetches Qwen2.5-Coder-0.5B (../shared/models) and serves it locally with llama-cpp-python
#   - opens `sunwell chat` in a small demo workspace (pass --workspace DIR to use your own)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODELS=${SUNWELL_MODELS_DIR:-$HOME/.cache/sunwell-models}
PORT=${SUNWELL_LOCAL_PORT:-18090}

if [ "$(id -u)" = 0 ] && { ! command -v rg >/dev/null || ! command -v bwrap >/dev/null; }; then
  apt-get update -qq && apt-get install -y -qq ripgrep bubblewrap >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .

if [ -n "${OPENAI_API_KEY:-}" ]; then
  MODEL=${SUNWELL_MODEL:-openai:gpt-4o}
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  MODEL=${SUNWELL_MODEL:-anthropic:claude-sonnet-4-5}
else
  MODEL=openai-compatible:qwen2.5-coder-0.5b
  export SUNWELL_BASE_URL=http://127.0.0.1:$PORT/v1
  bash "$ROOT/../shared/models/fetch-models.sh" "$MODELS" >/dev/null
  .venv/bin/python -c "import llama_cpp" 2>/dev/null || CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF" \
    .venv/bin/python -m pip install -q 'llama-cpp-python[server]==0.3.36'
  if ! curl -fs "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then
    .venv/bin/python -m llama_cpp.server --model "$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
      --n_threads 2 --n_ctx 4096 --host 127.0.0.1 --port "$PORT" >/tmp/sunwell-llama.log 2>&1 &
    trap 'kill $! 2>/dev/null' EXIT
    for _ in $(seq 60); do curl -fs "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break; sleep 0.5; done
  fi
fi

WS=${DEMO_WORKSPACE:-$HOME/sunwell-demo}
if [ ! -d "$WS" ]; then
  mkdir -p "$WS/src"
  printf 'Sunwell demo workspace.\nAsk: "Read a.txt and tell me what it says".\n' > "$WS/a.txt"
  printf 'def add(a, b):\n    return a + b\n' > "$WS/src/calc.py"
fi
echo "Sunwell: model $MODEL, workspace $WS. Type ::help for commands, ::exit to leave."
cd "$WS"
"$ROOT/.venv/bin/sunwell" chat --model "$MODEL" "$@"
