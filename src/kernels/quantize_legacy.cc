// The 32-element block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
//
// Quantizers follow ggml's reference rounding (the *_ref functions) so that the files we
// write hold the blocks users expect: the scale is computed in float, stored as a half, and
// the integers are chosen with the float (unrounded) inverse scale.

#include <cmath>
#include <cstring>

#include "base/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_internal.h"

namespace reprise::kernels::internal {
namespace {

// Blocks are copied in and out with memcpy: rows of a mapped file carry no alignment.
template <typename Block>
Block LoadBlock(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

template <typename Block>
void StoreBlock(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

constexpr int kHalf = kQK / 2;

// The signed value of largest magnitude (the first one on ties), 0 for an all-zero block.
float SignedAbsMax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, float* min, float* max) {
  *min = x[0];
  *max = x[0];
  for (int j = 1; j < kQK; ++j) {
    *min = std::fmin(*min, x[j]);
    *max = std::fmax(*max, x[j]);
  }
}

// Bit j of the returned word is bit 4 of q[j].
uint32_t HighBits(const uint8_t* q) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return qh;
}

}  // namespace

void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, dst += kQK) {
    const auto b = LoadBlock<BlockQ4_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>((b.qs[j] & 0xf) - 8) * d;
      dst[j + kHalf] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, dst += kQK) {
    const auto b = LoadBlock<BlockQ4_1>(src, i);
    const float d = F16ToF32(b.d);
    const float m = F16ToF32(b.m);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>(b.qs[j] & 0xf) * d + m;
      dst[j + kHalf] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, dst += kQK) {
    const auto b = LoadBlock<BlockQ5_0>(src, i);
    const float d = F16ToF32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    for (int j = 0; j < kHalf; ++j) {
      const int lo = (b.qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + kHalf)) & 1) << 4);
      dst[j] = static_cast<float>(lo - 16) * d;
      dst[j + kHalf] = static_cast<float>(hi - 16) * d;
    }
  }
}

void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, dst += kQK) {
    const auto b = LoadBlock<BlockQ5_1>(src, i);
    const float d = F16ToF32(b.d);
    const float m = F16ToF32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    for (int j = 0; j < kHalf; ++j) {
      const int lo = (b.qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + kHalf)) & 1) << 4);
      dst[j] = static_cast<float>(lo) * d + m;
      dst[j + kHalf] = static_cast<float>(hi) * d + m;
    }
  }
}

void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, dst += kQK) {
    const auto b = LoadBlock<BlockQ8_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b.qs[j]) * d;
  }
}

void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK) {
    // The largest-magnitude value maps to q = 0 exactly; the other end may clip at 15.
    const float d = SignedAbsMax(src) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = F32ToF16(d);
    for (int j = 0; j < kHalf; ++j) {
      const int lo = ClampToInt(src[j] * id + 8.5f, 0, 15);
      const int hi = ClampToInt(src[j + kHalf] * id + 8.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK) {
    float min, max;
    MinMax(src, &min, &max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = F32ToF16(d);
    b.m = F32ToF16(min);
    for (int j = 0; j < kHalf; ++j) {
      const int lo = ClampToInt((src[j] - min) * id + 0.5f, 0, 15);
      const int hi = ClampToInt((src[j + kHalf] - min) * id + 0.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK) {
    const float d = SignedAbsMax(src) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j)
      q[j] = static_cast<uint8_t>(ClampToInt(src[j] * id + 16.5f, 0, 31));
    BlockQ5_0 b;
    b.d = F32ToF16(d);
    const uint32_t qh = HighBits(q);
    std::memcpy(b.qh, &qh, sizeof(qh));
    for (int j = 0; j < kHalf; ++j)
      b.qs[j] = static_cast<uint8_t>((q[j] & 0xf) | (q[j + kHalf] << 4));
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK) {
    float min, max;
    MinMax(src, &min, &max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      q[j] = static_cast<uint8_t>(ClampToInt((src[j] - min) * id + 0.5f, 0, 31));
    }
    BlockQ5_1 b;
    b.d = F32ToF16(d);
    b.m = F32ToF16(min);
    const uint32_t qh = HighBits(q);
    std::memcpy(b.qh, &qh, sizeof(qh));
    for (int j = 0; j < kHalf; ++j)
      b.qs[j] = static_cast<uint8_t>((q[j] & 0xf) | (q[j + kHalf] << 4));
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = F32ToF16(d);
    // Round half away from zero, as ggml's reference quantizer does (roundf).
    for (int j = 0; j < kQK; ++j)
      b.qs[j] = static_cast<int8_t>(ClampToInt(std::round(src[j] * id), -127, 127));
    StoreBlock(b, dst, i);
  }
}

}  // namespace reprise::kernels::internal
