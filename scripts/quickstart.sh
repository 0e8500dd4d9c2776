#!/usr/bin/env bash
# The main job on its embedded default: install, build, run `ternlab quickstart`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh native >/dev/null
exec build/ternlab quickstart "$@"
