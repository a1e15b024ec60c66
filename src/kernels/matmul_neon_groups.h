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

#include "kernels/packed_matrix.h"
#include "kernels/quant_blocks.h"

namespace reprise::kernels {
namespace {

// Bytes of one 32-column block of a group: 8 half-float scales, then the values.
constexpr int64_t kQ8GroupBlockBytes = kPackRows * 2 + kPackRows * kQK;      // 272
constexpr int64_t kQ4GroupBlockBytes = kPackRows * 2 + kPackRows * kQK / 2;  // 144
// Q4_1x8: 8 float scales, 8 float offsets, then the nibbles laid out as Q4_0x8's.
constexpr int64_t kQ41HeaderBytes = kPackRows * 8;
constexpr int64_t kQ41GroupBlockBytes = kQ41HeaderBytes + kPackRows * kQK / 2;  // 192

// Bytes of one block, and before its values, of the Q8_0 (neither flag), Q4_0 (kQ4) and
// Q4_1x8 (kQ4 and kAffine) groups.
constexpr int64_t BlockBytes(bool q4, bool affine) {
  return affine ? kQ41GroupBlockBytes : q4 ? kQ4GroupBlockBytes : kQ8GroupBlockBytes;
}
constexpr int64_t HeaderBytes(bool affine) { return affine ? kQ41HeaderBytes : 2 * kPackRows; }

// Q4_1x8's 8 float scales (or, at p + 32, offsets) as two float vectors (rows 0-3, 4-7).
inline void LoadFloats(const uint8_t* p, float32x4_t& lo, float32x4_t& hi) {
  lo = vld1q_f32(reinterpret_cast<const float*>(p));
  hi = vld1q_f32(reinterpret_cast<const float*>(p) + 4);
}

// The 8 half-float scales at `p` as two float vectors (rows 0-3, 4-7).
inline void LoadScales(const uint8_t* p, float32x4_t& lo, float32x4_t& hi) {
  const uint16x8_t bits = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
  lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(bits)));
  hi = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(bits)));
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
