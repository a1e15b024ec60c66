// Matmul kernels against a float GEMM on the dequantized weights, and SIMD against scalar.
//
// Tolerances come from the data, by the standard bound on a float sum of n terms,
// |fl(sum) - sum| <= gamma(n) * sum |terms| with gamma(n) = n u / (1 - n u), u = 2^-24:
//  - quantized formats: an exact int32 sum per 32-column block, then one rounded scale
//    product and one FMA per block, so n = K/32 + 2 against the dequantized activations;
//    against the float activations add the int8 rounding, sum_k |w_k| * d_block / 2;
//  - float formats: one FMA per column, n = K + 1;
//  - kI8x8: an exact int32 sum over the row, its conversion and two products, n = 3; against
//    the float activations add sum_k |w_k| * static_scale / 2.
// SIMD and scalar kernels perform the same float operations in the same order, so they must
// agree exactly, and so must any split of the M and N ranges.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/float16.h"
#include "base/thread_pool.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_set.h"
#include "kernels/kernel_test_util.h"
#include "kernels/quant_blocks.h"

namespace reprise::kernels {
namespace {

using testing::OwnedPacked;
using testing::Pack;
using testing::RandomFloats;
using testing::RandomMatrix;
using testing::SimdSets;

constexpr float kSentinel = 1234.5f;

double Gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u);
}

struct Case {
  PackedFormat format;
  DType src;
  int64_t m, n, k;
};

std::string Describe(const Case& c) {
  return std::string(PackedFormatName(c.format)) + " from " + std::string(DTypeName(c.src)) +
         " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k);
}

// The inputs of one case: packed weights, float activations, and (for quantized formats)
// the quantized rows, at a stride larger than the minimum.
struct Problem {
  Case c;
  OwnedPacked weights;
  std::vector<float> x;  // [m][k]
  std::vector<uint8_t> q8;
  float static_scale = 0.0f;  // kI8x8
  int64_t q8_stride = 0;

  MatMulInput Input() const {
    MatMulInput input;
    input.f32 = x.data();
    input.f32_stride = c.k;
    input.q8 = q8.data();
    input.q8_stride = q8_stride;
    input.static_scale = static_scale;
    return input;
  }
};

Problem MakeProblem(const Case& c, const KernelSet& quantizer, uint64_t seed) {
  Problem p;
  p.c = c;
  const std::vector<uint8_t> w = RandomMatrix(seed, c.src, c.n, c.k, 0.05f);
  p.weights = Pack(c.format, c.src, w, c.n, c.k);
  p.x = RandomFloats(seed + 1, c.m * c.k);
  // A few outliers, as real activations have.
  for (int64_t i = 0; i < c.m * c.k; i += 97) p.x[static_cast<size_t>(i)] *= 20.0f;
  if (UsesQuantizedActivations(c.format)) {
    p.q8_stride = QuantizedRowBytes(c.k) + 8;
    p.q8.assign(static_cast<size_t>(p.q8_stride * c.m), 0);
    for (int64_t m = 0; m < c.m; ++m) {
      quantizer.quantize_row(p.x.data() + m * c.k, c.k, p.q8.data() + m * p.q8_stride);
    }
  }
  if (UsesStaticInt8Activations(c.format)) {
    // One scale for the whole tensor, from its absolute maximum (nothing clips).
    float amax = 0.0f;
    for (float v : p.x) amax = std::max(amax, std::fabs(v));
    p.static_scale = amax / 127.0f;
    p.q8_stride = c.k + 5;
    p.q8.assign(static_cast<size_t>(p.q8_stride * c.m), 0);
    for (int64_t m = 0; m < c.m; ++m) {
      quantizer.static_quantize_row(p.x.data() + m * c.k, c.k, 1.0f / p.static_scale,
                                    reinterpret_cast<int8_t*>(p.q8.data() + m * p.q8_stride));
    }
  }
  return p;
}

// Runs `set.matmul` on the given ranges into an output initialised to the sentinel.
std::vector<float> RunMatMul(const KernelSet& set, const Problem& p, int64_t out_stride,
                             const std::vector<std::pair<int64_t, int64_t>>& m_splits,
                             const std::vector<std::pair<int64_t, int64_t>>& n_splits) {
  std::vector<float> out(static_cast<size_t>(out_stride * p.c.m), kSentinel);
  const MatMulOutput output{out.data(), out_stride, false};
  for (const auto& [m0, m1] : m_splits) {
    for (const auto& [n0, n1] : n_splits) {
      set.matmul(p.weights.view, p.Input(), output, m0, m1, n0, n1);
    }
  }
  return out;
}

void CheckAgainstFloat(const Problem& p, const std::vector<float>& out, int64_t out_stride) {
  const Case& c = p.c;
  std::vector<float> w_row(static_cast<size_t>(c.k));
  const bool quantized = UsesQuantizedActivations(c.format);
  const bool static_int8 = UsesStaticInt8Activations(c.format);
  for (int64_t n = 0; n < c.n; ++n) {
    UnpackRow(p.weights.view, n, w_row.data());
    for (int64_t m = 0; m < c.m; ++m) {
      const float* x = p.x.data() + m * c.k;
      double exact = 0.0, magnitude = 0.0, quant_error = 0.0, float_ref = 0.0;
      for (int64_t k = 0; k < c.k; ++k) {
        const double w = w_row[static_cast<size_t>(k)];
        double a = x[k];
        if (quantized) {
          const QuantizedRowView row(p.q8.data() + m * p.q8_stride, c.k);
          const double d = row.scale(k / kActivationBlock);
          a = d * row.q[k];
          quant_error += std::fabs(w) * d / 2.0;
          float_ref += w * x[k];
        } else if (static_int8) {
          const int8_t q = static_cast<int8_t>(p.q8[static_cast<size_t>(m * p.q8_stride + k)]);
          a = static_cast<double>(p.static_scale) * q;
          quant_error += std::fabs(w) * p.static_scale / 2.0;
          float_ref += w * x[k];
        }
        exact += w * a;
        magnitude += std::fabs(w * a);
      }
      // kI8x8: an exact int32 sum, then its conversion and two products. K-quants: two FMAs
      // per block, of d * sum(q a) and min * sum(a), each at most 2 x the block's max |w|
      // times sum(|a|) (|d q| <= |w| + min, min <= max |w|): up to 3 x the plain magnitude.
      const bool affine = c.format == PackedFormat::kQ4_Kx8 || c.format == PackedFormat::kQ5_Kx8;
      const int64_t blocks = c.k / kActivationBlock;
      const int64_t terms = static_int8 ? 3
                            : quantized ? (affine ? 2 * blocks : blocks) + 2
                                        : c.k + 1;
      const double rounding = Gamma(terms) * magnitude * (affine ? 3.0 : 1.0) + 1e-30;
      const double got = out[static_cast<size_t>(m * out_stride + n)];
      ASSERT_NEAR(got, exact, rounding) << Describe(c) << " at m=" << m << " n=" << n;
      if (quantized || static_int8) {
        ASSERT_NEAR(got, float_ref, rounding * 2 + quant_error)
            << Describe(c) << " at m=" << m << " n=" << n;
      }
    }
    for (int64_t m = 0; m < c.m; ++m) {  // padding columns of the output stay untouched
      for (int64_t j = c.n; j < out_stride; ++j) {
        ASSERT_EQ(out[static_cast<size_t>(m * out_stride + j)], kSentinel);
      }
    }
  }
}

// The source type each format packs exactly (kI8x8: from Q8_0).
DType SourceFor(PackedFormat format) {
  switch (format) {
    case PackedFormat::kQ8_0x8:
    case PackedFormat::kI8x8:
      return DType::kQ8_0;
    case PackedFormat::kQ4_0x8:
      return DType::kQ4_0;
    case PackedFormat::kQ4_Kx8:
      return DType::kQ4_K;
    case PackedFormat::kQ5_Kx8:
      return DType::kQ5_K;
    case PackedFormat::kQ6_Kx8:
      return DType::kQ6_K;
    case PackedFormat::kF16x8:
      return DType::kF16;
    case PackedFormat::kF32x8:
      return DType::kF32;
  }
  return DType::kF32;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // {100, 40, 3072}: the SIMD drivers cut M into chunks whose activations fit L2 (48 tokens of
  // 3072 columns) and prepare each group's weights again per chunk; 40 rows are two AVX-512
  // group pairs and an odd group.
  const std::vector<std::vector<int64_t>> block_sizes = {
      {1, 8, 32},    {1, 13, 64},   {3, 40, 96},  {5, 203, 576}, {7, 64, 3072},
      {33, 24, 128}, {4, 16, 1536}, {9, 96, 576}, {2, 1, 32},    {100, 40, 3072}};
  for (const auto& s : block_sizes) {
    cases.push_back({PackedFormat::kQ8_0x8, DType::kQ8_0, s[0], s[1], s[2]});
    cases.push_back({PackedFormat::kQ4_0x8, DType::kQ4_0, s[0], s[1], s[2]});
    cases.push_back({PackedFormat::kF16x8, DType::kF16, s[0], s[1], s[2]});
    cases.push_back({PackedFormat::kF32x8, DType::kF32, s[0], s[1], s[2]});
  }
  // Q4_K into Q4_Kx8, Q5_K into Q5_Kx8 and Q6_K into Q6_Kx8 (K a multiple of their 256-value
  // super-blocks), and other sources through those types' quantizers.
  for (const auto& s : std::vector<std::vector<int64_t>>{{5, 21, 512},
                                                         {1, 13, 256},
                                                         {9, 96, 768},
                                                         {100, 40, 3072},
                                                         {7, 64, 3072},
                                                         {33, 24, 256},
                                                         {4, 16, 1536},
                                                         {2, 1, 256}}) {
    cases.push_back({PackedFormat::kQ4_Kx8, DType::kQ4_K, s[0], s[1], s[2]});
    cases.push_back({PackedFormat::kQ5_Kx8, DType::kQ5_K, s[0], s[1], s[2]});
    cases.push_back({PackedFormat::kQ6_Kx8, DType::kQ6_K, s[0], s[1], s[2]});
  }
  // Repacked sources, and float formats with K not a multiple of 32.
  cases.push_back({PackedFormat::kQ8_0x8, DType::kQ4_K, 5, 21, 512});
  cases.push_back({PackedFormat::kQ4_Kx8, DType::kF16, 6, 19, 512});
  cases.push_back({PackedFormat::kQ8_0x8, DType::kQ6_K, 3, 16, 256});
  cases.push_back({PackedFormat::kQ6_Kx8, DType::kF32, 3, 27, 768});
  cases.push_back({PackedFormat::kQ5_Kx8, DType::kF16, 4, 25, 512});
  cases.push_back({PackedFormat::kQ8_0x8, DType::kF16, 6, 19, 160});
  cases.push_back({PackedFormat::kF32x8, DType::kBF16, 3, 9, 64});
  cases.push_back({PackedFormat::kF16x8, DType::kF16, 2, 11, 7});
  cases.push_back({PackedFormat::kF32x8, DType::kF32, 5, 17, 45});
  // The NPU-style per-row int8 format, from several sources, K a multiple of 4 only.
  for (const auto& s : block_sizes) {
    cases.push_back({PackedFormat::kI8x8, DType::kQ8_0, s[0], s[1], s[2]});
  }
  cases.push_back({PackedFormat::kI8x8, DType::kF32, 6, 23, 172});
  cases.push_back({PackedFormat::kI8x8, DType::kF32, 1, 9, 44});
  cases.push_back({PackedFormat::kI8x8, DType::kF16, 5, 40, 4});
  cases.push_back({PackedFormat::kI8x8, DType::kQ4_K, 4, 17, 256});
  return cases;
}

TEST(MatMulTest, ScalarMatchesFloatGemm) {
  uint64_t seed = 100;
  for (const Case& c : Cases()) {
    const Problem p = MakeProblem(c, ScalarKernels(), seed += 10);
    const int64_t out_stride = c.n + 3;
    const std::vector<float> out =
        RunMatMul(ScalarKernels(), p, out_stride, {{0, c.m}}, {{0, c.n}});
    CheckAgainstFloat(p, out, out_stride);
  }
}

TEST(MatMulTest, SimdMatchesScalarExactly) {
  for (const KernelSet* set : SimdSets()) {
    uint64_t seed = 500;
    for (const Case& c : Cases()) {
      const Problem p = MakeProblem(c, ScalarKernels(), seed += 10);
      const int64_t out_stride = c.n + 3;
      const std::vector<float> want =
          RunMatMul(ScalarKernels(), p, out_stride, {{0, c.m}}, {{0, c.n}});
      const std::vector<float> got = RunMatMul(*set, p, out_stride, {{0, c.m}}, {{0, c.n}});
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << set->name << " " << Describe(c) << " at " << i;
      }
      CheckAgainstFloat(p, got, out_stride);
    }
  }
}

// Ranges that cut groups of 8 rows and tiles of tokens give the same bits as one call.
TEST(MatMulTest, RangeSplitsGiveIdenticalResults) {
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  for (const KernelSet* set : sets) {
    for (PackedFormat format : {PackedFormat::kQ8_0x8, PackedFormat::kQ4_0x8, PackedFormat::kQ4_Kx8,
                                PackedFormat::kQ5_Kx8, PackedFormat::kQ6_Kx8, PackedFormat::kF16x8,
                                PackedFormat::kF32x8, PackedFormat::kI8x8}) {
      const Case c{format, SourceFor(format), 11, 45,
                   PackedColumnMultiple(format) == 256 ? 256 : 96};
      const Problem p = MakeProblem(c, *set, 77);
      const std::vector<float> whole = RunMatMul(*set, p, c.n, {{0, c.m}}, {{0, c.n}});
      const std::vector<float> split =
          RunMatMul(*set, p, c.n, {{0, 1}, {1, 6}, {6, 11}}, {{0, 5}, {5, 21}, {21, 24}, {24, 45}});
      for (size_t i = 0; i < whole.size(); ++i) {
        ASSERT_EQ(split[i], whole[i]) << set->name << " " << Describe(c) << " at " << i;
      }
      // A sub-block leaves everything else untouched.
      const std::vector<float> part = RunMatMul(*set, p, c.n, {{2, 5}}, {{3, 30}});
      for (int64_t m = 0; m < c.m; ++m) {
        for (int64_t n = 0; n < c.n; ++n) {
          const size_t i = static_cast<size_t>(m * c.n + n);
          const bool inside = m >= 2 && m < 5 && n >= 3 && n < 30;
          ASSERT_EQ(part[i], inside ? whole[i] : kSentinel)
              << set->name << " m " << m << " n " << n;
        }
      }
    }
  }
}

TEST(MatMulTest, AccumulateAddsToTheOutput) {
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  for (const KernelSet* set : sets) {
    for (PackedFormat format : {PackedFormat::kQ8_0x8, PackedFormat::kQ4_0x8, PackedFormat::kQ4_Kx8,
                                PackedFormat::kQ5_Kx8, PackedFormat::kQ6_Kx8, PackedFormat::kF16x8,
                                PackedFormat::kI8x8}) {
      const Case c{format, SourceFor(format), 6, 21,
                   PackedColumnMultiple(format) == 256 ? 256 : 64};
      const Problem p = MakeProblem(c, *set, 9);
      const std::vector<float> plain = RunMatMul(*set, p, c.n, {{0, c.m}}, {{0, c.n}});
      const std::vector<float> base = RandomFloats(10, c.m * c.n);
      std::vector<float> out = base;
      set->matmul(p.weights.view, p.Input(), MatMulOutput{out.data(), c.n, true}, 0, c.m, 0, c.n);
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], base[i] + plain[i]) << set->name << " at " << i;
      }
    }
  }
}

// The block formats on every count of tokens from 1 to 9 (the SIMD kernels tile tokens by 4,
// then 2 — neon-i8mm's smmla works on pairs — and finish with one), from even and odd first
// rows, on N ranges that start and end inside groups, written and accumulated: the same bits
// as the scalar kernel, and nothing outside the block changes.
TEST(MatMulTest, BlockFormatsMatchScalarOnEveryTokenCount) {
  const std::vector<std::pair<int64_t, int64_t>> n_ranges = {
      {0, 45}, {3, 29}, {8, 16}, {13, 14}, {40, 45}};
  for (const KernelSet* set : SimdSets()) {
    for (PackedFormat format : {PackedFormat::kQ8_0x8, PackedFormat::kQ4_0x8, PackedFormat::kQ4_Kx8,
                                PackedFormat::kQ5_Kx8, PackedFormat::kQ6_Kx8}) {
      const Case c{format, SourceFor(format), 12, 45,
                   PackedColumnMultiple(format) == 256 ? 256 : 128};
      const Problem p = MakeProblem(c, ScalarKernels(), 31);
      const std::vector<float> base = RandomFloats(32, c.m * c.n);
      for (int64_t m_begin : {0, 1, 3}) {
        for (int64_t m_end = m_begin + 1; m_end <= std::min(c.m, m_begin + 9); ++m_end) {
          for (const auto& [n_begin, n_end] : n_ranges) {
            for (bool accumulate : {false, true}) {
              std::vector<float> want = base;
              std::vector<float> got = base;
              ScalarKernels().matmul(p.weights.view, p.Input(),
                                     MatMulOutput{want.data(), c.n, accumulate}, m_begin, m_end,
                                     n_begin, n_end);
              set->matmul(p.weights.view, p.Input(), MatMulOutput{got.data(), c.n, accumulate},
                          m_begin, m_end, n_begin, n_end);
              ASSERT_EQ(got, want)
                  << set->name << " " << Describe(c) << " rows [" << m_begin << ", " << m_end
                  << ") columns [" << n_begin << ", " << n_end << ") accumulate " << accumulate;
            }
          }
        }
      }
    }
  }
}

// Split over N by a thread pool (as the graph runtime does), and over M and N together:
// the same bits as one call.
TEST(MatMulTest, ThreadPoolSplitsGiveIdenticalResults) {
  auto pool = ThreadPool::Create({.num_threads = 3});
  ASSERT_TRUE(pool.ok());
  const KernelSet& set = BestKernels();
  for (PackedFormat format :
       {PackedFormat::kQ8_0x8, PackedFormat::kQ4_0x8, PackedFormat::kQ4_Kx8, PackedFormat::kQ5_Kx8,
        PackedFormat::kQ6_Kx8, PackedFormat::kF16x8, PackedFormat::kI8x8}) {
    const Case c{format, SourceFor(format), 37, 203,
                 PackedColumnMultiple(format) == 256 ? 256 : 192};
    const Problem p = MakeProblem(c, set, 21);
    const std::vector<float> whole = RunMatMul(set, p, c.n, {{0, c.m}}, {{0, c.n}});
    std::vector<float> by_n(whole.size(), kSentinel);
    const MatMulOutput out_n{by_n.data(), c.n, false};
    const int64_t num_groups = (c.n + kPackRows - 1) / kPackRows;
    (*pool)->ParallelFor(num_groups, 2, [&](int64_t g0, int64_t g1) {
      set.matmul(p.weights.view, p.Input(), out_n, 0, c.m, g0 * kPackRows,
                 std::min(c.n, g1 * kPackRows));
    });
    ASSERT_EQ(by_n, whole) << PackedFormatName(format);
    std::vector<float> by_mn(whole.size(), kSentinel);
    const MatMulOutput out_mn{by_mn.data(), c.n, false};
    // Work items: 5 token blocks of 8 x 4 column blocks of 56.
    (*pool)->ParallelFor(20, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t m0 = item / 4 * 8;
        const int64_t n0 = item % 4 * 56;
        set.matmul(p.weights.view, p.Input(), out_mn, m0, std::min(c.m, m0 + 8), n0,
                   std::min(c.n, n0 + 56));
      }
    });
    ASSERT_EQ(by_mn, whole) << PackedFormatName(format);
  }
}

// Every row of a 24 x 512 matrix made of copies of one K-quant super-block `block`, packed as
// `format`, against activations of +1 (even tokens) and -1 (odd ones), which quantize to
// +-127: each output must be +-`row_value`, on every set and token count (1 token runs the
// decode tiles, 2-6 the prepared ones).
template <typename Block>
void ExpectExtremeBlocksExact(const Block& block, PackedFormat format, DType dtype,
                              float row_value) {
  constexpr int64_t kRows = 24, kCols = 512, kTokens = 6;
  std::vector<uint8_t> src(static_cast<size_t>(kRows * kCols / kQK_K) * sizeof(block));
  for (size_t i = 0; i < src.size(); i += sizeof(block))
    std::memcpy(&src[i], &block, sizeof(block));
  const OwnedPacked w = Pack(format, dtype, src, kRows, kCols);
  std::vector<float> x(static_cast<size_t>(kTokens * kCols));
  for (int64_t m = 0; m < kTokens; ++m) {
    for (int64_t k = 0; k < kCols; ++k)
      x[static_cast<size_t>(m * kCols + k)] = m % 2 ? -1.0f : 1.0f;
  }
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  for (const KernelSet* set : sets) {
    const int64_t stride = QuantizedRowBytes(kCols);
    std::vector<uint8_t> q8(static_cast<size_t>(stride * kTokens));
    for (int64_t m = 0; m < kTokens; ++m) {
      set->quantize_row(x.data() + m * kCols, kCols, q8.data() + m * stride);
    }
    MatMulInput input;
    input.q8 = q8.data();
    input.q8_stride = stride;
    for (int64_t tokens : {int64_t{1}, int64_t{2}, int64_t{3}, kTokens}) {
      std::vector<float> out(static_cast<size_t>(kTokens * kRows), kSentinel);
      set->matmul(w.view, input, MatMulOutput{out.data(), kRows, false}, 0, tokens, 0, kRows);
      for (int64_t m = 0; m < tokens; ++m) {
        const float want = (m % 2 ? -1.0f : 1.0f) * row_value;
        for (int64_t n = 0; n < kRows; ++n) {
          ASSERT_NEAR(out[static_cast<size_t>(m * kRows + n)], want, 1e-3f * std::fabs(want))
              << set->name << " tokens " << tokens << " m " << m << " n " << n;
        }
      }
    }
  }
}

// Q5_K's largest values (q = 31 everywhere) against activations of +-127 everywhere: every
// int16 pair of products is at its bound (2 * 31 * 127), so a block's 8 of them overflow int16
// unless the kernel widens them in time. Every kernel gives the scalar one's bits and the
// value 31 d * 127 d_a per column.
TEST(MatMulTest, Q5KLargestProductsStayExact) {
  BlockQ5_K block{};
  block.d = F32ToF16(1.0f / 64);
  std::memset(block.scales, 0, sizeof(block.scales));
  for (int j = 0; j < 4; ++j) block.scales[j] = 1;  // scales 0-3 = 1, 4-7 = 1, mins 0
  for (int j = 8; j < 12; ++j) block.scales[j] = 1;
  std::memset(block.qh, 0xff, sizeof(block.qh));
  std::memset(block.qs, 0xff, sizeof(block.qs));
  ExpectExtremeBlocksExact(block, PackedFormat::kQ5_Kx8, DType::kQ5_K, 31.0f / 64.0f * 512);
}

// Q6_K's extremes: q = 63 (w = 31) and q = 0 (w = -32) with scales of 127 and -128. The AVX2
// one-token tile keeps q unsigned and adds two chunks' products (up to 4 * 63 * 127) in int16,
// and its offset term holds 16 * (a half's activation sum) = 16 * 16 * 127 in int16: both at
// the edge of the range, so an extra chunk or a doubled term overflows and fails here.
TEST(MatMulTest, Q6KLargestProductsStayExact) {
  for (const auto& [bits, scale] : {std::pair{0xff, 127}, std::pair{0x00, -128}}) {
    BlockQ6_K block{};
    block.d = F32ToF16(1.0f / 1024);
    std::memset(block.ql, bits, sizeof(block.ql));
    std::memset(block.qh, bits, sizeof(block.qh));
    std::memset(block.scales, static_cast<int8_t>(scale), sizeof(block.scales));
    const float w = bits ? 31.0f : -32.0f;
    SCOPED_TRACE(bits);
    ExpectExtremeBlocksExact(block, PackedFormat::kQ6_Kx8, DType::kQ6_K,
                             w * static_cast<float>(scale) / 1024.0f * 512);
  }
}

// Empty ranges write nothing.
TEST(MatMulTest, EmptyRangesAreNoOps) {
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  for (const KernelSet* set : sets) {
    const Case c{PackedFormat::kQ8_0x8, DType::kQ8_0, 3, 16, 32};
    const Problem p = MakeProblem(c, *set, 3);
    const std::vector<float> out = RunMatMul(*set, p, c.n, {{1, 1}, {0, 3}}, {{4, 4}});
    for (float v : out) ASSERT_EQ(v, kSentinel);
  }
}

}  // namespace
}  // namespace reprise::kernels
