#!/usr/bin/env bash
# Configures and builds Reprise (Release) into build/. Extra arguments go to cmake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${REPRISE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
