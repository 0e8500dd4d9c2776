#!/usr/bin/env bash
# Trains twice with the same seed and a short run, and compares the two exported GGUF files (and their
# evaluations) byte for byte: the trainer's "deterministic given a seed". One thread, nice'd.
#   tools/train/check_determinism.sh [STEPS=40] [SEED=2026]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${TRAIN_PYTHON:-$here/.venv/bin/python}"
if [[ ! -x "$py" ]]; then
  echo "no Python venv at $here/.venv (README.md: Set up and run), or set TRAIN_PYTHON" >&2
  exit 2
fi
steps="${1:-40}" seed="${2:-2026}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for run in a b; do
  OMP_NUM_THREADS=1 nice "$py" "$here/train.py" --out "$out/$run" --steps "$steps" --seed "$seed" >"$out/$run.log" 2>&1 ||
    { cat "$out/$run.log" >&2; exit 1; }
done
status=0
for f in bonsai-kjv-py.gguf bonsai-kjv-py.eval.toml heldout-prose.txt heldout-code.txt words.txt; do
  if [[ "$f" == *.toml ]]; then
    # train_seconds is wall time; everything else must match
    same=$(cmp -s <(grep -v '^train_seconds' "$out/a/$f") <(grep -v '^train_seconds' "$out/b/$f") && echo yes || echo no)
  else
    same=$(cmp -s "$out/a/$f" "$out/b/$f" && echo yes || echo no)
  fi
  echo "$f: $(stat -c %s "$out/a/$f") B, $( [[ $same == yes ]] && echo identical || echo DIFFERENT)"
  [[ $same == yes ]] || status=1
done
sha256sum "$out"/{a,b}/bonsai-kjv-py.gguf | sed "s|$out/||"
exit $status
