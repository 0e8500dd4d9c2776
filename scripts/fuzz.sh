#!/usr/bin/env bash
# A short, CI-sized libFuzzer run of the GGUF reader and the model/tokenizer validation.
# Usage: scripts/fuzz.sh [seconds]   (default 45). Needs clang++ with libFuzzer (Debian: clang,
# libclang-rt-14-dev) and a native build (build/ternlab) to write the seed files; skips with a
# printed reason otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
cxx=$(command -v clang++ || true)
if [ -z "$cxx" ]; then echo "fuzz: skipped (clang++ not installed)"; exit 0; fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>/dev/null; then
  echo "fuzz: skipped (clang++ has no libFuzzer runtime; install libclang-rt-14-dev)"; exit 0
fi
if [ ! -x build/ternlab ]; then echo "fuzz: skipped (no native build: run scripts/build.sh native first)"; exit 0; fi

out=build-fuzz
mkdir -p "$out/corpus"
# -Wno-psabi: clang ignores the vector-op units' target pragmas, so it notes (about 200 times) that
# their internal wide-vector functions would change the ABI; none of them crosses a unit's boundary.
flags=(-std=c++20 -O1 -g -Wno-psabi -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I.)
sources=(tests/fuzz/fuzz_gguf.cpp model/gguf.cpp model/config.cpp model/hadamard.cpp model/tokenizer.cpp
         kernels/vector/vector_ops.cpp kernels/vector/vector_ops_avx2.cpp kernels/vector/vector_ops_avx512.cpp
         kernels/cpu.cpp kernels/q8k.cpp kernels/thread_pool.cpp)
# One unit per core at a time (xargs fails when any unit does), then one link.
mkdir -p "$out/obj"
export cxx out fuzz_flags="${flags[*]}"  # no flag holds a space
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} bash -c \
  'exec "$cxx" $fuzz_flags -c {} -o "$out/obj/$(echo {} | tr / _).o"'
"$cxx" "${flags[@]}" "$out"/obj/*.o -o "$out/fuzz_gguf"
# Seeds: a complete (small) Bonsai-format model in both ternary types.
build/ternlab model synth --preset micro --type pq2_0 -o "$out/corpus/micro-pq2_0.gguf" >/dev/null
build/ternlab model synth --preset micro --type ptq1_0 -o "$out/corpus/micro-ptq1_0.gguf" >/dev/null
echo "fuzz: ${seconds}s of libFuzzer on the GGUF reader (corpus $out/corpus)"
"$out/fuzz_gguf" -max_total_time="$seconds" -max_len=200000 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus" 2>&1 | tail -n 12
