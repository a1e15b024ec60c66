#!/usr/bin/env bash
# Configures and builds Reprise (Release) into build/ (or $REPRISE_BUILD_DIR).
#   scripts/build.sh                      # every target: the program, tests, tools
#   scripts/build.sh --target reprise     # only the named targets (the demo needs `reprise`)
# Other arguments go to cmake configure (e.g. -DREPRISE_BUILD_BENCHMARKS=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${REPRISE_BUILD_DIR:-build}
configure_args=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target)
      [ $# -ge 2 ] || { echo "build.sh: --target needs a name" >&2; exit 2; }
      targets+=("$2")
      shift 2
      ;;
    *)
      configure_args+=("$1")
      shift
      ;;
  esac
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure_args[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j"$(nproc)"
fi
