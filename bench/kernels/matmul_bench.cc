// Matmul throughput on the real smollm2-135m shapes (hidden 576, kv 192, ffn 1536, vocab
// 49152; those whose K suits the format) and three qwen3-0.6b ones (Q8_0, Q4_0, the K-quants),
// for each packed format and
// token count M, on all usable cores through the thread
// pool (split over N in groups of 8 rows), plus one-thread runs.
//
// Counters: GOPs = 2*M*N*K / time (a multiply-add counts as two operations);
// x_scalar = this kernel's rate over the scalar kernel's rate, both measured in this run on
// the same shape (the scalar one on at most 64 rows and 16 tokens, so that it finishes).
// Quantizing the activations is not included (see elementwise_bench's rms_norm_quantize).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_set.h"
#include "kernels/packed_matrix.h"
#include "kernels/quantize.h"

namespace reprise::kernels {
namespace {

ThreadPool& Pool() {
  static std::unique_ptr<ThreadPool> pool = [] {
    auto created = ThreadPool::Create({});
    REPRISE_CHECK(created.ok());
    return std::move(created).value();
  }();
  return *pool;
}

DType SourceType(PackedFormat format) {
  switch (format) {
    case PackedFormat::kQ8_0x8:
      return DType::kQ8_0;
    case PackedFormat::kQ4_0x8:
      return DType::kQ4_0;
    case PackedFormat::kQ4_Kx8:  // Q4_K, regrouped
      return DType::kQ4_K;
    case PackedFormat::kQ6_Kx8:  // Q6_K, regrouped
      return DType::kQ6_K;
    case PackedFormat::kQ5_Kx8:  // Q5_K, regrouped
      return DType::kQ5_K;
    case PackedFormat::kF16x8:
      return DType::kF16;
    case PackedFormat::kF32x8:
      return DType::kF32;
    case PackedFormat::kI8x8:  // the NPU-style per-row int8, repacked from Q8_0
      return DType::kQ8_0;
  }
  return DType::kF32;
}

struct Problem {
  std::vector<uint8_t> packed;
  PackedMatrix w;
  std::vector<float> x;
  std::vector<uint8_t> q8;
  std::vector<int8_t> i8;  // kI8x8: rows of K int8 values, static scale
  float static_scale = 0.0f;
  std::vector<float> out;
  int64_t m = 0;

  MatMulInput Input() const {
    MatMulInput input;
    input.f32 = x.data();
    input.f32_stride = w.cols;
    if (UsesStaticInt8Activations(w.format)) {
      input.q8 = reinterpret_cast<const uint8_t*>(i8.data());
      input.q8_stride = w.cols;
      input.static_scale = static_scale;
      return input;
    }
    input.q8 = q8.data();
    input.q8_stride = QuantizedRowBytes(w.cols);
    return input;
  }
};

Problem MakeProblem(PackedFormat format, int64_t m, int64_t n, int64_t k) {
  Problem p;
  Random rng(42);
  const DType src = SourceType(format);
  std::vector<float> row(static_cast<size_t>(k));
  std::vector<uint8_t> src_bytes(RowBytes(src, k) * static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    for (float& v : row) v = static_cast<float>(rng.NextGaussian()) * 0.05f;
    QuantizeRow(src, row.data(), src_bytes.data() + r * RowBytes(src, k), k);
  }
  p.packed.resize(PackedMatrixBytes(format, n, k));
  PackMatrixRows(format, src, src_bytes.data(), n, k, 0, n, p.packed.data());
  p.w = PackedMatrix{format, n, k, p.packed.data()};
  p.m = m;
  p.x.resize(static_cast<size_t>(m * k));
  for (float& v : p.x) v = static_cast<float>(rng.NextGaussian());
  p.q8.resize(static_cast<size_t>(QuantizedRowBytes(k) * m));
  for (int64_t t = 0; t < m; ++t) {
    BestKernels().quantize_row(p.x.data() + t * k, k, p.q8.data() + t * QuantizedRowBytes(k));
  }
  p.static_scale = 4.0f / 127.0f;  // the activations are N(0, 1): +-4 covers them
  p.i8.resize(static_cast<size_t>(k * m));
  for (int64_t t = 0; t < m; ++t) {
    BestKernels().static_quantize_row(p.x.data() + t * k, k, 1.0f / p.static_scale,
                                      p.i8.data() + t * k);
  }
  p.out.resize(static_cast<size_t>(m * n));
  return p;
}

// Scalar GOP/s on (at most) 64 rows x 16 tokens of the same shape, measured once per shape.
double ScalarRate(PackedFormat format, int64_t m, int64_t n, int64_t k) {
  static std::map<std::tuple<int, int64_t, int64_t, int64_t>, double> cache;
  const auto key = std::make_tuple(static_cast<int>(format), m, n, k);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const int64_t sm = std::min<int64_t>(m, 16);
  const int64_t sn = std::min<int64_t>(n, 64);
  Problem p = MakeProblem(format, sm, sn, k);
  const MatMulOutput out{p.out.data(), sn, false};
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double seconds = 0.0;
  do {
    ScalarKernels().matmul(p.w, p.Input(), out, 0, sm, 0, sn);
    ++reps;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (seconds < 0.05);
  const double rate = 2.0 * static_cast<double>(sm * sn * k) * reps / seconds * 1e-9;
  cache[key] = rate;
  return rate;
}

// Args: format, M, N, K, threads (0 = pool).
void BM_MatMul(benchmark::State& state) {
  const auto format = static_cast<PackedFormat>(state.range(0));
  const int64_t m = state.range(1);
  const int64_t n = state.range(2);
  const int64_t k = state.range(3);
  const bool use_pool = state.range(4) == 0;
  Problem p = MakeProblem(format, m, n, k);
  const KernelSet& set = BestKernels();
  const MatMulOutput out{p.out.data(), n, false};
  const int64_t num_groups = (n + kPackRows - 1) / kPackRows;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (use_pool) {
      Pool().ParallelFor(num_groups, 1, [&](int64_t g0, int64_t g1) {
        set.matmul(p.w, p.Input(), out, 0, m, g0 * kPackRows, std::min(n, g1 * kPackRows));
      });
    } else {
      set.matmul(p.w, p.Input(), out, 0, m, 0, n);
    }
    benchmark::DoNotOptimize(p.out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ops = 2.0 * static_cast<double>(m * n * k);
  const double rate = ops * 1e-9 * static_cast<double>(state.iterations()) / seconds;
  state.counters["GOPs"] = rate;
  state.counters["x_scalar"] = rate / ScalarRate(format, m, n, k);
  state.SetLabel(std::string(PackedFormatName(format)) + (use_pool ? " pool" : " 1thread"));
}

void Shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {576, 576}, {192, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
  for (int format = 0; format < 8; ++format) {
    for (const auto& [n, k] : shapes) {
      if (k % PackedColumnMultiple(static_cast<PackedFormat>(format)) != 0) continue;
      for (int64_t m : {1, 32, 128, 512}) {
        if (n == 49152 && m > 128) continue;  // the output matrix runs for sampled tokens
        b->Args({format, m, n, k, 0});
      }
    }
  }
  // The qwen3-0.6b shapes (hidden 1024, ffn 3072), whose K suits the K-quants' 256-column
  // super-blocks, for Q8_0, Q4_0, Q4_K, Q6_K and Q5_K.
  for (int format : {0, 1, 5, 6, 7}) {
    for (const auto& [n, k] :
         std::vector<std::pair<int64_t, int64_t>>{{1024, 1024}, {3072, 1024}, {1024, 3072}}) {
      for (int64_t m : {1, 128, 512}) b->Args({format, m, n, k, 0});
    }
  }
  // One thread, for scaling.
  for (int format = 0; format < 8; ++format) {
    if (PackedColumnMultiple(static_cast<PackedFormat>(format)) == 256) {
      b->Args({format, 512, 1024, 1024, 1});
      b->Args({format, 1, 3072, 1024, 1});
      continue;
    }
    b->Args({format, 512, 576, 576, 1});
    b->Args({format, 1, 1536, 576, 1});
    b->Args({format, 1, 49152, 576, 1});
  }
}

BENCHMARK(BM_MatMul)->Apply(Shapes)->UseRealTime()->MinTime(0.2);

// Decode as in a real model: one token, weights streamed from DRAM. The matrix is copied
// until the copies exceed 160 MB (beyond the L3), and each iteration uses the next copy.
// Counters: GOPs, and GBps = packed weight bytes read per second.
// Args: format, N, K.
void BM_MatMulDecodeCold(benchmark::State& state) {
  const auto format = static_cast<PackedFormat>(state.range(0));
  const int64_t n = state.range(1);
  const int64_t k = state.range(2);
  Problem p = MakeProblem(format, 1, n, k);
  const size_t bytes = p.packed.size();
  const size_t num_copies = std::max<size_t>(2, (size_t{160} << 20) / bytes + 1);
  std::vector<uint8_t> copies(bytes * num_copies);
  for (size_t c = 0; c < num_copies; ++c) {
    std::copy(p.packed.begin(), p.packed.end(), copies.begin() + c * bytes);
  }
  const KernelSet& set = BestKernels();
  const MatMulOutput out{p.out.data(), n, false};
  const int64_t num_groups = (n + kPackRows - 1) / kPackRows;
  size_t copy = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    PackedMatrix w = p.w;
    w.data = copies.data() + copy * bytes;
    copy = (copy + 1) % num_copies;
    Pool().ParallelFor(num_groups, 1, [&](int64_t g0, int64_t g1) {
      set.matmul(w, p.Input(), out, 0, 1, g0 * kPackRows, std::min(n, g1 * kPackRows));
    });
    benchmark::DoNotOptimize(p.out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["GOPs"] = 2.0 * static_cast<double>(n * k) / seconds * 1e-9;
  state.counters["GBps"] = static_cast<double>(bytes) / seconds * 1e-9;
  state.SetLabel(PackedFormatName(format));
}
BENCHMARK(BM_MatMulDecodeCold)
    ->ArgsProduct({{0, 1, 2}, {192, 576, 1536}, {576}})
    ->Args({0, 576, 1536})
    ->Args({1, 576, 1536})
    ->Args({2, 576, 1536})
    ->Args({0, 49152, 576})
    ->Args({1, 49152, 576})
    ->Args({2, 49152, 576})
    ->Args({0, 3072, 1024})  // qwen3-0.6b's gate: Q8_0, Q4_0, Q4_K, Q6_K, Q5_K
    ->Args({1, 3072, 1024})
    ->Args({5, 3072, 1024})
    ->Args({6, 3072, 1024})
    ->Args({7, 3072, 1024})
    ->Args({0, 151936, 1024})  // qwen3-0.6b's tied output matrix: Q8_0, Q6_K
    ->Args({6, 151936, 1024})
    ->UseRealTime()
    ->MinTime(0.3);

// One decode step's matmuls for the whole smollm2-135m stack: 30 layers of q, k, v, o
// (576x576, 192x576 x2, 576x576), gate, up (1536x576 x2), down (576x1536), then the
// 49152x576 output, each packed once into one arena (as a model load would) and run in
// order through the pool, one region per matrix. Weights stream from DRAM as in a real
// token step. Counters: tok_per_s = 1 / time (matmuls only), GBps = weight bytes / time.
// Args: format, threads.
void BM_DecodeStepMatmuls(benchmark::State& state) {
  const auto format = static_cast<PackedFormat>(state.range(0));
  auto pool = ThreadPool::Create({.num_threads = static_cast<int>(state.range(1))});
  REPRISE_CHECK(pool.ok());
  struct Shape {
    int64_t n, k;
  };
  std::vector<Shape> shapes;
  for (int layer = 0; layer < 30; ++layer) {
    for (Shape s : {Shape{576, 576}, Shape{192, 576}, Shape{192, 576}, Shape{576, 576},
                    Shape{1536, 576}, Shape{1536, 576}, Shape{576, 1536}}) {
      shapes.push_back(s);
    }
  }
  shapes.push_back({49152, 576});
  // One random matrix per distinct shape, copied into every slot of the arena.
  std::map<std::pair<int64_t, int64_t>, Problem> originals;
  size_t total = 0;
  for (const Shape& s : shapes) {
    if (!originals.count({s.n, s.k}))
      originals.emplace(std::make_pair(s.n, s.k), MakeProblem(format, 1, s.n, s.k));
    total += PackedMatrixBytes(format, s.n, s.k);
  }
  std::vector<uint8_t> arena(total);
  std::vector<PackedMatrix> matrices;
  size_t offset = 0;
  for (const Shape& s : shapes) {
    const Problem& p = originals.at({s.n, s.k});
    std::copy(p.packed.begin(), p.packed.end(), arena.begin() + offset);
    matrices.push_back(PackedMatrix{format, s.n, s.k, arena.data() + offset});
    offset += p.packed.size();
  }
  const Problem& x576 = originals.at({576, 576});
  const Problem& x1536 = originals.at({576, 1536});
  std::vector<float> out(49152);
  const KernelSet& set = BestKernels();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (const PackedMatrix& w : matrices) {
      const MatMulInput input = w.cols == 1536 ? x1536.Input() : x576.Input();
      const MatMulOutput output{out.data(), w.rows, false};
      const int64_t num_groups = (w.rows + kPackRows - 1) / kPackRows;
      (*pool)->ParallelFor(num_groups, 1, [&](int64_t g0, int64_t g1) {
        set.matmul(w, input, output, 0, 1, g0 * kPackRows, std::min(w.rows, g1 * kPackRows));
      });
    }
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["tok_per_s"] = 1.0 / seconds;
  state.counters["GBps"] = static_cast<double>(total) / seconds * 1e-9;
  state.SetLabel(PackedFormatName(format));
}
BENCHMARK(BM_DecodeStepMatmuls)->ArgsProduct({{0, 1, 2}, {2, 1}})->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace reprise::kernels

BENCHMARK_MAIN();
