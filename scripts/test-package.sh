#!/usr/bin/env bash
# The installed package as an application sees it: installs a built tree into a temporary
# prefix, checks that no build-only flag or source path leaked into it, builds examples/
# against it with CMake (find_package) and the C example with pkg-config alone, and runs them
# on the demo kit's model, checking what they print. scripts/test.sh runs it on its Release
# build; by hand:
#   scripts/test-package.sh [BUILD_DIR]   (default build; reprise_api must be built)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
model=data/demo/stories260K.gguf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
version=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion reprise)
headers=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
if [ "$headers" != "./reprise/calibration.h ./reprise/defaults.h ./reprise/engine.h ./reprise/reprise.h ./reprise/reuse_diagnostics.h ./reprise/status.h ./reprise/store_admin.h ./reprise/types.h " ]; then
  echo "test-package: unexpected headers installed: $headers" >&2
  exit 1
fi
if grep -rn -e '-W' -e '-fsanitize' -e "$PWD/src" -e "$PWD/include" \
    "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  echo "test-package: build-only flags or source paths in the installed package" >&2
  exit 1
fi

cmake -S examples -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" -j"$(nproc)" >/dev/null
# shellcheck disable=SC2046  # pkg-config's flags are words
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 examples/c/generate.c -o "$work/generate-pc" \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs --static reprise)

# expect OUTPUT_FILE PATTERN...: every extended regular expression matches a line.
expect() {
  local file=$1
  shift
  for pattern in "$@"; do
    if ! grep -Eq -- "$pattern" "$file"; then
      echo "test-package: no line of $(basename "$file") matches: $pattern" >&2
      cat "$file" >&2
      exit 1
    fi
  done
}

for program in "$work/cmake/generate" "$work/generate-pc"; do
  "$program" "$model" >"$work/generate.out"
  expect "$work/generate.out" \
    "^Reprise ${version//./\\.}\$" \
    '^\[error\] a missing model \(not found\): .*/no/such/model\.gguf' \
    '^\[run 1\] [0-9]+ prompt tokens: 0 prefix, .* [1-9][0-9]* tokens generated' \
    '^\[run 2\] [0-9]+ prompt tokens: [1-9][0-9]* prefix, ' \
    '^\[cancel\] stopped after [0-9]+ of at most 200 tokens: cancelled$' \
    '^\[cancel\] with the token still cancelled: cancelled$'
done
"$work/cmake/chat" "$model" >"$work/chat.out"
expect "$work/chat.out" \
  '^\[app-a turn 1\] namespace app-a, [0-9]+ prompt tokens: 0 prefix, 0 reused, ' \
  '^\[app-a turn 2\] namespace app-a, [0-9]+ prompt tokens: [1-9][0-9]* prefix, ' \
  '^\[app-b turn 1\] namespace app-b, [0-9]+ prompt tokens: 0 prefix, 0 reused, ' \
  '^\[app-b turn 2\] namespace app-b, [0-9]+ prompt tokens: [1-9][0-9]* prefix, '
echo "test-package: Reprise $version installed; examples built (CMake, pkg-config) and run"
