#!/usr/bin/env bash
# Long-running robustness checks, not run in CI (CI runs each fuzz target for seconds, see
# scripts/test.sh):
#  1. every libFuzzer target (fuzz/CMakeLists.txt), one after the other, for a time or an
#     execution budget each, on the corpus kept in build-fuzz/fuzz/corpus-work/ (so that
#     successive soaks build on each other);
#  2. the store crash harness at scale: `REPRISE_SOAK=1 ctest -L soak` in a Release build
#     (build-soak/, configured and built whole here; --store-build DIR uses an existing one);
# then prints one summary table. Logs and crash reproducers land in
# build-fuzz/soak-results/<target>/ (libFuzzer stops a target at its first crash: the crashes
# column is 0 or 1). Exits non-zero when anything crashed or failed.
#
#   scripts/soak.sh [--seconds N] [--runs N] [--targets "gguf tokenizer ..."] [--no-store]
#                   [--store-build DIR] [--no-build] [--nice N]
# (--no-build: use the binaries as they are, for the fuzz targets and the store harness.)
#
# Each target stops after --runs executions or --seconds, whichever comes first. Defaults:
# 10 million runs or 3600 s per target; every target; the store harness included; nice 10
# (the machine may be shared). --runs 0 means no execution limit; --targets "" skips fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=3600
runs=10000000
targets="gguf kv_file catalog tokenizer chat_template convert openai_request"
store=1
store_build=""
build=1
niceness=10
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --no-store) store=0; shift ;;
    --no-build) build=0; shift ;;
    --nice) niceness="$2"; shift 2 ;;
    --store-build) store_build="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

# Per-target libFuzzer limits (as in fuzz/CMakeLists.txt).
declare -A max_len=([gguf]=65536 [kv_file]=16384 [catalog]=262144 [tokenizer]=4096
                    [chat_template]=4096 [convert]=65536 [openai_request]=16384)
declare -A timeout_s=([gguf]=10 [kv_file]=10 [catalog]=30 [tokenizer]=10 [chat_template]=10
                      [convert]=30 [openai_request]=10)

jobs=$(nproc)
fuzz_dir=build-fuzz
results="$fuzz_dir/soak-results"
mkdir -p "$results"

if [ "$build" = 1 ] && [ -n "$targets" ]; then
  echo "== Building the fuzz targets ($fuzz_dir)"
  CC=clang CXX=clang++ cmake -S . -B "$fuzz_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DREPRISE_BUILD_FUZZERS=ON -DREPRISE_SANITIZE=ON -DREPRISE_BUILD_TESTS=OFF -DREPRISE_WERROR=OFF \
    >/dev/null
  build_targets=()
  for t in $targets; do build_targets+=("reprise_${t}_fuzz"); done
  nice -n "$niceness" cmake --build "$fuzz_dir" -j"$jobs" --target "${build_targets[@]}"
fi

status=0
rows=()
for t in $targets; do
  bin="$fuzz_dir/fuzz/reprise_${t}_fuzz"
  [ -x "$bin" ] || { echo "missing $bin (build it or drop --no-build)" >&2; exit 2; }
  work="$fuzz_dir/fuzz/corpus-work/$t"
  seeds="$fuzz_dir/fuzz/corpus-seeds/$t"
  out="$results/$t"
  mkdir -p "$work" "$out"
  log="$out/fuzz.log"
  budget=(-max_total_time="$seconds")
  if [ "$runs" != 0 ]; then budget+=(-runs="$runs"); fi
  echo "== Fuzzing $t (up to $seconds s${runs:+, $runs runs}), log in $log"
  set +e
  ASAN_OPTIONS=detect_leaks=1 nice -n "$niceness" "$bin" "${budget[@]}" \
    -max_len="${max_len[$t]:-65536}" -timeout="${timeout_s[$t]:-10}" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  crashes=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  corpus=$(find "$work" -type f | wc -l)
  if [ "$rc" != 0 ] && [ "$crashes" = 0 ]; then crashes="rc=$rc"; fi
  if [ "$rc" != 0 ]; then status=1; fi
  rows+=("$(printf '%-14s %14s %10s %8s %8s' "$t" "${execs:-?}" "${rate:-?}" "$crashes" "$corpus")")
done

store_line="store crash harness: skipped (--no-store)"
if [ "$store" = 1 ]; then
  dir="${store_build:-build-soak}"
  echo "== Store crash harness at scale (REPRISE_SOAK=1 ctest -L soak, $dir/)"
  if [ -z "$store_build" ]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  if [ "$build" = 1 ]; then nice -n "$niceness" cmake --build "$dir" -j"$jobs"; fi
  start=$(date +%s)
  set +e
  (cd "$dir" && REPRISE_SOAK=1 nice -n "$niceness" ctest --output-on-failure -L soak) \
    >"$results/soak.log" 2>&1
  rc=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  summary=$(grep -E 'tests passed|No tests were found' "$results/soak.log" | tail -n 1)
  store_line="store crash harness (ctest -L soak): ${summary:-see $results/soak.log}, ${elapsed} s, rc=$rc"
  if [ "$rc" != 0 ]; then status=1; fi
fi

echo
echo "== Soak summary ($(date -u '+%Y-%m-%d %H:%M UTC'))"
printf '%-14s %14s %10s %8s %8s\n' target executions exec/s crashes corpus
for row in "${rows[@]+"${rows[@]}"}"; do echo "$row"; done
echo "$store_line"
exit "$status"
