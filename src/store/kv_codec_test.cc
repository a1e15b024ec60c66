// KV codecs: f16 is bit exact; INT8 + Hadamard stays within stated error bounds, beats plain
// INT8 on rows with outlier channels, and falls back to f16 for non-power-of-two head_dim.
#include "store/kv_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "store/store_test_util.h"

namespace reprise::store {
namespace {

// Relative RMS error of one row: ||decoded - original|| / ||original||.
double RowRelativeRms(std::span<const uint16_t> original, std::span<const uint16_t> decoded) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    const double x = F16ToF32(original[i]);
    const double y = F16ToF32(decoded[i]);
    error += (y - x) * (y - x);
    norm += x * x;
  }
  return norm == 0 ? std::sqrt(error) : std::sqrt(error / norm);
}

struct ErrorStats {
  double mean = 0;
  double max = 0;
};

ErrorStats RowErrors(const std::vector<uint16_t>& original, const std::vector<uint16_t>& decoded,
                     int head_dim) {
  ErrorStats stats;
  const size_t d = static_cast<size_t>(head_dim);
  const size_t rows = original.size() / d;
  for (size_t r = 0; r < rows; ++r) {
    const double e =
        RowRelativeRms(std::span(original).subspan(r * d, d), std::span(decoded).subspan(r * d, d));
    stats.mean += e / static_cast<double>(rows);
    stats.max = std::max(stats.max, e);
  }
  return stats;
}

// Plain per-row INT8 without the rotation, as the test's point of comparison.
std::vector<uint16_t> PlainInt8RoundTrip(const std::vector<uint16_t>& values, int head_dim) {
  std::vector<uint16_t> out(values.size());
  const size_t d = static_cast<size_t>(head_dim);
  for (size_t r = 0; r < values.size() / d; ++r) {
    float amax = 0;
    for (size_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(F16ToF32(values[r * d + i])));
    const float scale = amax / 127.0f;
    for (size_t i = 0; i < d; ++i) {
      const float x = F16ToF32(values[r * d + i]);
      const float q = scale > 0 ? std::nearbyint(x / scale) : 0.0f;
      out[r * d + i] = F32ToF16(q * scale);
    }
  }
  return out;
}

std::vector<uint16_t> RoundTrip(KvCodec codec, const std::vector<uint16_t>& values, int head_dim) {
  std::vector<uint8_t> encoded;
  AppendEncodedTensor(codec, values, head_dim, &encoded);
  std::vector<uint16_t> decoded(values.size());
  const Status status = DecodeTensor(codec, encoded, head_dim, decoded);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return decoded;
}

std::vector<uint16_t> GaussianRows(uint64_t seed, size_t rows, int head_dim, int outlier_channel,
                                   float outlier_scale) {
  Random random(seed);
  std::vector<uint16_t> values(rows * static_cast<size_t>(head_dim));
  for (size_t r = 0; r < rows; ++r) {
    for (int i = 0; i < head_dim; ++i) {
      float x = static_cast<float>(random.NextGaussian());
      if (i == outlier_channel) x *= outlier_scale;
      values[r * static_cast<size_t>(head_dim) + static_cast<size_t>(i)] = F32ToF16(x);
    }
  }
  return values;
}

TEST(KvCodecTest, HadamardIsOrthonormalAndItsOwnInverse) {
  Random random(7);
  for (size_t d : {1u, 2u, 8u, 64u, 128u}) {
    std::vector<float> row(d), original(d);
    for (float& x : original) x = static_cast<float>(random.NextGaussian());
    row = original;
    NormalizedHadamardTransform(row);
    double norm_before = 0, norm_after = 0;
    for (size_t i = 0; i < d; ++i) {
      norm_before += original[i] * original[i];
      norm_after += row[i] * row[i];
    }
    EXPECT_NEAR(norm_after, norm_before, 1e-4 * norm_before) << d;
    NormalizedHadamardTransform(row);
    for (size_t i = 0; i < d; ++i) EXPECT_NEAR(row[i], original[i], 1e-5) << d << " " << i;
  }
  // One channel maps to a flat row: the outlier is spread over every channel.
  std::vector<float> spike(64, 0.0f);
  spike[5] = 8.0f;
  NormalizedHadamardTransform(spike);
  for (float x : spike) EXPECT_FLOAT_EQ(std::fabs(x), 1.0f);
}

// Decoding follows the documented steps exactly (dequantize, transform, round to f16) for
// every power-of-two head_dim, whichever implementation the CPU selects (vectorised for
// multiples of 8, scalar otherwise).
TEST(KvCodecTest, Int8DecodeEqualsTheDocumentedStepsBitForBit) {
  Random random(3);
  for (int d : {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
    const size_t num_rows = 37;
    std::vector<uint16_t> values(num_rows * static_cast<size_t>(d));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = F32ToF16(static_cast<float>(random.NextGaussian() * (i % 7 == 0 ? 20 : 1)));
    }
    std::vector<uint8_t> encoded;
    AppendEncodedTensor(KvCodec::kInt8, values, d, &encoded);
    std::vector<uint16_t> decoded(values.size());
    ASSERT_TRUE(DecodeTensor(KvCodec::kInt8, encoded, d, decoded).ok());

    std::vector<float> row(static_cast<size_t>(d));
    for (size_t r = 0; r < num_rows; ++r) {
      float scale;
      std::memcpy(&scale, encoded.data() + r * sizeof(float), sizeof(float));
      const auto* q = reinterpret_cast<const int8_t*>(encoded.data() + num_rows * sizeof(float) +
                                                      r * static_cast<size_t>(d));
      for (int i = 0; i < d; ++i) row[static_cast<size_t>(i)] = static_cast<float>(q[i]) * scale;
      NormalizedHadamardTransform(row);
      for (int i = 0; i < d; ++i) {
        ASSERT_EQ(decoded[r * static_cast<size_t>(d) + static_cast<size_t>(i)],
                  F32ToF16(row[static_cast<size_t>(i)]))
            << "head_dim " << d << " row " << r << " value " << i;
      }
    }
  }
}

TEST(KvCodecTest, F16IsBitExactIncludingSpecialValues) {
  std::vector<uint16_t> values(64 * 16);
  Random random(3);
  for (uint16_t& x : values) x = static_cast<uint16_t>(random.NextU64());
  values[0] = 0x8000;  // -0
  values[1] = 0x0001;  // smallest subnormal
  values[2] = 0x7c00;  // inf
  values[3] = 0x7e01;  // NaN with payload
  EXPECT_EQ(RoundTrip(KvCodec::kF16, values, 64), values);
  std::vector<uint8_t> encoded;
  AppendEncodedTensor(KvCodec::kF16, values, 64, &encoded);
  EXPECT_EQ(encoded.size(), values.size() * 2);
}

TEST(KvCodecTest, Int8HadamardErrorIsBounded) {
  // 4096 rows of unit Gaussians: expected relative RMS ~ amax/(127*sqrt(12)) / rms ~ 0.006.
  for (int head_dim : {64, 128}) {
    const auto values = GaussianRows(11, 4096, head_dim, -1, 1.0f);
    const ErrorStats stats =
        RowErrors(values, RoundTrip(KvCodec::kInt8, values, head_dim), head_dim);
    std::printf("int8-hadamard d=%d gaussian rows: relative RMS mean %.5f max %.5f\n", head_dim,
                stats.mean, stats.max);
    EXPECT_LT(stats.mean, 0.010);
    EXPECT_LT(stats.max, 0.015);
  }
}

TEST(KvCodecTest, HadamardRotationBeatsPlainInt8OnOutlierChannels) {
  // K after RoPE often has a few channels far larger than the rest; here one is 30x.
  const int head_dim = 64;
  const auto values = GaussianRows(12, 4096, head_dim, 9, 30.0f);
  const ErrorStats rotated =
      RowErrors(values, RoundTrip(KvCodec::kInt8, values, head_dim), head_dim);
  const ErrorStats plain = RowErrors(values, PlainInt8RoundTrip(values, head_dim), head_dim);
  std::printf("outlier rows: int8-hadamard mean %.5f max %.5f; plain int8 mean %.5f max %.5f\n",
              rotated.mean, rotated.max, plain.mean, plain.max);
  EXPECT_LT(rotated.mean, 0.010);
  EXPECT_LT(rotated.max, 0.020);
  // Without the rotation the small channels lose most of their bits: error is much larger
  // relative to them (the row norm is dominated by the outlier, so the gap shows per channel).
  double small_error_rotated = 0, small_error_plain = 0, small_norm = 0;
  const auto rotated_values = RoundTrip(KvCodec::kInt8, values, head_dim);
  const auto plain_values = PlainInt8RoundTrip(values, head_dim);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % head_dim == 9) continue;
    const double x = F16ToF32(values[i]);
    small_norm += x * x;
    small_error_rotated += std::pow(F16ToF32(rotated_values[i]) - x, 2);
    small_error_plain += std::pow(F16ToF32(plain_values[i]) - x, 2);
  }
  const double rotated_small = std::sqrt(small_error_rotated / small_norm);
  const double plain_small = std::sqrt(small_error_plain / small_norm);
  std::printf("outlier rows, other channels: int8-hadamard %.4f, plain int8 %.4f\n", rotated_small,
              plain_small);
  EXPECT_LT(rotated_small * 2, plain_small);
}

TEST(KvCodecTest, ZeroAndNonFiniteRowsDecodeSafely) {
  std::vector<uint16_t> values(2 * 8, 0);
  values[8] = 0x7c00;  // +inf -> 65504
  values[9] = 0x7e00;  // NaN -> 0
  values[10] = F32ToF16(1.0f);
  const auto decoded = RoundTrip(KvCodec::kInt8, values, 8);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(decoded[i], 0) << i;
  for (size_t i = 8; i < 16; ++i) EXPECT_TRUE(std::isfinite(F16ToF32(decoded[i]))) << i;
  EXPECT_NEAR(F16ToF32(decoded[8]), 65504.0f, 65504.0f * 0.02f);
}

TEST(KvCodecTest, NonPowerOfTwoHeadDimFallsBackToF16) {
  EXPECT_EQ(EffectiveKvCodec(KvCodec::kInt8, 64), KvCodec::kInt8);
  EXPECT_EQ(EffectiveKvCodec(KvCodec::kInt8, 80), KvCodec::kF16);
  EXPECT_EQ(EffectiveKvCodec(KvCodec::kInt8, 0), KvCodec::kF16);
  EXPECT_EQ(EffectiveKvCodec(KvCodec::kF16, 64), KvCodec::kF16);
  test_util::TestShape shape{.num_layers = 2, .num_kv_heads = 2, .head_dim = 80, .num_tokens = 3};
  const kv::ChunkEntry entry = test_util::MakeTestChunk(5, shape, 1);
  const EncodedKv encoded = EncodeKv(*entry.kv, KvCodec::kInt8);
  EXPECT_EQ(encoded.codec, KvCodec::kF16);
  kv::ChunkKv decoded;
  decoded.num_layers = 2;
  decoded.num_kv_heads = 2;
  decoded.head_dim = 80;
  decoded.num_tokens = 3;
  ASSERT_TRUE(DecodeKv(encoded, &decoded).ok());
  EXPECT_EQ(decoded.k, entry.kv->k);
  EXPECT_EQ(decoded.v, entry.kv->v);
}

TEST(KvCodecTest, BytesPerToken) {
  // The example of the report: 30 layers, 3 KV heads, head_dim 64.
  EXPECT_EQ(EncodedKvBytesPerToken(KvCodec::kF16, 30, 3, 64), 23040u);
  EXPECT_EQ(EncodedKvBytesPerToken(KvCodec::kInt8, 30, 3, 64), 12240u);
  EXPECT_EQ(EncodedKvBytesPerToken(KvCodec::kInt8, 30, 3, 80),
            EncodedKvBytesPerToken(KvCodec::kF16, 30, 3, 80));
  EXPECT_EQ(EncodedTensorBytes(KvCodec::kF16, 10, 64), 1280u);
  EXPECT_EQ(EncodedTensorBytes(KvCodec::kInt8, 10, 64), 680u);
  EXPECT_FALSE(EncodedTensorBytes(KvCodec::kF16, UINT64_MAX / 2, 64).has_value());
  EXPECT_FALSE(EncodedTensorBytes(KvCodec::kInt8, UINT64_MAX, 64).has_value());
}

TEST(KvCodecTest, DecodeRejectsBadInput) {
  const auto values = GaussianRows(1, 4, 8, -1, 1.0f);
  std::vector<uint8_t> encoded;
  AppendEncodedTensor(KvCodec::kInt8, values, 8, &encoded);
  std::vector<uint16_t> out(values.size());
  // Wrong sizes.
  EXPECT_EQ(
      DecodeTensor(KvCodec::kInt8, std::span(encoded).first(encoded.size() - 1), 8, out)
          .code(),
      StatusCode::kCorrupt);
  EXPECT_EQ(DecodeTensor(KvCodec::kF16, encoded, 8, out).code(), StatusCode::kCorrupt);
  std::vector<uint16_t> odd(7);
  EXPECT_EQ(DecodeTensor(KvCodec::kF16, encoded, 8, odd).code(), StatusCode::kCorrupt);
  // Unknown codec, and int8 with a head_dim it cannot use.
  EXPECT_EQ(DecodeTensor(static_cast<KvCodec>(7), encoded, 8, out).code(), StatusCode::kCorrupt);
  std::vector<uint16_t> six(24);
  EXPECT_EQ(DecodeTensor(KvCodec::kInt8, encoded, 6, six).code(), StatusCode::kCorrupt);
  // Bad scales: NaN, negative.
  for (const float bad : {std::nanf(""), -1.0f, INFINITY}) {
    std::vector<uint8_t> damaged = encoded;
    std::memcpy(damaged.data() + 4, &bad, 4);  // row 1's scale
    EXPECT_EQ(DecodeTensor(KvCodec::kInt8, damaged, 8, out).code(), StatusCode::kCorrupt);
  }
  EXPECT_TRUE(DecodeTensor(KvCodec::kInt8, encoded, 8, out).ok());
}

}  // namespace
}  // namespace reprise::store
