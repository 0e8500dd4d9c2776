#!/usr/bin/env bash
# The whole test suite: install, build, and run the native suite, a sweep through a real Slurm
# (scripts/slurm-test.sh), the same suite under ASan+UBSan,
# the threaded tests under ThreadSanitizer, and the aarch64 suite under qemu on three CPU models.
# Fails when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
status=0
echo "== native (Release) ==" && scripts/build.sh native && (cd build && ctest --output-on-failure -j "$(nproc)") || status=1
echo "== Slurm: a sweep through a single-node cluster on localhost ==" && scripts/slurm-test.sh build/ternlab || status=1
echo "== GGUF fuzzing (libFuzzer, 45 s) ==" && scripts/fuzz.sh 45 || status=1
echo "== ASan + UBSan ==" && scripts/build.sh sanitize && (cd build-san && ctest --output-on-failure -j "$(nproc)") || status=1
echo "== ThreadSanitizer (thread pool, shared activations) ==" && scripts/build.sh tsan && (cd build-tsan && ctest --output-on-failure -j "$(nproc)") || status=1
echo "== aarch64 under qemu (max, cortex-a76, cortex-a72) ==" && scripts/build.sh aarch64 && (cd build-aarch64 && ctest --output-on-failure -j "$(nproc)") || status=1
[ $status -eq 0 ] && echo "ternlab: all test suites passed" || echo "ternlab: TEST FAILURES (see above)"
exit $status
