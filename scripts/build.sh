#!/usr/bin/env bash
# Configures and builds one ternlab tree. Usage: scripts/build.sh [native|sanitize|tsan|aarch64]
# Build folders: build/ (native, Release), build-san/ (ASan+UBSan), build-tsan/ (ThreadSanitizer, the
# threaded tests only), build-aarch64/ (cross, tests only).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-native}
jobs=$(nproc)
targets=()
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
# Sanitizer reports need file:line, not variables: line tables only (-g1) spare the variable
# tracking that full -g spends minutes on in the SIMDe-emulated AVX-512 kernels.
# The sanitizers check memory, undefined behaviour and races, not speed: at -O1 GCC compiles the
# ASan+UBSan build in about 40% less CPU time (620 s against about 1000; one unit 46 s -> 26 s),
# and its tests take 73 s instead of 62.
san_lines="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
case "$kind" in
  native)   dir=build;         args=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) dir=build-san;     args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "$san_lines" -DTERNLAB_SANITIZE=ON -DTERNLAB_TESTS_ONLY=ON) ;;
  # ThreadSanitizer runs the threaded suites only: -O1 as for ASan, and only their executable is
  # built, not every target.
  tsan)     dir=build-tsan;    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "$san_lines" -DTERNLAB_TSAN=ON -DTERNLAB_TESTS_ONLY=ON)
            targets=(--target ternlab_tsan_tests) ;;
  aarch64)  dir=build-aarch64; args=(-DCMAKE_BUILD_TYPE=Release -DTERNLAB_TESTS_ONLY=ON
                                     -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake) ;;
  *) echo "usage: $0 [native|sanitize|tsan|aarch64]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -DTERNLAB_WERROR=$werror "${args[@]}" >/dev/null
cmake --build "$dir" -j "$jobs" ${targets[@]+"${targets[@]}"}
