#include "store/kv_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/check.h"
#include "base/checked_math.h"
#include "base/cpu_features.h"
#include "base/float16.h"

namespace reprise::store {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the KV codecs write the host's bytes; a big-endian host needs byte swaps");

constexpr float kInt8Max = 127.0f;
constexpr float kF16Max = 65504.0f;

bool IsPowerOfTwo(int value) {
  return value > 0 && std::has_single_bit(static_cast<unsigned>(value));
}

// f16 -> f32 with the non-finite values the int8 codec cannot carry replaced.
float FiniteF16ToF32(uint16_t h) {
  const float x = F16ToF32(h);
  if (std::isnan(x)) return 0.0f;
  if (std::isinf(x)) return x > 0 ? kF16Max : -kF16Max;
  return x;
}

void EncodeInt8Hadamard(std::span<const uint16_t> values, int head_dim, std::vector<uint8_t>* out) {
  const size_t d = static_cast<size_t>(head_dim);
  const size_t num_rows = values.size() / d;
  const size_t scales_at = out->size();
  const size_t quants_at = scales_at + num_rows * sizeof(float);
  out->resize(quants_at + num_rows * d);
  uint8_t* scales = out->data() + scales_at;
  int8_t* quants = reinterpret_cast<int8_t*>(out->data() + quants_at);
  std::vector<float> row(d);
  for (size_t r = 0; r < num_rows; ++r) {
    const uint16_t* in = values.data() + r * d;
    for (size_t i = 0; i < d; ++i) row[i] = FiniteF16ToF32(in[i]);
    NormalizedHadamardTransform(row);
    float amax = 0.0f;
    for (float x : row) amax = std::max(amax, std::fabs(x));
    const float scale = amax / kInt8Max;
    const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
    int8_t* q = quants + r * d;
    for (size_t i = 0; i < d; ++i) {
      const float scaled = std::clamp(row[i] * inverse, -kInt8Max, kInt8Max);
      q[i] = static_cast<int8_t>(std::lrint(scaled));
    }
    std::memcpy(scales + r * sizeof(float), &scale, sizeof(float));
  }
}

#if defined(__x86_64__)
// Decodes rows of d values, d a multiple of 8 and at most kMaxAvx2Dim, with AVX2 and F16C.
// The same operations in the same order as the scalar path (dequantize, butterflies of
// growing span, normalise, round to nearest even), so the results are identical. Not compiled
// with FMA: contracting a multiply into an add would change the rounding.
constexpr size_t kMaxAvx2Dim = 512;

__attribute__((target("avx2,f16c"))) void DecodeInt8HadamardAvx2(const float* scales,
                                                                  const int8_t* quants,
                                                                  size_t num_rows, size_t d,
                                                                  uint16_t* values) {
  const size_t num_vectors = d / 8;
  const __m256 norm = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  __m256 r[kMaxAvx2Dim / 8];
  for (size_t row = 0; row < num_rows; ++row) {
    const __m256 scale = _mm256_set1_ps(scales[row]);
    const int8_t* q = quants + row * d;
    for (size_t j = 0; j < num_vectors; ++j) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * j));
      r[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), scale);
    }
    // Butterflies of span 1, 2 and 4 inside each vector: lane i (low) gets x_i + x_{i+h},
    // lane i + h (high) gets x_i - x_{i+h}; p holds the partner lanes.
    for (size_t j = 0; j < num_vectors; ++j) {
      __m256 x = r[j];
      __m256 p = _mm256_permute_ps(x, 0xB1);
      x = _mm256_blend_ps(_mm256_add_ps(x, p), _mm256_sub_ps(p, x), 0xAA);
      p = _mm256_permute_ps(x, 0x4E);
      x = _mm256_blend_ps(_mm256_add_ps(x, p), _mm256_sub_ps(p, x), 0xCC);
      p = _mm256_permute2f128_ps(x, x, 0x01);
      x = _mm256_blend_ps(_mm256_add_ps(x, p), _mm256_sub_ps(p, x), 0xF0);
      r[j] = x;
    }
    // Spans of 8 values and more: between whole vectors.
    for (size_t h = 1; h < num_vectors; h *= 2) {
      for (size_t block = 0; block < num_vectors; block += 2 * h) {
        for (size_t i = block; i < block + h; ++i) {
          const __m256 a = r[i];
          const __m256 b = r[i + h];
          r[i] = _mm256_add_ps(a, b);
          r[i + h] = _mm256_sub_ps(a, b);
        }
      }
    }
    uint16_t* out = values + row * d;
    for (size_t j = 0; j < num_vectors; ++j) {
      const __m128i h16 = _mm256_cvtps_ph(_mm256_mul_ps(r[j], norm), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8 * j), h16);
    }
  }
}
#endif

}  // namespace

Status DecodeInt8HadamardRows(std::span<const float> scales, std::span<const int8_t> quants,
                              int head_dim, std::span<uint16_t> values) {
  const size_t d = static_cast<size_t>(head_dim);
  const size_t num_rows = scales.size();
  REPRISE_CHECK(head_dim > 0 && quants.size() == num_rows * d && values.size() == num_rows * d);
  for (size_t r = 0; r < num_rows; ++r) {
    if (!std::isfinite(scales[r]) || scales[r] < 0.0f) {
      return CorruptError("int8 KV row " + std::to_string(r) + " has a bad scale");
    }
  }
#if defined(__x86_64__)
  const CpuFeatures& cpu = GetCpuFeatures();
  if (cpu.has_avx2 && cpu.has_f16c && d % 8 == 0 && d <= kMaxAvx2Dim) {
    DecodeInt8HadamardAvx2(scales.data(), quants.data(), num_rows, d, values.data());
    return Status::Ok();
  }
#endif
  std::vector<float> row(d);
  for (size_t r = 0; r < num_rows; ++r) {
    const int8_t* q = quants.data() + r * d;
    for (size_t i = 0; i < d; ++i) row[i] = static_cast<float>(q[i]) * scales[r];
    NormalizedHadamardTransform(row);
    uint16_t* out = values.data() + r * d;
    for (size_t i = 0; i < d; ++i) out[i] = F32ToF16(row[i]);
  }
  return Status::Ok();
}

namespace {

Status DecodeInt8Hadamard(std::span<const uint8_t> encoded, int head_dim,
                          std::span<uint16_t> values) {
  const size_t num_rows = values.size() / static_cast<size_t>(head_dim);
  std::vector<float> scales(num_rows);
  if (num_rows > 0) std::memcpy(scales.data(), encoded.data(), num_rows * sizeof(float));
  const auto* quants = reinterpret_cast<const int8_t*>(encoded.data() + num_rows * sizeof(float));
  return DecodeInt8HadamardRows(scales, std::span(quants, values.size()), head_dim, values);
}

}  // namespace

bool IsKnownKvCodec(uint8_t value) {
  return value == static_cast<uint8_t>(KvCodec::kF16) ||
         value == static_cast<uint8_t>(KvCodec::kInt8);
}

KvCodec EffectiveKvCodec(KvCodec requested, int head_dim) {
  if (requested == KvCodec::kInt8 && IsPowerOfTwo(head_dim)) return requested;
  return KvCodec::kF16;
}

std::optional<uint64_t> EncodedTensorBytes(KvCodec codec, uint64_t num_rows, uint64_t head_dim) {
  switch (codec) {
    case KvCodec::kF16: {
      const auto values = CheckedMul(num_rows, head_dim);
      if (!values) return std::nullopt;
      return CheckedMul(*values, sizeof(uint16_t));
    }
    case KvCodec::kInt8: {
      const auto per_row = CheckedAdd(head_dim, sizeof(float));
      if (!per_row) return std::nullopt;
      return CheckedMul(num_rows, *per_row);
    }
  }
  return std::nullopt;
}

uint64_t EncodedKvBytesPerToken(KvCodec codec, int num_layers, int num_kv_heads, int head_dim) {
  const uint64_t rows = static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads);
  const auto bytes =
      EncodedTensorBytes(EffectiveKvCodec(codec, head_dim), rows, static_cast<uint64_t>(head_dim));
  REPRISE_CHECK(bytes.has_value());
  return 2 * *bytes;
}

void NormalizedHadamardTransform(std::span<float> row) {
  const size_t d = row.size();
  REPRISE_DCHECK(d > 0 && std::has_single_bit(d));
  for (size_t half = 1; half < d; half *= 2) {
    for (size_t block = 0; block < d; block += 2 * half) {
      for (size_t i = block; i < block + half; ++i) {
        const float a = row[i];
        const float b = row[i + half];
        row[i] = a + b;
        row[i + half] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(d));
  for (float& x : row) x *= norm;
}

void AppendEncodedTensor(KvCodec codec, std::span<const uint16_t> values, int head_dim,
                         std::vector<uint8_t>* out) {
  REPRISE_CHECK(head_dim > 0 && values.size() % static_cast<size_t>(head_dim) == 0);
  REPRISE_CHECK(codec == EffectiveKvCodec(codec, head_dim)) << KvCodecName(codec);
  if (codec == KvCodec::kInt8) {
    EncodeInt8Hadamard(values, head_dim, out);
    return;
  }
  if (values.empty()) return;  // memcpy may not take the null data() of an empty span
  const size_t at = out->size();
  out->resize(at + values.size_bytes());
  std::memcpy(out->data() + at, values.data(), values.size_bytes());
}

Status DecodeTensor(KvCodec codec, std::span<const uint8_t> encoded, int head_dim,
                    std::span<uint16_t> values) {
  if (head_dim <= 0 || values.size() % static_cast<size_t>(head_dim) != 0) {
    return CorruptError("KV tensor of " + std::to_string(values.size()) +
                        " values is not made of rows of " + std::to_string(head_dim));
  }
  if (!IsKnownKvCodec(static_cast<uint8_t>(codec)) || EffectiveKvCodec(codec, head_dim) != codec) {
    return CorruptError("KV codec " + std::to_string(static_cast<int>(codec)) +
                        " cannot encode rows of " + std::to_string(head_dim));
  }
  const uint64_t num_rows = values.size() / static_cast<size_t>(head_dim);
  const auto expected = EncodedTensorBytes(codec, num_rows, static_cast<uint64_t>(head_dim));
  if (!expected || *expected != encoded.size()) {
    return CorruptError("encoded KV tensor has " + std::to_string(encoded.size()) +
                        " bytes, codec " + std::string(KvCodecName(codec)) + " needs " +
                        (expected ? std::to_string(*expected) : std::string("too many")));
  }
  if (codec == KvCodec::kInt8) return DecodeInt8Hadamard(encoded, head_dim, values);
  if (!encoded.empty()) std::memcpy(values.data(), encoded.data(), encoded.size());
  return Status::Ok();
}

EncodedKv EncodeKv(const kv::ChunkKv& kv, KvCodec requested) {
  const size_t expected =
      static_cast<size_t>(kv.num_layers) * kv.num_kv_heads * kv.num_tokens * kv.head_dim;
  REPRISE_CHECK(kv.k.size() == expected && kv.v.size() == expected);
  EncodedKv out;
  out.codec = EffectiveKvCodec(requested, kv.head_dim);
  AppendEncodedTensor(out.codec, kv.k, kv.head_dim, &out.k);
  AppendEncodedTensor(out.codec, kv.v, kv.head_dim, &out.v);
  return out;
}

Status DecodeKv(const EncodedKv& encoded, kv::ChunkKv* kv) {
  if (kv->num_layers <= 0 || kv->num_kv_heads <= 0 || kv->head_dim <= 0 || kv->num_tokens < 0) {
    return CorruptError("KV shape is not set");
  }
  const size_t n =
      static_cast<size_t>(kv->num_layers) * kv->num_kv_heads * kv->num_tokens * kv->head_dim;
  kv->k.assign(n, 0);
  kv->v.assign(n, 0);
  REPRISE_RETURN_IF_ERROR(DecodeTensor(encoded.codec, encoded.k, kv->head_dim, kv->k));
  return DecodeTensor(encoded.codec, encoded.v, kv->head_dim, kv->v);
}

}  // namespace reprise::store
