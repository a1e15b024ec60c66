#!/usr/bin/env bash
# Installs Reprise's build and test dependencies from Debian 12 packages.
# Idempotent: packages already present are left alone. Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang lld libclang-rt-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libsqlite3-dev libpcre2-dev libxxhash-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev
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
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
