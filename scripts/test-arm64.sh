#!/usr/bin/env bash
# The ARM (AArch64) check, on an x86-64 Debian 12 machine: installs Debian's cross compiler,
# qemu-user and the arm64 builds of the libraries (multiarch), cross-builds the kernels and
# runs their tests under qemu on three emulated CPUs: qemu's `max`, with the int8
# matrix-multiply instructions (I8MM: the neon-i8mm set is chosen, and it and the neon-dotprod
# set are tested bit for bit against the scalar reference; REPRISE_KERNELS=neon-dotprod caps
# the choice); Neoverse N1, with the dot-product instructions but no I8MM (neon-dotprod is
# chosen and tested); and Cortex-A53, with neither (the scalar fallback is chosen). Then,
# unless REPRISE_ARM64_QUICK=1, the `reprise` program itself answers a prompt on the demo model
# under qemu (`max`: the neon-i8mm set).
# Emulation says nothing about speed: time on a real ARM machine.
# Usage: scripts/test-arm64.sh [BUILD_DIR]   (default build-arm64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-arm64}

packages=(g++-aarch64-linux-gnu qemu-user libgtest-dev:arm64 libgmock-dev:arm64
  libsqlite3-dev:arm64 libpcre2-dev:arm64 libxxhash-dev:arm64 libcpp-httplib-dev:arm64
  libboost-dev:arm64 zlib1g-dev:arm64 libhiredis-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  echo "test-arm64: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A machine whose package sources offer no arm64 builds cannot run the check: say so and
  # exit 77 (skipped), which scripts/test.sh reports without failing.
  if ! { "${sudo_cmd[@]}" dpkg --add-architecture arm64 &&
    "${sudo_cmd[@]}" apt-get update -qq &&
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; then
    echo "test-arm64: SKIPPED: the cross toolchain and arm64 libraries could not be installed"
    exit 77
  fi
fi

echo "== AArch64 cross build (kernels and their tests)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake >/dev/null
cmake --build "$build" -j"$(nproc)" --target reprise_kernels_test reprise_base_test

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Under emulation the thread pool's spinning workers crawl and gtest's death tests hang, and the
# machine's peak (threads spinning until released together, then busy loops) takes minutes and
# measures the emulator: those run in the native build only.
kernels_filter='*:-MatMulTest.ThreadPoolSplitsGiveIdenticalResults:MachinePeakTest.*'
echo "== Kernel tests under qemu, max (DotProd and I8MM): both NEON sets against scalar"
REPRISE_EXPECT_KERNELS=neon-i8mm "${qemu[@]}" -cpu max "$build/src/kernels/reprise_kernels_test" \
  --gtest_brief=1 --gtest_filter="$kernels_filter"
"${qemu[@]}" -cpu max "$build/src/base/reprise_base_test" --gtest_brief=1 \
  --gtest_filter='CpuFeatures*:Float16*:DType*'
echo "== Under qemu, max with REPRISE_KERNELS=neon-dotprod: the cap picks the DotProd set"
REPRISE_KERNELS=neon-dotprod REPRISE_EXPECT_KERNELS=neon-dotprod "${qemu[@]}" -cpu max \
  "$build/src/kernels/reprise_kernels_test" --gtest_brief=1 --gtest_filter='KernelSet*'
echo "== Kernel tests under qemu, Neoverse N1 (DotProd, no I8MM): the neon-dotprod set"
REPRISE_EXPECT_KERNELS=neon-dotprod "${qemu[@]}" -cpu neoverse-n1 \
  "$build/src/kernels/reprise_kernels_test" --gtest_brief=1 --gtest_filter="$kernels_filter"
echo "== Kernel tests under qemu, Cortex-A53 (no DotProd): the scalar set"
REPRISE_EXPECT_KERNELS=scalar "${qemu[@]}" -cpu cortex-a53 \
  "$build/src/kernels/reprise_kernels_test" --gtest_brief=1 \
  --gtest_filter='KernelSet*:MatMulTest.ScalarMatchesFloatGemm'

if [ "${REPRISE_ARM64_QUICK:-0}" = 1 ]; then
  echo "test-arm64: ok"
  exit 0
fi
echo "== reprise under qemu: greedy text on the demo model (the native build writes the same)"
cmake --build "$build" -j"$(nproc)" --target reprise
# One thread: emulated threads spin slowly.
story=$("${qemu[@]}" -cpu max "$build/reprise" run -m data/demo/stories260K.gguf \
  -p "Once upon a time" -n 24 -t 1 --stats 2>&1)
echo "$story"
grep -q "Once upon a time, there was a little girl named Lily" <<< "$story"
grep -q "neon-i8mm" <<< "$story"
echo "test-arm64: ok"
