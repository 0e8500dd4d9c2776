#!/usr/bin/env bash
# Installs ternlab's build and test dependencies from Debian's archive.
# Idempotent: packages already present are not touched, and nothing is printed for them.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libeigen3-dev librange-v3-dev doctest-dev libcli11-dev libtomlplusplus-dev libbenchmark-dev
  g++-aarch64-linux-gnu qemu-user   # the aarch64 test suite runs under emulation
  librsvg2-bin                      # renders result SVGs to PNG for a look
  nlohmann-json3-dev                # summary.json is written and read back (tests) through it
  libsimde-dev                      # the tests run the AVX-512 kernels through it where the CPU lacks AVX-512
  chromium                          # the browser-report test opens the results' HTML pages headless
  slurm-wlm munge                   # scripts/slurm-test.sh submits a sweep to a single-node Slurm on localhost
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ternlab: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
