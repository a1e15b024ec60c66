// Attention over an f16 KV cache: decode (one query, all heads) at several context lengths,
// and a causal prefill chunk (at the end of a 512-, 2048- and 8192-token context), on smollm2 heads
// (9 over 3 kv heads, head_dim 64) and qwen3 heads (16 over 8, head_dim 128). One thread; callers
// split heads / queries over threads.
//
// Counters: GFLOPs = 4 * visible (query, slot) pairs * heads * head_dim / time (QK and PV,
// two operations per multiply-add); x_scalar = scalar time / this time, in the same run.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "kernels/kernel_set.h"

namespace reprise::kernels {
namespace {

struct Setup {
  std::vector<float> q, out;
  std::vector<uint16_t> k, v;
  std::vector<int32_t> slot_positions, query_positions;
  AttentionArgs args;
  double flops = 0.0;
};

Setup MakeSetup(int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int64_t num_slots,
                int64_t num_queries) {
  Setup s;
  Random rng(1);
  s.q.resize(num_queries * num_heads * head_dim);
  for (float& x : s.q) x = static_cast<float>(rng.NextGaussian());
  s.out.resize(s.q.size());
  s.k.resize(num_kv_heads * num_slots * head_dim);
  s.v.resize(s.k.size());
  for (uint16_t& x : s.k) x = F32ToF16(static_cast<float>(rng.NextGaussian()));
  for (uint16_t& x : s.v) x = F32ToF16(static_cast<float>(rng.NextGaussian()));
  s.slot_positions.resize(num_slots);
  for (int64_t i = 0; i < num_slots; ++i) s.slot_positions[i] = static_cast<int32_t>(i);
  // The queries are the last num_queries slots (a prefill chunk, or the decoded token).
  s.query_positions.resize(num_queries);
  int64_t visible = 0;
  for (int64_t i = 0; i < num_queries; ++i) {
    s.query_positions[i] = static_cast<int32_t>(num_slots - num_queries + i);
    visible += s.query_positions[i] + 1;
  }
  s.flops = 4.0 * static_cast<double>(visible * num_heads * head_dim);
  AttentionArgs& a = s.args;
  a.q = s.q.data();
  a.q_stride = num_heads * head_dim;
  a.out = s.out.data();
  a.out_stride = num_heads * head_dim;
  a.query_positions = s.query_positions.data();
  a.k_cache = s.k.data();
  a.v_cache = s.v.data();
  a.capacity = num_slots;
  a.slot_positions = s.slot_positions.data();
  a.num_slots = num_slots;
  a.num_heads = num_heads;
  a.num_kv_heads = num_kv_heads;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return s;
}

// Args: heads, kv heads, head_dim, slots, queries.
void BM_Attention(benchmark::State& state) {
  const Setup s =
      MakeSetup(state.range(0), state.range(1), state.range(2), state.range(3), state.range(4));
  const int64_t num_queries = state.range(4);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    BestKernels().attention(s.args, 0, num_queries, 0, s.args.num_heads);
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = s.flops / seconds * 1e-9;
  int64_t calls = 0;
  const auto scalar_start = std::chrono::steady_clock::now();
  double scalar_seconds = 0.0;
  do {
    ScalarKernels().attention(s.args, 0, num_queries, 0, s.args.num_heads);
    ++calls;
    scalar_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - scalar_start).count();
  } while (scalar_seconds < 0.05);
  state.counters["x_scalar"] = scalar_seconds / static_cast<double>(calls) / seconds;
}
BENCHMARK(BM_Attention)
    ->Args({9, 3, 64, 512, 1})
    ->Args({9, 3, 64, 4096, 1})
    ->Args({16, 8, 128, 4096, 1})
    ->Args({9, 3, 64, 512, 128})
    ->Args({16, 8, 128, 2048, 128})
    ->Args({9, 3, 64, 8192, 64})
    ->UseRealTime();

}  // namespace
}  // namespace reprise::kernels

BENCHMARK_MAIN();
