#!/usr/bin/env bash
# Runs the JavaScript client tests of `reprise serve` (the official openai client; the chat
# page in headless Chromium). Usage: run.sh REPRISE_CLI MODEL WORK_DIR [test files...]
# Installs the pinned npm packages (package-lock.json) into WORK_DIR once. Exits 77 (CTest's
# skip) when node or npm is missing, or npm cannot reach its registry.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cli="$1" model="$2" work="$3"
shift 3
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(openai_client.test.mjs agent_api.test.mjs chat_page.test.mjs)

if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed (scripts/install-deps.sh installs them)"
  exit 77
fi
mkdir -p "$work"
cp "$here"/package.json "$here"/package-lock.json "$here"/*.mjs "$work"/
if ! cmp -s "$here/package-lock.json" "$work/node_modules/.reprise-lock" 2> /dev/null; then
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIP: npm could not install the test packages (no access to the npm registry?)"
    exit 77
  fi
  cp "$here/package-lock.json" "$work/node_modules/.reprise-lock"
fi
for t in "${tests[@]}"; do
  if [ "$t" = chat_page.test.mjs ] && ! command -v "${REPRISE_CHROMIUM:-chromium}" > /dev/null; then
    echo "SKIP: $t needs chromium"
    continue
  fi
  (cd "$work" && REPRISE_CLI="$cli" REPRISE_MODEL="$model" node --test "$t") || exit 1
done
