// Row kernels: scalar against double-precision definitions, SIMD against scalar, on random
// rows of odd lengths (fixed seeds). Tolerances, relative to the values' magnitude:
//  - quantize_row: identical bytes (same d, products and round-to-nearest-even);
//  - rms_norm: 1e-6 (only the order of the sum of squares differs);
//  - rms_norm_quantize: codes within 1 (a value at a rounding tie may land either side when
//    the two norms differ in the last bit), scales within 1e-6;
//  - rope: 1e-6 absolute on unit-scale values (FMA versus separate rounding);
//  - silu_mul, softmax: 2e-6 relative (the vector exp is within 1e-7, plus one division),
//    and for softmax n * 2^-24 more for its float sum;
//  - add, f32 <-> f16: exact.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/float16.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_set.h"
#include "kernels/kernel_test_util.h"

namespace reprise::kernels {
namespace {

using testing::RandomFloats;
using testing::SimdSets;

const std::vector<int64_t> kLengths = {1, 7, 8, 9, 31, 64, 100, 576, 1537};
const std::vector<int64_t> kBlockLengths = {32, 64, 96, 576, 1536, 3072};

std::vector<const KernelSet*> AllSets() {
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  return sets;
}

TEST(KernelSetTest, BestIsTheWidestSetSupported) {
  ASSERT_NE(ScalarKernels().matmul, nullptr);
  // A harness that knows the CPU (scripts/test-arm64.sh picks qemu's) says what to expect.
  if (const char* expected = std::getenv("REPRISE_EXPECT_KERNELS")) {
    EXPECT_STREQ(BestKernels().name, expected);
  }
  if (std::getenv("REPRISE_KERNELS") != nullptr) GTEST_SKIP() << "REPRISE_KERNELS caps the choice";
  if (Avx512VnniKernels() != nullptr) {
    EXPECT_EQ(&BestKernels(), Avx512VnniKernels());
    EXPECT_STREQ(BestKernels().name, "avx512-vnni");
    // The matmul and attention differ from the AVX2 set; the rest is AVX2's.
    ASSERT_NE(Avx2Kernels(), nullptr);
    EXPECT_NE(BestKernels().attention, Avx2Kernels()->attention);
    EXPECT_NE(BestKernels().matmul, Avx2Kernels()->matmul);
    EXPECT_EQ(BestKernels().rms_norm, Avx2Kernels()->rms_norm);
  } else if (Avx2Kernels() != nullptr) {
    EXPECT_EQ(&BestKernels(), Avx2Kernels());
    EXPECT_STREQ(BestKernels().name, "avx2");
  } else if (NeonI8mmKernels() != nullptr) {
    EXPECT_EQ(&BestKernels(), NeonI8mmKernels());
    EXPECT_STREQ(BestKernels().name, "neon-i8mm");
    // The matmul differs from the DotProd set; the rest is that set's.
    ASSERT_NE(NeonDotKernels(), nullptr);
    EXPECT_NE(BestKernels().matmul, NeonDotKernels()->matmul);
    EXPECT_EQ(BestKernels().attention, NeonDotKernels()->attention);
    EXPECT_EQ(BestKernels().rms_norm, NeonDotKernels()->rms_norm);
  } else if (NeonDotKernels() != nullptr) {
    EXPECT_EQ(&BestKernels(), NeonDotKernels());
    EXPECT_STREQ(BestKernels().name, "neon-dotprod");
    EXPECT_NE(BestKernels().matmul, ScalarKernels().matmul);
  } else {
    EXPECT_EQ(&BestKernels(), &ScalarKernels());
  }
  // Every entry of every set is filled.
  for (const KernelSet* set : AllSets()) {
    EXPECT_TRUE(set->matmul && set->quantize_row && set->static_quantize_row && set->rms_norm &&
                set->rms_norm_quantize && set->rope && set->silu_mul && set->softmax && set->add &&
                set->f32_to_f16 && set->f16_to_f32 && set->attention)
        << set->name;
  }
}

TEST(ElementwiseTest, QuantizeRowMatchesDefinition) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t k : kBlockLengths) {
      std::vector<float> x = RandomFloats(k, k, 3.0f);
      for (int64_t i = 0; i < 32; ++i) x[i] = 0.0f;  // an all-zero block: d = 0, q = 0
      std::vector<uint8_t> got(QuantizedRowBytes(k));
      set->quantize_row(x.data(), k, got.data());
      const QuantizedRowView row(got.data(), k);
      for (int64_t b = 0; b < k / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
        ASSERT_EQ(row.scale(b), amax / 127.0f);
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) {
          const int q = row.q[b * 32 + j];
          sum += q;
          ASSERT_LE(std::abs(q), 127);
          ASSERT_NEAR(q * row.scale(b), x[b * 32 + j], row.scale(b) * 0.5f * (1 + 1e-5f))
              << set->name << " k " << k << " at " << b * 32 + j;
        }
        ASSERT_EQ(row.sum(b), sum);
      }
      if (set != &ScalarKernels()) {
        std::vector<uint8_t> want(QuantizedRowBytes(k));
        ScalarKernels().quantize_row(x.data(), k, want.data());
        ASSERT_EQ(got, want) << set->name << " k " << k;
      }
    }
  }
}

// Static (per-tensor) quantization: round to nearest even, clamp to +-127 (values past the
// calibrated range saturate, as on an NPU), a NaN becomes -127; SIMD equals scalar at every
// length, tails included.
TEST(ElementwiseTest, StaticQuantizeRowRoundsAndSaturates) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t k : {1, 4, 31, 32, 45, 96, 172, 1000}) {
      std::vector<float> x = RandomFloats(k + 7, k, 3.0f);
      x[0] = 1000.0f;  // far past the range
      if (k > 1) x[1] = -1000.0f;
      if (k > 2) x[2] = std::nanf("");
      if (k > 3) x[3] = 2.5f * 0.05f;  // a tie: nearest even (2)
      const float scale = 0.05f;
      std::vector<int8_t> got(static_cast<size_t>(k));
      set->static_quantize_row(x.data(), k, 1.0f / scale, got.data());
      for (int64_t i = 0; i < k; ++i) {
        const float v = x[static_cast<size_t>(i)] * (1.0f / scale);
        int want;
        if (std::isnan(v)) {
          want = -127;
        } else {
          want = static_cast<int>(std::nearbyint(std::fmin(std::fmax(v, -127.0f), 127.0f)));
        }
        ASSERT_EQ(got[static_cast<size_t>(i)], want) << set->name << " k " << k << " at " << i;
      }
      EXPECT_EQ(got[0], 127);
      if (k > 2) {
        EXPECT_EQ(got[1], -127);
        EXPECT_EQ(got[2], -127);
      }
    }
  }
}

TEST(ElementwiseTest, RmsNorm) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t k : kLengths) {
      const std::vector<float> x = RandomFloats(k + 1, k, 2.0f);
      const std::vector<float> w = RandomFloats(k + 2, k);
      const float eps = 1e-5f;
      std::vector<float> out(k);
      set->rms_norm(x.data(), w.data(), k, eps, out.data());
      double sum = 0.0;
      for (float v : x) sum += static_cast<double>(v) * v;
      const double inv = 1.0 / std::sqrt(sum / k + eps);
      for (int64_t i = 0; i < k; ++i) {
        const double want = x[i] * inv * w[i];
        ASSERT_NEAR(out[i], want, 1e-6 * (std::fabs(want) + 1e-3)) << set->name << " k " << k;
      }
      // In place.
      std::vector<float> in_place = x;
      set->rms_norm(in_place.data(), w.data(), k, eps, in_place.data());
      ASSERT_EQ(in_place, out);
    }
  }
}

TEST(ElementwiseTest, RmsNormQuantizeMatchesNormThenQuantize) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t k : kBlockLengths) {
      const std::vector<float> x = RandomFloats(k + 3, k, 2.0f);
      const std::vector<float> w = RandomFloats(k + 4, k);
      std::vector<float> normed(k);
      ScalarKernels().rms_norm(x.data(), w.data(), k, 1e-6f, normed.data());
      std::vector<uint8_t> want(QuantizedRowBytes(k));
      ScalarKernels().quantize_row(normed.data(), k, want.data());
      std::vector<uint8_t> got(QuantizedRowBytes(k));
      set->rms_norm_quantize(x.data(), w.data(), k, 1e-6f, got.data());
      const QuantizedRowView g(got.data(), k);
      const QuantizedRowView r(want.data(), k);
      for (int64_t b = 0; b < k / 32; ++b) {
        ASSERT_NEAR(g.scale(b), r.scale(b), 1e-6f * r.scale(b)) << set->name;
        for (int j = 0; j < 32; ++j) ASSERT_LE(std::abs(g.q[b * 32 + j] - r.q[b * 32 + j]), 1);
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) sum += g.q[b * 32 + j];
        ASSERT_EQ(g.sum(b), sum);
      }
    }
  }
}

// RoPE against the rotation written out in double, for both pair layouts, partial rotary
// dimensions and per-pair frequency factors (Llama 3 style).
TEST(ElementwiseTest, RopeRotatesPairs) {
  const int64_t head_dim = 64;
  const int64_t num_heads = 3;
  const int64_t head_stride = 70;  // heads need not be packed
  std::vector<float> factors(head_dim / 2);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i) / 8;
  for (const KernelSet* set : AllSets()) {
    for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kNeox}) {
      for (int64_t rot_dim : {head_dim, int64_t{32}, int64_t{6}}) {
        for (const float* f : std::vector<const float*>{nullptr, factors.data()}) {
          for (int32_t position : {0, 1, 17, 4095, 131071}) {
            std::vector<float> inv_freq(rot_dim / 2);
            RopeInverseFrequencies(10000.0f, rot_dim, f, 1.0f, inv_freq.data());
            std::vector<float> cos(rot_dim / 2), sin(rot_dim / 2);
            RopeCosSin(position, inv_freq.data(), rot_dim / 2, cos.data(), sin.data());
            const std::vector<float> x = RandomFloats(position + rot_dim, num_heads * head_stride);
            std::vector<float> got = x;
            set->rope(got.data(), num_heads, head_stride, rot_dim, cos.data(), sin.data(), style);
            for (int64_t h = 0; h < num_heads; ++h) {
              const float* in = x.data() + h * head_stride;
              const float* out = got.data() + h * head_stride;
              for (int64_t i = 0; i < rot_dim / 2; ++i) {
                double freq = std::pow(10000.0, -2.0 * i / rot_dim);
                if (f != nullptr) freq /= f[i];
                const double angle = position * freq;
                const int64_t i0 = style == RopeStyle::kInterleaved ? 2 * i : i;
                const int64_t i1 = style == RopeStyle::kInterleaved ? 2 * i + 1 : i + rot_dim / 2;
                const double a = in[i0];
                const double b = in[i1];
                // Angles up to 1.3e5 radians: the float inv_freq carries a relative error of
                // 2^-24, so allow position * inv_freq * 2^-24 radians on top.
                const double tol = 2e-6 + 4.0 * angle * 6e-8;
                ASSERT_NEAR(out[i0], a * std::cos(angle) - b * std::sin(angle), tol)
                    << set->name << " pos " << position << " pair " << i;
                ASSERT_NEAR(out[i1], a * std::sin(angle) + b * std::cos(angle), tol)
                    << set->name << " pos " << position << " pair " << i;
              }
              for (int64_t d = rot_dim; d < head_stride; ++d) ASSERT_EQ(out[d], in[d]);
            }
          }
        }
      }
    }
  }
}

TEST(ElementwiseTest, RopeInverseFrequenciesApplyScaleAndFactors) {
  std::vector<float> inv_freq(4);
  const float factors[4] = {1.0f, 2.0f, 4.0f, 8.0f};
  RopeInverseFrequencies(10000.0f, 8, factors, 0.5f, inv_freq.data());
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(inv_freq[i],
                    static_cast<float>(0.5 * std::pow(10000.0, -2.0 * i / 8) / factors[i]));
  }
}

TEST(ElementwiseTest, SiluMul) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t n : kLengths) {
      std::vector<float> gate = RandomFloats(n + 5, n, 4.0f);
      if (n > 3) gate[0] = 90.0f, gate[1] = -90.0f, gate[2] = 0.0f;
      const std::vector<float> up = RandomFloats(n + 6, n);
      std::vector<float> out(n);
      set->silu_mul(gate.data(), up.data(), n, out.data());
      for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        const double want = g / (1.0 + std::exp(-g)) * up[i];
        ASSERT_NEAR(out[i], want, 2e-6 * std::fabs(want) + 1e-30) << set->name << " i " << i;
      }
      std::vector<float> aliased = gate;  // out aliasing gate
      set->silu_mul(aliased.data(), up.data(), n, aliased.data());
      ASSERT_EQ(aliased, out);
    }
  }
}

TEST(ElementwiseTest, Softmax) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t n : kLengths) {
      std::vector<float> x = RandomFloats(n + 7, n, 5.0f);
      if (n > 2) x[1] = -INFINITY;  // a masked entry
      std::vector<float> got = x;
      set->softmax(got.data(), n);
      double max = -INFINITY;
      for (float v : x) max = std::fmax(max, v);
      double sum = 0.0;
      for (float v : x) sum += std::exp(v - max);
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(x[i] - max) / sum;
        // The float sum of n terms adds up to n * 2^-24 relative error.
        const double tol = (2e-6 + static_cast<double>(n) * 6e-8) * want + 1e-30;
        ASSERT_NEAR(got[i], want, tol) << set->name << " n " << n << " i " << i;
      }
    }
  }
}

TEST(ElementwiseTest, AddAndHalfConversionsAreExact) {
  for (const KernelSet* set : AllSets()) {
    for (int64_t n : kLengths) {
      const std::vector<float> a = RandomFloats(n + 8, n);
      const std::vector<float> b = RandomFloats(n + 9, n);
      std::vector<float> sum(n);
      set->add(a.data(), b.data(), n, sum.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]);

      // Values across the half range: normal, subnormal, overflowing, ties.
      std::vector<float> x = RandomFloats(n + 10, n, 100.0f);
      const float specials[] = {
          0.0f,   -0.0f, 1e-6f, -3e-7f, 65504.0f, 70000.0f, -1e9f, INFINITY, 1.0f + 1.0f / 2048,
          2049.0f};
      for (int64_t i = 0; i < n && i < 10; ++i) x[i] = specials[i];
      std::vector<uint16_t> half(n);
      set->f32_to_f16(x.data(), n, half.data());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(half[i], F32ToF16(x[i])) << set->name << " " << x[i];
      std::vector<float> back(n);
      set->f16_to_f32(half.data(), n, back.data());
      for (int64_t i = 0; i < n; ++i) {
        const float want = F16ToF32(half[i]);
        ASSERT_EQ(std::memcmp(&back[i], &want, sizeof(float)), 0) << set->name;
      }
    }
  }
}

}  // namespace
}  // namespace reprise::kernels
