// ARM NEON matmul over the packed layouts (packed_matrix.h), for phones and ARM laptops: the
// block formats with the dot-product instruction (sdot, Armv8.2-A DotProd), the float formats
// with fused multiply-add. Compiled with -march=armv8.2-a+dotprod; only NeonDotKernels()
// hands it out, after the CPU reported DotProd (and neon-i8mm's matmul, matmul_neon_i8mm.cc,
// calls it for one-row calls, an odd row left over and the formats it does not handle).
//
// A packed group holds 8 weight rows interleaved 4 bytes at a time — [chunk c][row 0..7][4
// values] — so one 16-byte load is 4 rows' values of one 4-column chunk, and `sdot` by lane
// (vdotq_laneq_s32) multiplies it with that chunk of the activations held in one lane: two
// loads and two sdots per chunk give the 8 rows' int32 sums, with no shuffles. Q4_0's bytes
// hold chunk p in their low nibbles and chunk p + 4 in their high ones, as do Q4_Kx8's (whose
// mins enter in float, as - min * d_a * sum(a)) and Q5_Kx8's, whose fifth bits are set into
// the split nibbles as 16 (q in 0..31, still an int8 for sdot). Q6_Kx8's 6-bit values are put
// together from the same nibbles and their top bits, minus 32, and multiplied signed by signed
// with sdot as they are; each 16-column half's int32 sums are multiplied by the half's scales.
// Up to 4 tokens share each weight load (a tile of 4 x 8 outputs).
//
// The float operations are those of the scalar reference, in the same order (an exact int32
// dot per block, then acc = fma(dot, d_w * d_a, acc); float weights one fma per column), so
// the results agree with it to the bit.

#include <arm_neon.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/matmul_neon_groups.h"  // LoadScales, Store, the block sizes
#include "kernels/quant_blocks.h"

namespace reprise::kernels::neon {
namespace {

constexpr int kTile = 4;  // tokens per weight load

// One group of 8 rows of block format kF (Q8_0x8, Q4_0x8, Q4_Kx8 or Q5_Kx8) against T tokens
// of quantized activations.
template <int T, PackedFormat kF>
void BlockGroup(const PackedMatrix& w, int64_t g, const MatMulInput& x, int64_t m,
                const MatMulOutput& out, int64_t n_begin, int64_t n_end) {
  const uint8_t* group = w.group(g);
  const int64_t blocks = w.cols / kQK;
  float32x4_t acc_lo[T], acc_hi[T];
  const int8_t* a_q[T];
  const uint8_t* a_row[T];
  for (int t = 0; t < T; ++t) {
    acc_lo[t] = vdupq_n_f32(0.0f);
    acc_hi[t] = vdupq_n_f32(0.0f);
    a_row[t] = x.q8 + (m + t) * x.q8_stride;
    a_q[t] = reinterpret_cast<const int8_t*>(a_row[t]);
  }
  const int64_t scales_offset = w.cols;
  const int64_t sums_offset = w.cols + blocks * 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + BlocksOffset(kF, w.cols) + b * GroupBlockBytes(kF);
    const uint8_t* q = block + 2 * kPackRows;
    int32x4_t s_lo[T], s_hi[T];
    int8x16_t a_first[T], a_second[T];  // the block's columns 0-15 and 16-31
    for (int t = 0; t < T; ++t) {
      s_lo[t] = vdupq_n_s32(0);
      s_hi[t] = vdupq_n_s32(0);
      a_first[t] = vld1q_s8(a_q[t] + b * kQK);
      a_second[t] = vld1q_s8(a_q[t] + b * kQK + 16);
    }
    if constexpr (IsNibbles(kF)) {
      const uint8x16_t mask = vdupq_n_u8(0x0f);
      // Q5_Kx8's fifth bits of rows 0-3 and 4-7, laid out as a nibble byte pair's bytes.
      constexpr bool kQ5 = kF == PackedFormat::kQ5_Kx8;
      const uint8x16_t plane0 = kQ5 ? vld1q_u8(block + kQ5HighOffset) : vdupq_n_u8(0);
      const uint8x16_t plane1 = kQ5 ? vld1q_u8(block + kQ5HighOffset + 16) : vdupq_n_u8(0);
#define REPRISE_Q4_PAIR(p)                                      \
  {                                                             \
    const uint8x16_t w0 = vld1q_u8(q + (p)*32);                 \
    const uint8x16_t w1 = vld1q_u8(q + (p)*32 + 16);            \
    uint8x16_t lo0 = vandq_u8(w0, mask);                        \
    uint8x16_t lo1 = vandq_u8(w1, mask);                        \
    uint8x16_t hi0 = vshrq_n_u8(w0, 4);                         \
    uint8x16_t hi1 = vshrq_n_u8(w1, 4);                         \
    if constexpr (kQ5) {                                        \
      lo0 = WithFifthBits<2 * (p)>(lo0, plane0);                \
      lo1 = WithFifthBits<2 * (p)>(lo1, plane1);                \
      hi0 = WithFifthBits<2 * (p) + 1>(hi0, plane0);            \
      hi1 = WithFifthBits<2 * (p) + 1>(hi1, plane1);            \
    }                                                           \
    const int8x16_t l0 = vreinterpretq_s8_u8(lo0);              \
    const int8x16_t l1 = vreinterpretq_s8_u8(lo1);              \
    const int8x16_t h0 = vreinterpretq_s8_u8(hi0);              \
    const int8x16_t h1 = vreinterpretq_s8_u8(hi1);              \
    for (int t = 0; t < T; ++t) {                               \
      s_lo[t] = vdotq_laneq_s32(s_lo[t], l0, a_first[t], (p));  \
      s_hi[t] = vdotq_laneq_s32(s_hi[t], l1, a_first[t], (p));  \
      s_lo[t] = vdotq_laneq_s32(s_lo[t], h0, a_second[t], (p)); \
      s_hi[t] = vdotq_laneq_s32(s_hi[t], h1, a_second[t], (p)); \
    }                                                           \
  }
      REPRISE_Q4_PAIR(0)
      REPRISE_Q4_PAIR(1)
      REPRISE_Q4_PAIR(2)
      REPRISE_Q4_PAIR(3)
#undef REPRISE_Q4_PAIR
      // Q4_0's nibbles are value + 8: remove 8 x the block's activation sum.
      for (int t = 0; t < T && !IsAffine(kF); ++t) {
        int32_t sum;
        std::memcpy(&sum, a_row[t] + sums_offset + 4 * b, sizeof(sum));
        const int32x4_t offset = vdupq_n_s32(8 * sum);
        s_lo[t] = vsubq_s32(s_lo[t], offset);
        s_hi[t] = vsubq_s32(s_hi[t], offset);
      }
    } else {
#define REPRISE_Q8_CHUNK(c, a, lane)                                                 \
  {                                                                                  \
    const int8x16_t w0 = vld1q_s8(reinterpret_cast<const int8_t*>(q) + (c)*32);      \
    const int8x16_t w1 = vld1q_s8(reinterpret_cast<const int8_t*>(q) + (c)*32 + 16); \
    for (int t = 0; t < T; ++t) {                                                    \
      s_lo[t] = vdotq_laneq_s32(s_lo[t], w0, a[t], (lane));                          \
      s_hi[t] = vdotq_laneq_s32(s_hi[t], w1, a[t], (lane));                          \
    }                                                                                \
  }
      REPRISE_Q8_CHUNK(0, a_first, 0)
      REPRISE_Q8_CHUNK(1, a_first, 1)
      REPRISE_Q8_CHUNK(2, a_first, 2)
      REPRISE_Q8_CHUNK(3, a_first, 3)
      REPRISE_Q8_CHUNK(4, a_second, 0)
      REPRISE_Q8_CHUNK(5, a_second, 1)
      REPRISE_Q8_CHUNK(6, a_second, 2)
      REPRISE_Q8_CHUNK(7, a_second, 3)
#undef REPRISE_Q8_CHUNK
    }
    float32x4_t d_lo, d_hi, m_lo, m_hi;
    if constexpr (IsAffine(kF)) {
      Q4KBlockScales(group, block, b, d_lo, d_hi, m_lo, m_hi);
    } else {
      LoadScales(block, d_lo, d_hi);
    }
    for (int t = 0; t < T; ++t) {
      float d_a;
      std::memcpy(&d_a, a_row[t] + scales_offset + 4 * b, sizeof(d_a));
      acc_lo[t] = vfmaq_f32(acc_lo[t], vcvtq_f32_s32(s_lo[t]), vmulq_n_f32(d_lo, d_a));
      acc_hi[t] = vfmaq_f32(acc_hi[t], vcvtq_f32_s32(s_hi[t]), vmulq_n_f32(d_hi, d_a));
      if constexpr (IsAffine(kF)) {
        SubtractMins(m_lo, m_hi, d_a, a_row[t] + sums_offset + 4 * b, acc_lo[t], acc_hi[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    Store(acc_lo[t], acc_hi[t], out.data + (m + t) * out.stride, g, n_begin, n_end, out.accumulate);
  }
}

// Q6_Kx8 (packed_matrix.h): w = q - 32 of the 4 rows at `low` / `top` (16 bytes each: rows'
// 4 columns), half h of nibble byte pair p.
template <int P, int H>
inline int8x16_t Q6Weights(const uint8_t* low, const uint8_t* top) {
  constexpr int kShift = 4 * (P % 2) + 2 * H;  // where the column's top bits are
  const uint8x16_t top_bits = vld1q_u8(top);
  uint8x16_t high;
  if constexpr (kShift <= 4) {
    high = vshlq_n_u8(top_bits, 4 - kShift);
  } else {
    high = vshrq_n_u8(top_bits, kShift - 4);
  }
  const uint8x16_t raw = vld1q_u8(low);
  const uint8x16_t nibble = H == 0 ? vandq_u8(raw, vdupq_n_u8(0x0f)) : vshrq_n_u8(raw, 4);
  const uint8x16_t q = vorrq_u8(nibble, vandq_u8(high, vdupq_n_u8(0x30)));
  return vsubq_s8(vreinterpretq_s8_u8(q), vdupq_n_s8(32));
}

// One group of 8 rows of Q6_Kx8 against T tokens: per block and half, sdot of the signed
// 6-bit values, times the half's int8 scales in int32, then one FMA by d * d_a.
template <int T>
void Q6Group(const PackedMatrix& w, int64_t g, const MatMulInput& x, int64_t m,
             const MatMulOutput& out, int64_t n_begin, int64_t n_end) {
  const uint8_t* group = w.group(g);
  const int64_t blocks = w.cols / kQK;
  float32x4_t acc_lo[T], acc_hi[T];
  const uint8_t* a_row[T];
  for (int t = 0; t < T; ++t) {
    acc_lo[t] = vdupq_n_f32(0.0f);
    acc_hi[t] = vdupq_n_f32(0.0f);
    a_row[t] = x.q8 + (m + t) * x.q8_stride;
  }
  const int64_t scales_offset = w.cols;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + Q6BlockOffset(w.cols, b);
    const uint8_t* low = block + kQ6LowOffset;
    const uint8_t* top = block + kQ6HighOffset;
    int32x4_t i_lo[T], i_hi[T];
    for (int t = 0; t < T; ++t) {
      i_lo[t] = vdupq_n_s32(0);
      i_hi[t] = vdupq_n_s32(0);
    }
    auto half = [&](auto h_constant) __attribute__((always_inline)) {
      constexpr int kH = decltype(h_constant)::value;
      int32x4_t s_lo[T], s_hi[T];
      int8x16_t a[T];
      for (int t = 0; t < T; ++t) {
        s_lo[t] = vdupq_n_s32(0);
        s_hi[t] = vdupq_n_s32(0);
        a[t] = vld1q_s8(reinterpret_cast<const int8_t*>(a_row[t]) + b * kQK + 16 * kH);
      }
#define REPRISE_Q6_PAIR(p)                                                               \
  {                                                                                      \
    const int8x16_t w0 = Q6Weights<(p), kH>(low + (p)*32, top + (p) / 2 * 32);           \
    const int8x16_t w1 = Q6Weights<(p), kH>(low + (p)*32 + 16, top + (p) / 2 * 32 + 16); \
    for (int t = 0; t < T; ++t) {                                                        \
      s_lo[t] = vdotq_laneq_s32(s_lo[t], w0, a[t], (p));                                 \
      s_hi[t] = vdotq_laneq_s32(s_hi[t], w1, a[t], (p));                                 \
    }                                                                                    \
  }
      REPRISE_Q6_PAIR(0)
      REPRISE_Q6_PAIR(1)
      REPRISE_Q6_PAIR(2)
      REPRISE_Q6_PAIR(3)
#undef REPRISE_Q6_PAIR
      const int16x8_t scales = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(block) + 8 * kH));
      const int32x4_t sc_lo = vmovl_s16(vget_low_s16(scales));
      const int32x4_t sc_hi = vmovl_s16(vget_high_s16(scales));
      for (int t = 0; t < T; ++t) {
        i_lo[t] = vmlaq_s32(i_lo[t], s_lo[t], sc_lo);
        i_hi[t] = vmlaq_s32(i_hi[t], s_hi[t], sc_hi);
      }
    };
    half(std::integral_constant<int, 0>());
    half(std::integral_constant<int, 1>());
    float32x4_t d_lo, d_hi;
    LoadScales(group + b / 8 * kQ6SuperHeaderBytes, d_lo, d_hi);
    for (int t = 0; t < T; ++t) {
      float d_a;
      std::memcpy(&d_a, a_row[t] + scales_offset + 4 * b, sizeof(d_a));
      acc_lo[t] = vfmaq_f32(acc_lo[t], vcvtq_f32_s32(i_lo[t]), vmulq_n_f32(d_lo, d_a));
      acc_hi[t] = vfmaq_f32(acc_hi[t], vcvtq_f32_s32(i_hi[t]), vmulq_n_f32(d_hi, d_a));
    }
  }
  for (int t = 0; t < T; ++t) {
    Store(acc_lo[t], acc_hi[t], out.data + (m + t) * out.stride, g, n_begin, n_end, out.accumulate);
  }
}

// One group of 8 rows of float weights (F32 or F16) against one token.
template <bool kF16>
void FloatGroup(const PackedMatrix& w, int64_t g, const MatMulInput& x, int64_t m,
                const MatMulOutput& out, int64_t n_begin, int64_t n_end) {
  const uint8_t* group = w.group(g);
  const float* a = x.f32 + m * x.f32_stride;
  float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
  for (int64_t k = 0; k < w.cols; ++k) {
    float32x4_t w_lo, w_hi;
    if constexpr (kF16) {
      LoadScales(group + k * kPackRows * 2, w_lo, w_hi);
    } else {
      const float* p = reinterpret_cast<const float*>(group) + k * kPackRows;
      w_lo = vld1q_f32(p);
      w_hi = vld1q_f32(p + 4);
    }
    lo = vfmaq_n_f32(lo, w_lo, a[k]);
    hi = vfmaq_n_f32(hi, w_hi, a[k]);
  }
  Store(lo, hi, out.data + m * out.stride, g, n_begin, n_end, out.accumulate);
}

template <PackedFormat kF>
void BlockMatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out,
                 int64_t m_begin, int64_t m_end, int64_t g_begin, int64_t g_end, int64_t n_begin,
                 int64_t n_end) {
  for (int64_t g = g_begin; g < g_end; ++g) {
    int64_t m = m_begin;
    for (; m + kTile <= m_end; m += kTile) {
      BlockGroup<kTile, kF>(w, g, x, m, out, n_begin, n_end);
    }
    for (; m < m_end; ++m) BlockGroup<1, kF>(w, g, x, m, out, n_begin, n_end);
  }
}

}  // namespace

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  REPRISE_DCHECK(0 <= m_begin && m_begin <= m_end);
  REPRISE_DCHECK(0 <= n_begin && n_begin <= n_end && n_end <= w.rows);
  if (m_begin == m_end || n_begin == n_end) return;
  const int64_t g_begin = n_begin / kPackRows;
  const int64_t g_end = (n_end + kPackRows - 1) / kPackRows;
  switch (w.format) {
    case PackedFormat::kQ8_0x8:
      BlockMatMul<PackedFormat::kQ8_0x8>(w, x, out, m_begin, m_end, g_begin, g_end, n_begin, n_end);
      return;
    case PackedFormat::kQ4_0x8:
      BlockMatMul<PackedFormat::kQ4_0x8>(w, x, out, m_begin, m_end, g_begin, g_end, n_begin, n_end);
      return;
    case PackedFormat::kQ4_Kx8:
      BlockMatMul<PackedFormat::kQ4_Kx8>(w, x, out, m_begin, m_end, g_begin, g_end, n_begin, n_end);
      return;
    case PackedFormat::kQ5_Kx8:
      BlockMatMul<PackedFormat::kQ5_Kx8>(w, x, out, m_begin, m_end, g_begin, g_end, n_begin, n_end);
      return;
    case PackedFormat::kQ6_Kx8:
      for (int64_t g = g_begin; g < g_end; ++g) {
        int64_t m = m_begin;
        for (; m + kTile <= m_end; m += kTile) Q6Group<kTile>(w, g, x, m, out, n_begin, n_end);
        for (; m < m_end; ++m) Q6Group<1>(w, g, x, m, out, n_begin, n_end);
      }
      return;
    case PackedFormat::kI8x8:  // the NPU-style path: the portable kernel
      scalar::MatMul(w, x, out, m_begin, m_end, n_begin, n_end);
      return;
    case PackedFormat::kF16x8:
    case PackedFormat::kF32x8:
      for (int64_t g = g_begin; g < g_end; ++g) {
        for (int64_t m = m_begin; m < m_end; ++m) {
          if (w.format == PackedFormat::kF16x8) {
            FloatGroup<true>(w, g, x, m, out, n_begin, n_end);
          } else {
            FloatGroup<false>(w, g, x, m, out, n_begin, n_end);
          }
        }
      }
      return;
  }
}

}  // namespace reprise::kernels::neon
