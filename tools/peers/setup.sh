#!/usr/bin/env bash
# Builds llama.cpp from the sources that PyPI's llama-cpp-python 0.3.36 sdist vendors, and a venv whose
# Python bindings load that build. Idempotent; nothing here is needed by ternlab's C++ build or tests.
#   tools/peers/setup.sh          # -> tools/peers/.venv, tools/peers/.llamacpp/{src,build} (about 8 min on 2 cores)
# Afterwards: tools/peers/.venv/bin/python tools/peers/llamacpp_bench.py ...
#             tools/peers/.venv/bin/python tools/golden/llamacpp_golden.py ...
# One build serves both: llama-bench, llama-perplexity and llama-quantize are built as llama.cpp's own CMake builds
# them (GGML_NATIVE: this CPU's instruction set, as a user's own build would be), and the bindings are
# installed without a second compile (LLAMA_BUILD=OFF) and loaded with LLAMA_CPP_LIB_PATH (env.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version=0.3.36
work="$here/.llamacpp"
venv="$here/.venv"
mkdir -p "$work"
if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
  echo "tools/peers/setup.sh: needs cmake and g++ (scripts/install-deps.sh installs them)" >&2
  exit 2
fi
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip==25.3

src="$work/src/llama_cpp_python-$version"
if [[ ! -d "$src/vendor/llama.cpp" ]]; then
  echo "== llama-cpp-python $version: source distribution from PyPI"
  rm -rf "$work/src" && mkdir -p "$work/src"
  "$venv/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work/src"
  tar -xzf "$work/src/llama_cpp_python-$version.tar.gz" -C "$work/src"
fi

build="$work/build"
if [[ ! -x "$build/bin/llama-bench" || ! -x "$build/bin/llama-perplexity" || ! -x "$build/bin/llama-quantize" ]]; then
  echo "== llama.cpp (vendored by llama-cpp-python $version): CMake build, Release, native ISA"
  cmake -S "$src/vendor/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target llama-bench llama-perplexity llama-quantize llama
fi

if ! "$venv/bin/python" -c "import llama_cpp, gguf" 2>/dev/null; then
  echo "== Python bindings (llama-cpp-python $version from its sdist, without a second llama.cpp build)"
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" LLAMA_CPP_LIB_PATH="$build/bin" \
    "$venv/bin/pip" install -q --no-binary llama-cpp-python -r "$here/requirements.txt"
fi
LLAMA_CPP_LIB_PATH="$build/bin" "$venv/bin/python" -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__, 'loads', '$build/bin')"
"$build/bin/llama-bench" --help >/dev/null
echo "tools/peers: ready (llama-bench: $build/bin/llama-bench)"
