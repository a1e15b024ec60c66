#!/usr/bin/env bash
# Installs Reprise's build and test dependencies from Debian 12 packages.
# Idempotent: packages already present are left alone. Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang lld libclang-rt-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libsqlite3-dev libpcre2-dev libxxhash-dev zlib1g-dev
  libhiredis-dev  # the store's remote tier on Redis
  redis-server    # its tests start their own servers (on loopback, no daemon needed)
  nlohmann-json3-dev libcli11-dev
  json-schema-test-suite  # the official JSON-Schema tests: the response_format compiler's test
  libboost-dev       # Boost.Beast and Asio (header-only): the HTTP server
  libcpp-httplib-dev # an HTTP client: `bench serve`, tests
  python3
  chromium  # renders the HTML benchmark reports in their test (skipped without it)
)

# node and npm run the server's client tests (the official openai npm package, the chat page
# in Chromium). A machine with another node distribution (e.g. NodeSource's, which bundles
# npm and conflicts with Debian's npm) keeps it.
if ! command -v npm > /dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
# redis-server's package starts a system daemon where it can (invoke-rc.d, or systemd). The
# tests start servers of their own on loopback, and a CI container has no init: keep every
# service from starting during this install through invoke-rc.d's policy hook (exit 101 =
# "not allowed"), removed afterwards when it was ours.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" > /dev/null
  "${sudo_cmd[@]}" chmod 755 "$policy"
  trap '"${sudo_cmd[@]}" rm -f "$policy"' EXIT
fi
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
