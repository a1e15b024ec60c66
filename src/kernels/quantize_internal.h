// The per-type row kernels behind quantize.h's DequantizeRow / QuantizeRow dispatch.
//
// Internal to kernels/: quantize.cc picks one of these per row (never per element), and
// the SIMD kernels' tests may use them as the scalar reference of one type. Each function
// reads or writes `num_blocks` consecutive blocks; byte pointers need no alignment.
#pragma once

#include <cstdint>
#include <cstring>

namespace reprise::kernels::internal {

// 32-element types (quantize_legacy.cc).
void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t num_blocks);
void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t num_blocks);

// K-quants, 256-element super-blocks (quantize_k_dequant.cc, quantize_k_quant.cc).
void DequantizeQ2_K(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ3_K(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ4_K(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ5_K(const uint8_t* src, float* dst, int64_t num_blocks);
void DequantizeQ6_K(const uint8_t* src, float* dst, int64_t num_blocks);
void QuantizeQ3_K(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ4_K(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ5_K(const float* src, uint8_t* dst, int64_t num_blocks);
void QuantizeQ6_K(const float* src, uint8_t* dst, int64_t num_blocks);

// Q3_K's sixteen 6-bit scales (stored + 32, so in [-32, 31] after the subtraction) from their
// 12 bytes: the low 4 bits of scale j are the low (j < 8) or high nibble of byte j % 8, its
// top 2 bits at shift 2 * (j / 4) of byte 8 + j % 4.
inline void UnpackScalesQ3_K(const uint8_t* packed, int* scales) {
  for (int j = 0; j < 16; ++j) {
    const int low = (packed[j % 8] >> (4 * (j / 8))) & 0xf;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

// The inverse of UnpackScalesQ3_K. Requires: every scale in [-32, 31].
inline void PackScalesQ3_K(const int* scales, uint8_t* packed) {
  for (int j = 0; j < 12; ++j) packed[j] = 0;
  for (int j = 0; j < 16; ++j) {
    const int stored = scales[j] + 32;
    packed[j % 8] |= static_cast<uint8_t>((stored & 0xf) << (4 * (j / 8)));
    packed[8 + j % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (j / 4)));
  }
}

// Q4_K / Q5_K keep eight 6-bit scales and eight 6-bit mins in 12 bytes: bytes 0-3 hold
// scales 0-3 in their low 6 bits, bytes 4-7 mins 0-3; scales/mins 4-7 keep their low 4 bits
// in the low/high nibble of bytes 8-11 and their top 2 bits in the top 2 bits of bytes 0-3
// (scales) and 4-7 (mins).
inline void UnpackScaleMinK4(const uint8_t* packed, uint8_t* scales, uint8_t* mins) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = packed[j] & 63;
    mins[j] = packed[j + 4] & 63;
    scales[j + 4] = static_cast<uint8_t>((packed[j + 8] & 0xf) | ((packed[j] >> 6) << 4));
    mins[j + 4] = static_cast<uint8_t>((packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4));
  }
}

// Requires: every scale and min < 64.
inline void PackScaleMinK4(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(scales[j] | ((scales[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(mins[j] | ((mins[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0xf) | ((mins[j + 4] & 0xf) << 4));
  }
}

// v truncated toward zero and clamped to [lo, hi]. Clamps in float before converting, so
// that huge, infinite or NaN inputs cannot reach an undefined conversion (NaN gives `lo`).
inline int ClampToInt(float v, int lo, int hi) {
  if (!(v > static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

// v rounded half to even and clamped to [lo, hi]. Requires: |lo|, |hi| < 2^22. After the
// clamp, adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits (cheaper
// than std::nearbyint, which is a library call on baseline x86-64).
inline int NearestInt(float v, int lo, int hi) {
  if (!(v > static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace reprise::kernels::internal
