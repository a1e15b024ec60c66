#include "kernels/machine_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/check.h"

namespace reprise::kernels {
namespace {

std::atomic<int64_t> g_sink{0};  // where the loops' results go, so none is optimised away

using Clock = std::chrono::steady_clock;

// Runs work(i) on threads i = 0..n-1, released together; returns the wall seconds from the
// release to the end of the last one.
double RunTogether(int n, const std::function<void(int)>& work) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      work(i);
    });
  }
  while (ready.load() < n) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Multiply-adds per second of `loop` on `threads` threads for about `seconds`, best of three.
double PeakRate(const PeakLoop& loop, int threads, double seconds) {
  int64_t rounds = 1 << 14;
  double elapsed = 0;
  while ((elapsed = TimePeakLoop(loop, 1, rounds)) < 0.01 && rounds < (int64_t{1} << 40)) {
    rounds *= 4;
  }
  rounds = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(rounds) * seconds / std::max(elapsed, 1e-6)));
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const double wall = TimePeakLoop(loop, threads, rounds);
    best = std::max(best, static_cast<double>(loop.macs_per_round) * static_cast<double>(rounds) *
                              threads / wall);
  }
  return best;
}

}  // namespace

double TimePeakLoop(const PeakLoop& loop, int threads, int64_t rounds) {
  REPRISE_CHECK(threads >= 1 && loop.run != nullptr);
  return RunTogether(threads, [&](int) { g_sink.fetch_add(loop.run(rounds)); });
}

double TimeStreamingRead(const unsigned char* buffer, size_t bytes, int threads, int passes) {
  REPRISE_CHECK(threads >= 1);
  const size_t words = bytes / 64 * 8;  // uint64 words, whole 64-byte lines
  return RunTogether(threads, [&](int t) {
    const size_t begin = words * static_cast<size_t>(t) / static_cast<size_t>(threads) / 8 * 8;
    const size_t end = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads) / 8 * 8;
    uint64_t acc[8] = {};
    for (int p = 0; p < passes; ++p) {
      for (size_t i = begin; i < end; i += 8) {
        uint64_t line[8];
        std::memcpy(line, buffer + i * 8, sizeof(line));
        for (int j = 0; j < 8; ++j) acc[j] += line[j];
      }
    }
    uint64_t sum = 0;
    for (uint64_t v : acc) sum += v;
    g_sink.fetch_add(static_cast<int64_t>(sum));
  });
}

MachinePeak MeasureMachinePeak(const KernelSet& set, int threads, double seconds) {
  REPRISE_CHECK(threads >= 1);
  MachinePeak peak;
  peak.kernels = set.name;
  peak.threads = threads;
  peak.int8_instruction = set.int8_peak.instruction;
  peak.int8_gmacs_per_second = PeakRate(set.int8_peak, threads, seconds) / 1e9;
  peak.float_instruction = set.float_peak.instruction;
  peak.float_gmacs_per_second = PeakRate(set.float_peak, threads, seconds) / 1e9;

  constexpr size_t kBytes = size_t{256} << 20;
  std::unique_ptr<unsigned char[]> buffer(new unsigned char[kBytes]);
  std::memset(buffer.get(), 1, kBytes);  // touch every page before timing
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const double wall = TimeStreamingRead(buffer.get(), kBytes, threads, 2);
    best = std::max(best, 2.0 * static_cast<double>(kBytes) / wall);
  }
  peak.read_gb_per_second = best / 1e9;
  return peak;
}

}  // namespace reprise::kernels
