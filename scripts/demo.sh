#!/usr/bin/env bash
# Sets up everything (Debian packages, Release build) and runs the demo on the built-in
# default model. Run as root on a fresh Debian 12 machine, or with sudo rights.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/reprise demo "$@"
