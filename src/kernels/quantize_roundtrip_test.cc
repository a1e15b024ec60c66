// QuantizeRow followed by DequantizeRow on deterministic data, with the error bound of each
// type stated next to its check: per element for the 32-element types (they follow ggml's
// reference rounding, which is checked too), RMS and worst case for the K-quants, exactness
// for F16/BF16 on representable values. Plus zero rows, extreme magnitudes and rows of many
// blocks with very different scales.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "kernels/quantize.h"

namespace reprise::kernels {
namespace {

using Bytes = std::vector<uint8_t>;

const DType kQuantizable[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                              DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                              DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

Bytes Quantize(DType dtype, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  Bytes out(RowBytes(dtype, n));
  QuantizeRow(dtype, x.data(), out.data(), n);
  return out;
}

std::vector<float> Dequantize(DType dtype, const Bytes& row, size_t n) {
  std::vector<float> out(n);
  DequantizeRow(dtype, row.data(), out.data(), static_cast<int64_t>(n));
  return out;
}

// Gaussian values whose scale changes from block to block (10^-2 .. 10^2 times `scale`), so
// that every row holds blocks of very different magnitudes.
std::vector<float> RandomRow(uint64_t seed, size_t n, size_t block, float scale) {
  Random rng(seed);
  std::vector<float> x(n);
  for (size_t start = 0; start < n; start += block) {
    const float block_scale = scale * std::pow(10.0f, 4.0f * rng.NextFloat() - 2.0f);
    for (size_t i = start; i < start + block; ++i) {
      x[i] = block_scale * static_cast<float>(rng.NextGaussian());
    }
  }
  return x;
}

float HalfAt(const Bytes& b, size_t offset) {
  uint16_t bits;
  std::memcpy(&bits, &b[offset], sizeof(bits));
  return F16ToF32(bits);
}

constexpr size_t kRow = 32 * 64;  // 64 blocks of 32, 8 super-blocks of 256

// Q8_0: d = amax / 127 stored as a half, q = round(x / d) (half away from zero, computed
// with the unrounded d). Bound per element: |x - q * d16| <= d/2 + 127 * |d - d16|.
TEST(QuantizeRoundTripTest, Q8_0FollowsReferenceRoundingAndBound) {
  for (float scale : {1.0f, 1e-3f, 30.0f}) {
    const std::vector<float> x = RandomRow(8, kRow, 32, scale);
    const Bytes q = Quantize(DType::kQ8_0, x);
    const std::vector<float> y = Dequantize(DType::kQ8_0, q, kRow);
    for (size_t b = 0; b < kRow / 32; ++b) {
      const float* xb = &x[32 * b];
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
      const float d = amax / 127.0f;
      const float d16 = HalfAt(q, 34 * b);
      ASSERT_EQ(F32ToF16(d16), F32ToF16(d)) << "block " << b;
      const float bound = 0.5f * d + 127.0f * std::fabs(d - d16) + 1e-6f * amax;
      for (int j = 0; j < 32; ++j) {
        const auto qj = static_cast<int8_t>(q[34 * b + 2 + j]);
        ASSERT_EQ(qj, static_cast<int>(std::round(xb[j] * (1.0f / d)))) << b << " " << j;
        ASSERT_LE(std::fabs(xb[j] - y[32 * b + j]), bound) << b << " " << j;
      }
    }
  }
}

// Q4_0 / Q5_0: d = max / -2^(bits-1) with max the signed value of largest magnitude,
// q = min(2^bits - 1, floor(x / d + 2^(bits-1) + 0.5)). Bound per element: d/2 + 16 * |d - d16|,
// except values that clip at the top code (x / d > 2^(bits-1) - 0.5): d + 16 * |d - d16|.
void CheckSymmetric(DType dtype, int bits, size_t block_bytes, size_t qs_offset) {
  const float half_range = static_cast<float>(1 << (bits - 1));
  const int top = (1 << bits) - 1;
  const std::vector<float> x = RandomRow(bits, kRow, 32, 1.0f);
  const Bytes q = Quantize(dtype, x);
  const std::vector<float> y = Dequantize(dtype, q, kRow);
  for (size_t b = 0; b < kRow / 32; ++b) {
    const float* xb = &x[32 * b];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), max = xb[j];
    }
    const float d = max / -half_range;
    const float d16 = HalfAt(q, block_bytes * b);
    ASSERT_EQ(F32ToF16(d16), F32ToF16(d)) << DTypeName(dtype) << " block " << b;
    uint32_t qh = 0;
    if (bits == 5) std::memcpy(&qh, &q[block_bytes * b + 2], sizeof(qh));
    for (int j = 0; j < 32; ++j) {
      const uint8_t byte = q[block_bytes * b + qs_offset + static_cast<size_t>(j % 16)];
      const int code = (j < 16 ? byte & 0xf : byte >> 4) | static_cast<int>(((qh >> j) & 1) << 4);
      const float t = xb[j] * (1.0f / d) + half_range + 0.5f;
      ASSERT_EQ(code, std::min(top, static_cast<int>(std::floor(t)))) << b << " " << j;
      const bool clipped = t >= static_cast<float>(top + 1);
      const float bound =
          (clipped ? 1.0f : 0.5f) * std::fabs(d) + 16.0f * std::fabs(d - d16) + 1e-6f * amax;
      ASSERT_LE(std::fabs(xb[j] - y[32 * b + j]), bound)
          << DTypeName(dtype) << " " << b << " " << j;
    }
  }
}

TEST(QuantizeRoundTripTest, Q4_0FollowsReferenceRoundingAndBound) {
  CheckSymmetric(DType::kQ4_0, 4, 18, 2);
}

TEST(QuantizeRoundTripTest, Q5_0FollowsReferenceRoundingAndBound) {
  CheckSymmetric(DType::kQ5_0, 5, 22, 6);
}

// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min. Bound per element:
// d/2 + (2^bits - 1) * |d - d16| + |min - m16|.
void CheckAffine(DType dtype, int bits, size_t block_bytes) {
  const float nmax = static_cast<float>((1 << bits) - 1);
  const std::vector<float> x = RandomRow(10 + bits, kRow, 32, 1.0f);
  const Bytes q = Quantize(dtype, x);
  const std::vector<float> y = Dequantize(dtype, q, kRow);
  for (size_t b = 0; b < kRow / 32; ++b) {
    const float* xb = &x[32 * b];
    float lo = xb[0], hi = xb[0];
    for (int j = 0; j < 32; ++j) lo = std::fmin(lo, xb[j]), hi = std::fmax(hi, xb[j]);
    const float d = (hi - lo) / nmax;
    const float d16 = HalfAt(q, block_bytes * b);
    const float m16 = HalfAt(q, block_bytes * b + 2);
    ASSERT_EQ(F32ToF16(d16), F32ToF16(d));
    ASSERT_EQ(F32ToF16(m16), F32ToF16(lo));
    const float bound =
        0.5f * d + nmax * std::fabs(d - d16) + std::fabs(lo - m16) + 1e-6f * (hi - lo);
    for (int j = 0; j < 32; ++j) {
      ASSERT_LE(std::fabs(xb[j] - y[32 * b + j]), bound)
          << DTypeName(dtype) << " " << b << " " << j;
    }
  }
}

TEST(QuantizeRoundTripTest, Q4_1Bound) { CheckAffine(DType::kQ4_1, 4, 20); }
TEST(QuantizeRoundTripTest, Q5_1Bound) { CheckAffine(DType::kQ5_1, 5, 24); }

// K-quants on Gaussian data: the error of each super-block relative to the RMS of its
// values, and each element's error relative to its super-block's largest magnitude. (For
// comparison, llama.cpp's reference quantizers give RMS ratios of about 0.073 (Q4_K), 0.037
// (Q5_K) and 0.019 (Q6_K) on such data.)
struct KBound {
  DType dtype;
  double max_rms;  // RMS error / RMS value, per super-block
  double max_abs;  // |error| / max |value|, per element
};

TEST(QuantizeRoundTripTest, KQuantErrorBounds) {
  for (const KBound& k : {KBound{DType::kQ3_K, 0.17, 0.2}, KBound{DType::kQ4_K, 0.09, 0.09},
                          KBound{DType::kQ5_K, 0.05, 0.045}, KBound{DType::kQ6_K, 0.025, 0.03}}) {
    for (float scale : {1.0f, 1e3f}) {
      const std::vector<float> x = RandomRow(100, kRow, 256, scale);
      const std::vector<float> y = Dequantize(k.dtype, Quantize(k.dtype, x), kRow);
      for (size_t b = 0; b < kRow / 256; ++b) {
        double err2 = 0.0, val2 = 0.0, amax = 0.0, emax = 0.0;
        for (size_t i = 256 * b; i < 256 * (b + 1); ++i) {
          const double e = static_cast<double>(x[i]) - y[i];
          err2 += e * e;
          val2 += static_cast<double>(x[i]) * x[i];
          amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
          emax = std::max(emax, std::fabs(e));
        }
        EXPECT_LE(std::sqrt(err2 / val2), k.max_rms) << DTypeName(k.dtype) << " block " << b;
        EXPECT_LE(emax / amax, k.max_abs) << DTypeName(k.dtype) << " block " << b;
      }
    }
  }
}
// Every finite half (and bfloat16) survives F32 -> row -> F32 bit for bit; other floats
// round to nearest even exactly as base/float16.h does.
void CheckSixteenBitExact(DType dtype, float (*to_f32)(uint16_t), uint16_t (*from_f32)(float)) {
  std::vector<float> x(65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = to_f32(static_cast<uint16_t>(h));
    x[h] = std::isnan(f) ? 0.0f : f;
  }
  const Bytes q = Quantize(dtype, x);
  const std::vector<float> y = Dequantize(dtype, q, x.size());
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t bits;
    std::memcpy(&bits, &q[2 * h], sizeof(bits));
    ASSERT_EQ(bits, from_f32(x[h])) << DTypeName(dtype) << " " << h;
    ASSERT_EQ(std::memcmp(&y[h], &x[h], sizeof(float)), 0) << DTypeName(dtype) << " " << h;
  }
  const std::vector<float> r = RandomRow(16, 1024, 32, 1.0f);
  const Bytes qr = Quantize(dtype, r);
  for (size_t i = 0; i < r.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, &qr[2 * i], sizeof(bits));
    ASSERT_EQ(bits, from_f32(r[i])) << DTypeName(dtype) << " " << i;
  }
}

TEST(QuantizeRoundTripTest, SixteenBitTypesAreExactOnRepresentableValues) {
  CheckSixteenBitExact(DType::kF16, F16ToF32, F32ToF16);
  CheckSixteenBitExact(DType::kBF16, BF16ToF32, F32ToBF16);
}

TEST(QuantizeRoundTripTest, F32IsACopy) {
  const std::vector<float> x = RandomRow(32, 96, 32, 1.0f);
  const std::vector<float> y = Dequantize(DType::kF32, Quantize(DType::kF32, x), x.size());
  EXPECT_EQ(x, y);
}

TEST(QuantizeRoundTripTest, ZeroRowsStayZero) {
  for (DType dtype : kQuantizable) {
    const std::vector<float> x(512, 0.0f);
    const std::vector<float> y = Dequantize(dtype, Quantize(dtype, x), x.size());
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(y[i], 0.0f) << DTypeName(dtype) << " " << i;  // also fails on NaN
    }
  }
}

// Bound on |error| relative to the largest magnitude of the element's block (super-block
// for the K-quants), whatever the shape of the block: Q8_0 1/254 (+ half rounding of d),
// Q4_0 d = amax/8 at the clipped end, Q5_0 amax/16, Q4_1 d/2 <= amax/15, Q5_1 amax/31.
double ShapeBound(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return 0.0045;
    case DType::kQ4_0:
      return 0.13;
    case DType::kQ5_0:
      return 0.065;
    case DType::kQ4_1:
      return 0.068;
    case DType::kQ5_1:
      return 0.034;
    case DType::kQ3_K:
      return 0.2;
    case DType::kQ4_K:
      return 0.08;
    case DType::kQ5_K:
      return 0.04;
    case DType::kQ6_K:
      return 0.025;
    default:
      return 0.0;
  }
}

// Blocks of 256 values of very different shapes; the bound must hold for all of them.
std::vector<float> ShapedRow() {
  Random rng(7);
  std::vector<float> x;
  auto add = [&](auto value) {
    for (int i = 0; i < 256; ++i) x.push_back(static_cast<float>(value(i)));
  };
  add([&](int) { return rng.NextGaussian(); });
  add([](int) { return 3.0; });
  add([](int) { return -0.7; });
  add([&](int i) { return i == 77 ? 1000.0 : 0.01 * rng.NextGaussian(); });  // outlier
  add([&](int) { return 1.0 + rng.NextDouble(); });                          // all positive
  add([&](int) { return -1.0 - rng.NextDouble(); });                         // all negative
  add([&](int i) { return i < 128 ? 0.0 : rng.NextGaussian(); });            // half zeros
  add([&](int) { return 1e4 * rng.NextGaussian(); });                        // large
  add([](int i) { return i % 2 ? 1.0 : -1.0; });
  add([&](int i) { return i % 32 == 5 ? -50.0 : rng.NextGaussian(); });  // per-block outliers
  return x;
}

TEST(QuantizeRoundTripTest, BoundHoldsForEveryBlockShape) {
  const std::vector<float> x = ShapedRow();
  for (DType dtype : kQuantizable) {
    const double bound = ShapeBound(dtype);
    if (bound == 0.0) continue;
    const size_t block = GetDTypeInfo(dtype).block_elements;
    const std::vector<float> y = Dequantize(dtype, Quantize(dtype, x), x.size());
    for (size_t start = 0; start < x.size(); start += block) {
      double amax = 0.0;
      for (size_t i = start; i < start + block; ++i) amax = std::max(amax, std::fabs(double{x[i]}));
      for (size_t i = start; i < start + block; ++i) {
        ASSERT_LE(std::fabs(double{x[i]} - y[i]), bound * amax)
            << DTypeName(dtype) << " element " << i << " value " << x[i];
      }
    }
  }
}

// Magnitudes so small that the half-float scales underflow: block types flush toward zero,
// never to NaN, infinity or anything larger than the input's largest magnitude.
TEST(QuantizeRoundTripTest, TinyValuesFlushTowardZero) {
  for (float scale : {1e-7f, 1e-20f, 1e-40f}) {
    const std::vector<float> x = RandomRow(9, 512, 512, scale);
    double amax = 0.0;
    for (float v : x) amax = std::max(amax, std::fabs(double{v}));
    for (DType dtype : kQuantizable) {
      const std::vector<float> y = Dequantize(dtype, Quantize(dtype, x), x.size());
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << DTypeName(dtype) << " " << i;
        if (GetDTypeInfo(dtype).block_elements == 1) continue;  // rounds per element
        ASSERT_LE(std::fabs(double{y[i]}), amax) << DTypeName(dtype) << " scale " << scale;
      }
    }
  }
}

// Output rows need no alignment either.
TEST(QuantizeRoundTripTest, MisalignedOutputGivesTheSameBytes) {
  const std::vector<float> x = RandomRow(12, 512, 32, 1.0f);
  for (DType dtype : kQuantizable) {
    const Bytes aligned = Quantize(dtype, x);
    Bytes buffer(aligned.size() + 1);
    QuantizeRow(dtype, x.data(), buffer.data() + 1, static_cast<int64_t>(x.size()));
    EXPECT_TRUE(std::equal(aligned.begin(), aligned.end(), buffer.begin() + 1)) << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace reprise::kernels
