// Dequantization of the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): 256-element super-blocks
// of 16- or 32-element sub-blocks, each with its own small integer scale (and min).
//
// Element order inside a super-block, as the published layouts define it:
//  - Q2_K / Q3_K: element e takes 2 bits at shift 2*((e%128)/32) of qs[32*(e/128) + e%32];
//    Q3_K's third bit is bit e/32 of hmask[e%32] (set: q - 0, clear: q - 4). Sub-block e/16.
//  - Q4_K / Q5_K: element e is the low (e%64 < 32) or high nibble of qs[32*(e/64) + e%32];
//    Q5_K's fifth bit is bit e/32 of qh[e%32]. Sub-block e/32.
//  - Q6_K: for h = e/128, k = (e%128)/32, l = e%32: the low 4 bits are the low (k < 2) or
//    high nibble of ql[64*h + 32*(k%2) + l], the top 2 bits sit at shift 2*k of
//    qh[32*h + l]. Sub-block e/16; x = d * scale * (q - 32).
// Products are formed as (d * scale) * q - (dmin * min), the order ggml uses, so values
// match llama.cpp's bit for bit.

#include <cstring>

#include "base/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_internal.h"

namespace reprise::kernels::internal {
namespace {

template <typename Block>
Block LoadBlock(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

}  // namespace

void DequantizeQ2_K(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const auto b = LoadBlock<BlockQ2_K>(src, i);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b.qs + 32 * h;
      for (int k = 0; k < 4; ++k) {
        const int shift = 2 * k;
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = b.scales[8 * h + 2 * k + half];
          const float dl = d * static_cast<float>(sc & 0xf);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *dst++ = dl * static_cast<float>((q[16 * half + l] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

void DequantizeQ3_K(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const auto b = LoadBlock<BlockQ3_K>(src, i);
    const float d = F16ToF32(b.d);
    int scales[16];
    UnpackScalesQ3_K(b.scales, scales);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b.qs + 32 * h;
      for (int k = 0; k < 4; ++k) {
        const int shift = 2 * k;
        const int hbit = 4 * h + k;
        for (int half = 0; half < 2; ++half) {
          const float dl = d * static_cast<float>(scales[8 * h + 2 * k + half]);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int low = (q[l] >> shift) & 3;
            const int minus = ((b.hmask[l] >> hbit) & 1) ? 0 : 4;
            *dst++ = dl * static_cast<float>(low - minus);
          }
        }
      }
    }
  }
}

void DequantizeQ4_K(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const auto b = LoadBlock<BlockQ4_K>(src, i);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    uint8_t scales[8], mins[8];
    UnpackScaleMinK4(b.scales, scales, mins);
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = b.qs + 32 * c;
      const float d1 = d * static_cast<float>(scales[2 * c]);
      const float m1 = dmin * static_cast<float>(mins[2 * c]);
      const float d2 = d * static_cast<float>(scales[2 * c + 1]);
      const float m2 = dmin * static_cast<float>(mins[2 * c + 1]);
      for (int l = 0; l < 32; ++l) dst[l] = d1 * static_cast<float>(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l) dst[l + 32] = d2 * static_cast<float>(q[l] >> 4) - m2;
      dst += 64;
    }
  }
}

void DequantizeQ5_K(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const auto b = LoadBlock<BlockQ5_K>(src, i);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    uint8_t scales[8], mins[8];
    UnpackScaleMinK4(b.scales, scales, mins);
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = b.qs + 32 * c;
      const float d1 = d * static_cast<float>(scales[2 * c]);
      const float m1 = dmin * static_cast<float>(mins[2 * c]);
      const float d2 = d * static_cast<float>(scales[2 * c + 1]);
      const float m2 = dmin * static_cast<float>(mins[2 * c + 1]);
      const int bit1 = 2 * c;
      const int bit2 = 2 * c + 1;
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 0xf) | (((b.qh[l] >> bit1) & 1) << 4);
        dst[l] = d1 * static_cast<float>(v) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) | (((b.qh[l] >> bit2) & 1) << 4);
        dst[l + 32] = d2 * static_cast<float>(v) - m2;
      }
      dst += 64;
    }
  }
}

void DequantizeQ6_K(const uint8_t* src, float* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const auto b = LoadBlock<BlockQ6_K>(src, i);
    const float d = F16ToF32(b.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8_t* qh = b.qh + 32 * h;
      const int8_t* sc = b.scales + 8 * h;
      for (int k = 0; k < 4; ++k) {
        const int nibble_shift = 4 * (k / 2);
        const uint8_t* low = ql + 32 * (k % 2);
        for (int half = 0; half < 2; ++half) {
          const float dl = d * static_cast<float>(sc[2 * k + half]);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int q = ((low[l] >> nibble_shift) & 0xf) | (((qh[l] >> (2 * k)) & 3) << 4);
            dst[32 * k + l] = dl * static_cast<float>(q - 32);
          }
        }
      }
      dst += 128;
    }
  }
}

}  // namespace reprise::kernels::internal
