#!/usr/bin/env bash
# The whole test suite: install, build, and run the native suite, a sweep through a real Slurm
# (scripts/slurm-test.sh), the same suite under ASan+UBSan,
# the threaded tests under ThreadSanitizer, and the aarch64 suite under qemu on three CPU models.
# Fails when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
status=0
# The four build trees and the tests' scratch files take about 2 GiB; a full disk otherwise shows
# up as an archiver's "No space left on device" deep inside one stage's build log.
need_mib=4096
free_mib() { df -Pm . | awk 'NR == 2 { print $4 }'; }
if [ "$(free_mib)" -lt $need_mib ]; then
  echo "ternlab: warning: only $(free_mib) MiB free on the disk holding $PWD (the suites need about $need_mib)" >&2
fi
# Each stage prints its wall time, so a slow CI run says where its minutes went.
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name =="
  if ! "$@"; then
    status=1
    [ "$(free_mib)" -lt 512 ] && echo "== $name failed with $(free_mib) MiB left on the disk holding $PWD: free space and rerun ==" >&2
  fi
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
