#!/usr/bin/env bash
# Sets up what the demo needs (Debian packages, a Release build of the `reprise` program only)
# and runs `reprise demo` on the demo kit in data/demo: KV reuse on a small trained model with
# real documents. Run as root on a fresh Debian 12 machine, or with sudo rights. Arguments go
# to `reprise demo` (e.g. --model MY.gguf). scripts/test.sh builds and runs everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${REPRISE_BUILD_DIR:-build}
start=$(date +%s)
scripts/build.sh --target reprise
echo "demo.sh: built $build_dir/reprise in $(( $(date +%s) - start )) s"
exec "$build_dir/reprise" demo "$@"
