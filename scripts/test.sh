#!/usr/bin/env bash
# The whole test suite: install, build, and run the native suite, a sweep through a real Slurm
# (scripts/slurm-test.sh), the same suite under ASan+UBSan,
# the threaded tests under ThreadSanitizer, and the aarch64 suite under qemu on three CPU models.
# Fails when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
status=0
# Each stage prints its wall time, so a slow CI run says where its minutes went.
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name =="
  "$@" || status=1
  echo "== $name: $((SECONDS - start)) s (total $SECONDS s) =="
}
native()  { scripts/build.sh native && (cd build && ctest --output-on-failure -j "$(nproc)"); }
asan()    { scripts/build.sh sanitize && (cd build-san && ctest --output-on-failure -j "$(nproc)"); }
tsan()    { scripts/build.sh tsan && (cd build-tsan && ctest --output-on-failure -j "$(nproc)"); }
aarch64() { scripts/build.sh aarch64 && (cd build-aarch64 && ctest --output-on-failure -j "$(nproc)"); }
stage "native (Release)" native
stage "Slurm: a sweep through a single-node cluster on localhost" scripts/slurm-test.sh build/ternlab
stage "GGUF fuzzing (libFuzzer, 45 s)" scripts/fuzz.sh 45
stage "ASan + UBSan" asan
stage "ThreadSanitizer (thread pool, shared activations)" tsan
stage "aarch64 under qemu (max, cortex-a76, cortex-a72)" aarch64
[ $status -eq 0 ] && echo "ternlab: all test suites passed" || echo "ternlab: TEST FAILURES (see above)"
exit $status
