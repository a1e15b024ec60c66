#!/usr/bin/env bash
# Sets up everything and runs the test suite with CTest:
#  1. Release build, every test (unit + integration; fuzz and slow harnesses in short form);
#     then the installed package: examples/ built against it (CMake and pkg-config) and run
#     (scripts/test-package.sh);
#  2. an AddressSanitizer + UndefinedBehaviorSanitizer build, the `unit` and `hostile` labels
#     (the hostile-input tests of the command line run under the sanitizers too);
#  3. every libFuzzer target (clang; fuzz/CMakeLists.txt: GGUF, KV file, catalog recovery,
#     tokenizers, chat template, HF import), each for REPRISE_FUZZ_SECONDS (default 20);
#  4. the ARM check (scripts/test-arm64.sh, quick form): an AArch64 cross build of the kernels,
#     their tests under qemu-user with and without the dot-product instructions.
# Long fuzzing and the store crash harness at scale are scripts/soak.sh's (not run in CI).
# Set REPRISE_TEST_QUICK=1 to run step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DREPRISE_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build -j"$jobs"
python3 tools/check_layers.py
python3 tools/check_thread_safety.py build -j "$jobs"
(cd build && ctest --output-on-failure -j"$jobs" -LE 'fuzz|soak')

echo "== Installed package and examples/"
step_start=$SECONDS
scripts/test-package.sh build
echo "   ($((SECONDS - step_start)) s)"

if [ "${REPRISE_TEST_QUICK:-0}" = 1 ]; then exit 0; fi

echo "== ASan + UBSan build, unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DREPRISE_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -L 'unit|hostile')

echo "== Fuzzing (libFuzzer), ${REPRISE_FUZZ_SECONDS:-20} s per target"
# No -Werror here: warnings are the gcc builds' job (and the thread-safety analysis that of
# tools/check_thread_safety.py, above).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DREPRISE_BUILD_FUZZERS=ON -DREPRISE_SANITIZE=ON -DREPRISE_BUILD_TESTS=OFF -DREPRISE_WERROR=OFF \
  -DREPRISE_FUZZ_SECONDS="${REPRISE_FUZZ_SECONDS:-20}" >/dev/null
fuzz_targets=()
for name in gguf kv_file catalog tokenizer chat_template convert openai_request; do
  fuzz_targets+=("reprise_${name}_fuzz")
done
cmake --build build-fuzz -j"$jobs" --target "${fuzz_targets[@]}"
(cd build-fuzz && ctest --output-on-failure -L fuzz)

echo "== AArch64 cross build, kernel tests under qemu-user"
step_start=$SECONDS
arm_status=0
REPRISE_ARM64_QUICK=1 scripts/test-arm64.sh build-arm64 || arm_status=$?
if [ "$arm_status" -eq 77 ]; then
  echo "   the ARM check was skipped (no cross toolchain could be installed)"
elif [ "$arm_status" -ne 0 ]; then
  exit "$arm_status"
fi
echo "   ($((SECONDS - step_start)) s)"
