// Row kernels of a layer on smollm2 / qwen3 row sizes, best kernel set vs scalar.
//
// Counters: ns per row (the benchmark's own time), GBps = bytes read + written per second,
// x_scalar = scalar time / this time, the scalar kernel timed in the same run.

#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <vector>

#include "base/random.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_set.h"

namespace reprise::kernels {
namespace {

std::vector<float> Random(int64_t n, uint64_t seed) {
  reprise::Random rng(seed);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = static_cast<float>(rng.NextGaussian());
  return values;
}

// Seconds per call of fn, over at least 20 ms.
double SecondsPerCall(const std::function<void()>& fn) {
  int64_t calls = 0;
  const auto start = std::chrono::steady_clock::now();
  double seconds = 0.0;
  do {
    for (int i = 0; i < 16; ++i) fn();
    calls += 16;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (seconds < 0.02);
  return seconds / static_cast<double>(calls);
}

// Runs `make(set)` (a callable for one row) in the benchmark loop with the best set, then
// times the scalar set once for the ratio.
template <typename Make>
void RunRowBench(benchmark::State& state, int64_t bytes_per_call, Make make) {
  const auto best = make(BestKernels());
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    best();
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["GBps"] = static_cast<double>(bytes_per_call) / seconds * 1e-9;
  state.counters["x_scalar"] = SecondsPerCall(make(ScalarKernels())) / seconds;
  state.SetLabel(BestKernels().name);
}

void BM_RmsNormQuantize(benchmark::State& state) {
  const int64_t k = state.range(0);
  const std::vector<float> x = Random(k, 1);
  const std::vector<float> w = Random(k, 2);
  std::vector<uint8_t> out(QuantizedRowBytes(k));
  RunRowBench(state, k * 8 + QuantizedRowBytes(k), [&](const KernelSet& set) {
    return [&, fn = set.rms_norm_quantize] { fn(x.data(), w.data(), k, 1e-5f, out.data()); };
  });
}
BENCHMARK(BM_RmsNormQuantize)->Arg(576)->Arg(1536)->Arg(2048);

void BM_QuantizeRow(benchmark::State& state) {
  const int64_t k = state.range(0);
  const std::vector<float> x = Random(k, 1);
  std::vector<uint8_t> out(QuantizedRowBytes(k));
  RunRowBench(state, k * 4 + QuantizedRowBytes(k), [&](const KernelSet& set) {
    return [&, fn = set.quantize_row] { fn(x.data(), k, out.data()); };
  });
}
BENCHMARK(BM_QuantizeRow)->Arg(576)->Arg(1536);

void BM_RmsNorm(benchmark::State& state) {
  const int64_t k = state.range(0);
  const std::vector<float> x = Random(k, 1);
  const std::vector<float> w = Random(k, 2);
  std::vector<float> out(k);
  RunRowBench(state, k * 12, [&](const KernelSet& set) {
    return [&, fn = set.rms_norm] { fn(x.data(), w.data(), k, 1e-5f, out.data()); };
  });
}
BENCHMARK(BM_RmsNorm)->Arg(576)->Arg(2048);

void BM_SiluMul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float> gate = Random(n, 1);
  const std::vector<float> up = Random(n, 2);
  std::vector<float> out(n);
  RunRowBench(state, n * 12, [&](const KernelSet& set) {
    return [&, fn = set.silu_mul] { fn(gate.data(), up.data(), n, out.data()); };
  });
}
BENCHMARK(BM_SiluMul)->Arg(1536)->Arg(8192);

void BM_Softmax(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float> x = Random(n, 1);
  std::vector<float> work = x;
  RunRowBench(state, n * 8,
              [&](const KernelSet& set) { return [&, fn = set.softmax] { fn(work.data(), n); }; });
}
BENCHMARK(BM_Softmax)->Arg(512)->Arg(49152);

// One token's q (9 heads x 64) rotated, both layouts.
void BM_Rope(benchmark::State& state) {
  const auto style = static_cast<RopeStyle>(state.range(0));
  const int64_t head_dim = 64;
  const int64_t num_heads = 9;
  std::vector<float> x = Random(num_heads * head_dim, 1);
  std::vector<float> inv_freq(head_dim / 2), cos(head_dim / 2), sin(head_dim / 2);
  RopeInverseFrequencies(100000.0f, head_dim, nullptr, 1.0f, inv_freq.data());
  RopeCosSin(1234, inv_freq.data(), head_dim / 2, cos.data(), sin.data());
  RunRowBench(state, num_heads * head_dim * 8, [&](const KernelSet& set) {
    return [&, fn = set.rope] {
      fn(x.data(), num_heads, head_dim, head_dim, cos.data(), sin.data(), style);
    };
  });
}
BENCHMARK(BM_Rope)->Arg(0)->Arg(1);

void BM_F32ToF16(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float> x = Random(n, 1);
  std::vector<uint16_t> out(n);
  RunRowBench(state, n * 6, [&](const KernelSet& set) {
    return [&, fn = set.f32_to_f16] { fn(x.data(), n, out.data()); };
  });
}
BENCHMARK(BM_F32ToF16)->Arg(192)->Arg(4096);

}  // namespace
}  // namespace reprise::kernels

BENCHMARK_MAIN();
