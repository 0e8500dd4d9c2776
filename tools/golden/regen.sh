#!/usr/bin/env bash
# Regenerates the golden fixtures in tests/fixtures/golden from scratch (tokenizer, tiny Bonsai model and
# HF float64 logits, gguf-py interop files), validates them, and either installs them or, with --check,
# compares them with the committed ones. Needs the venv from tools/golden/requirements.txt (README.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fixtures="$root/tests/fixtures/golden"
py="${GOLDEN_PYTHON:-$here/.venv/bin/python}"
if [[ ! -x "$py" ]]; then
  echo "no Python venv at $here/.venv; create it with:" >&2
  echo "  python3 -m venv $here/.venv && $here/.venv/bin/pip install -r $here/requirements.txt" >&2
  exit 2
fi
check=0
[[ "${1:-}" == "--check" ]] && check=1

# One thread and no GPU: float64 reductions then run in one fixed order on this CPU.
export PYTHONHASHSEED=0 TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 \
       MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$py" "$here/make_tokenizer.py" "$out"
"$py" "$here/make_model.py" "$out" 2> >(grep -v "falling back to its reference PyTorch" >&2)
"$py" "$here/make_model.py" --random "$out" 2> >(grep -v "falling back to its reference PyTorch" >&2)
"$py" "$here/make_interop.py" "$out"
# gguf-py re-reads every GGUF and must agree with its manifest; the model must meet the Bonsai contract.
"$py" "$here/read_gguf.py" "$out/tiny_bonsai.gguf" --compare "$out/tiny_bonsai.manifest.toml" --bonsai
"$py" "$here/read_gguf.py" "$out/interop.gguf" --compare "$out/interop.manifest.toml"

# gguf-py's reading of a ternlab-written file: needs a built ternlab (TERNLAB=path, or build/ternlab).
# Without one the committed manifest is kept as it is.
synth_manifest=ternlab_synth_tiny.manifest.toml
ternlab="${TERNLAB:-$root/build/ternlab}"
if [[ -x "$ternlab" ]] && "$ternlab" model --help 2>/dev/null | grep -qE '^ +synth '; then
  "$ternlab" model synth --preset tiny --type pq2_0 --seed 2026 -o "$out/ternlab_synth_tiny.gguf" >/dev/null
  "$py" "$here/read_gguf.py" "$out/ternlab_synth_tiny.gguf" --manifest "$out/$synth_manifest" --bonsai
  rm "$out/ternlab_synth_tiny.gguf"
elif [[ -f "$fixtures/$synth_manifest" ]]; then
  echo "no ternlab binary with 'model synth' (set TERNLAB=...): keeping the committed $synth_manifest" >&2
  cp "$fixtures/$synth_manifest" "$out/"
fi

if (( check )); then
  exec "$py" "$here/compare_dirs.py" "$out" "$fixtures"
fi
mkdir -p "$fixtures"
find "$fixtures" -maxdepth 1 -type f ! -name .gitignore -delete
cp "$out"/* "$fixtures"/
du -ab "$fixtures" | sort -n | tail -20
