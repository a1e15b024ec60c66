// The group plumbing shared by the two NEON matmuls of the block formats: matmul_neon.cc (sdot,
// the neon-dotprod set) and matmul_neon_i8mm.cc (smmla, the neon-i8mm set). Both read a packed
// group's blocks (packed_matrix.h) with these sizes, widen the 8 half-float row scales of a
// block the same way, and write a group's 8 outputs of one token with Store. Include only from
// translation units compiled with NEON flags. Everything here is in an anonymous namespace, so
// each translation unit keeps its own copy, compiled with its own flags (no inline function
// built for I8MM can be linked into the DotProd set).
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/packed_matrix.h"
#include "kernels/quant_blocks.h"

namespace reprise::kernels {
namespace {

// Bytes of one 32-column block of a group: 8 half-float scales, then the values.
constexpr int64_t kQ8GroupBlockBytes = kPackRows * 2 + kPackRows * kQK;      // 272
constexpr int64_t kQ4GroupBlockBytes = kPackRows * 2 + kPackRows * kQK / 2;  // 144

// The 8 half-float scales at `p` as two float vectors (rows 0-3, 4-7).
inline void LoadScales(const uint8_t* p, float32x4_t& lo, float32x4_t& hi) {
  const uint16x8_t bits = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
  lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(bits)));
  hi = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(bits)));
}

// Q4_Kx8: K / 256 super-block headers (8 half-float d, 8 half-float dmin) before the blocks,
// which are laid out as Q4_0x8's with 8 scale bytes and 8 min bytes as their 16-byte header.
// Q5_Kx8 has the same headers and blocks, each followed by its 32-byte plane of fifth bits.
constexpr int64_t kQ4KSuperHeaderBytes = kPackRows * 4;
static_assert(kQ5SuperHeaderBytes == kQ4KSuperHeaderBytes && kQ5LowOffset == 2 * kPackRows);

// The block formats' shapes, for the kernels' format template parameter (kQ8_0x8, kQ4_0x8,
// kQ4_Kx8 or kQ5_Kx8). Nibbles: Q4_0x8's 128 nibble bytes per block (Q5_Kx8: the q's low 4
// bits). Affine: value d * q - min, d and min from the super-block header and the block's
// scale and min bytes (Q4KBlockScales).
constexpr bool IsNibbles(PackedFormat f) { return f != PackedFormat::kQ8_0x8; }
constexpr bool IsAffine(PackedFormat f) {
  return f == PackedFormat::kQ4_Kx8 || f == PackedFormat::kQ5_Kx8;
}

// Bytes of one 32-column block of a group of format `f`.
constexpr int64_t GroupBlockBytes(PackedFormat f) {
  return f == PackedFormat::kQ5_Kx8 ? kQ5GroupBlockBytes
         : IsNibbles(f)             ? kQ4GroupBlockBytes
                                    : kQ8GroupBlockBytes;
}

// Bytes before a group's first block: the super-block headers of the K-quants, else none.
constexpr int64_t BlocksOffset(PackedFormat f, int64_t k) {
  return IsAffine(f) ? k / kQK_K * kQ4KSuperHeaderBytes : 0;
}

// Q5_Kx8: `nibbles` (bytes 0..15) with bit kBit of `plane`'s bytes set into their bit 4, so
// q = nibble + 16 * fifth bit (0..31, a valid int8 for sdot and smmla). Nibble byte pair p's
// low nibbles take kBit = 2p, its high ones 2p + 1, from the plane bytes of the same rows.
template <int kBit>
inline uint8x16_t WithFifthBits(uint8x16_t nibbles, uint8x16_t plane) {
  uint8x16_t at4;  // the fifth bits at bit 4
  if constexpr (kBit < 4) {
    at4 = vshlq_n_u8(plane, 4 - kBit);
  } else if constexpr (kBit == 4) {
    at4 = plane;
  } else {
    at4 = vshrq_n_u8(plane, kBit - 4);
  }
  return vbslq_u8(vdupq_n_u8(0x10), at4, nibbles);
}

// 8 bytes at `p` as two float vectors (rows 0-3, 4-7).
inline void LoadBytesAsFloats(const uint8_t* p, float32x4_t& lo, float32x4_t& hi) {
  const uint16x8_t wide = vmovl_u8(vld1_u8(p));
  lo = vcvtq_f32_u32(vmovl_u16(vget_low_u16(wide)));
  hi = vcvtq_f32_u32(vmovl_u16(vget_high_u16(wide)));
}

// The float d and min (value = d * q - min) of the 8 rows of Q4_Kx8 (or Q5_Kx8) block `b` of
// `group`, exact: a half float times a 6-bit integer, as the scalar kernel computes them.
inline void Q4KBlockScales(const uint8_t* group, const uint8_t* block, int64_t b, float32x4_t& d_lo,
                           float32x4_t& d_hi, float32x4_t& m_lo, float32x4_t& m_hi) {
  const uint8_t* header = group + b / 8 * kQ4KSuperHeaderBytes;
  float32x4_t sd_lo, sd_hi, sm_lo, sm_hi, sc_lo, sc_hi, mn_lo, mn_hi;
  LoadScales(header, sd_lo, sd_hi);
  LoadScales(header + 2 * kPackRows, sm_lo, sm_hi);
  LoadBytesAsFloats(block, sc_lo, sc_hi);
  LoadBytesAsFloats(block + kPackRows, mn_lo, mn_hi);
  d_lo = vmulq_f32(sd_lo, sc_lo);
  d_hi = vmulq_f32(sd_hi, sc_hi);
  m_lo = vmulq_f32(sm_lo, mn_lo);
  m_hi = vmulq_f32(sm_hi, mn_hi);
}

// Q4_Kx8's (and Q5_Kx8's) second FMA of a block for one token: acc -= min * d_a * sum(a), with
// sum(a) the activation block sum at `sum_at`.
inline void SubtractMins(float32x4_t m_lo, float32x4_t m_hi, float d_a, const uint8_t* sum_at,
                         float32x4_t& acc_lo, float32x4_t& acc_hi) {
  int32_t sum;
  std::memcpy(&sum, sum_at, sizeof(sum));
  const float32x4_t offset = vdupq_n_f32(d_a * static_cast<float>(sum));
  acc_lo = vfmsq_f32(acc_lo, m_lo, offset);
  acc_hi = vfmsq_f32(acc_hi, m_hi, offset);
}

// Writes (or adds) the 8 outputs of group `g` (rows 0-3 in `lo`, 4-7 in `hi`) that fall in
// [n_begin, n_end) to one token's output row.
inline void Store(const float32x4_t lo, const float32x4_t hi, float* out_row, int64_t g,
                  int64_t n_begin, int64_t n_end, bool accumulate) {
  const int64_t base = g * kPackRows;
  if (base >= n_begin && base + kPackRows <= n_end) {
    float* o = out_row + base;
    if (accumulate) {
      vst1q_f32(o, vaddq_f32(vld1q_f32(o), lo));
      vst1q_f32(o + 4, vaddq_f32(vld1q_f32(o + 4), hi));
    } else {
      vst1q_f32(o, lo);
      vst1q_f32(o + 4, hi);
    }
    return;
  }
  float values[kPackRows];
  vst1q_f32(values, lo);
  vst1q_f32(values + 4, hi);
  for (int64_t r = std::max<int64_t>(0, n_begin - base); r < kPackRows && base + r < n_end; ++r) {
    out_row[base + r] = accumulate ? out_row[base + r] + values[r] : values[r];
  }
}

}  // namespace
}  // namespace reprise::kernels
