// Cost of one ParallelFor region (the fork/join overhead a decode step pays a few hundred
// times per token): with an empty body (the caller may do everything itself), and with a
// body of ~2 us per range so that both threads take part; with workers spinning and asleep.

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>

#include "base/check.h"
#include "base/thread_pool.h"

namespace reprise {
namespace {

void BusyWaitNs(int64_t ns) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Args: threads, spin_us, ns of work per range. spin 0 measures the futex wake path.
void BM_ParallelForRegion(benchmark::State& state) {
  const int num_threads = static_cast<int>(state.range(0));
  auto pool =
      ThreadPool::Create({.num_threads = num_threads, .spin_us = static_cast<int>(state.range(1))});
  REPRISE_CHECK(pool.ok());
  const int64_t work_ns = state.range(2);
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    (*pool)->ParallelFor(num_threads, 1, [&](int64_t begin, int64_t end) {
      if (work_ns > 0) BusyWaitNs(work_ns);
      sink.fetch_add(end - begin, std::memory_order_relaxed);
    });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ParallelForRegion)
    ->Args({2, 200, 0})
    ->Args({2, 200, 2000})
    ->Args({2, 0, 2000})
    ->Args({1, 200, 2000})
    ->UseRealTime();

}  // namespace
}  // namespace reprise

BENCHMARK_MAIN();
