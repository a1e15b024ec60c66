// ARM NEON matmul of the block formats (Q8_0x8, Q4_0x8, Q4_Kx8, Q5_Kx8) with the int8
// matrix-multiply instruction (smmla, Armv8.6-A I8MM: Cortex-A710/X2 and later): the neon-i8mm
// set's matmul for prefill, where two or more activation rows share the weights. One-row calls
// (decode), an odd row left over and the other formats go to the neon-dotprod kernel
// (matmul_neon.cc). Compiled with -march=armv8.2-a+dotprod+i8mm; only NeonI8mmKernels() hands
// it out, after the CPU reported both DotProd and I8MM.
//
// smmla multiplies a 2 x 8 int8 matrix by an 8 x 2 one into a 2 x 2 int32 block: 32
// multiply-adds where sdot does 16. The packed layout stays the dot-product one — [chunk
// c][row 0..7][4 values] — so one 16-byte load is rows 0-3 of a 4-column chunk, and zipping the
// 32-bit lanes of chunks c and c + 1 (vzip1q_s32 / vzip2q_s32) gives rows (0, 1) / (2, 3) over
// 8 columns: the right operand. For Q4_0 (and Q4_Kx8, whose mins enter in float as - min *
// d_a * sum(a)) the bytes are zipped first and split into nibbles after (low nibbles: columns
// 8j..8j+7, high: 16 + 8j..); for Q5_Kx8 (Q4_Kx8 plus a fifth bit per value) the block's plane
// of fifth bits is zipped the same way once per block, and its bits are set into the split
// nibbles as 16 (q in 0..31, still an int8 for smmla). The left operand is two tokens' 8
// activations, two 8-byte loads where it is used (zipping 16-byte loads up front would keep
// more registers live). Each zipped weight operand serves 2 token pairs: a tile of 4 tokens x 8
// rows, whose 8 int32 block sums, 8 float accumulators and operands about fill the 32
// registers. The [t0 r0, t0 r1, t1 r0, t1 r1] results of row pairs (0, 1) and (2, 3) become
// token t0's rows 0-3 with vzip1q_s64 and t1's with vzip2q_s64. Its speed has not been measured
// on hardware: it was checked bit for bit under qemu, and emulation says nothing about speed.
//
// The float operations are those of the scalar reference, in the same order (an exact int32
// dot per block — for Q4_0 minus 8 x the activations' block sum — then acc = fma(dot, d_w *
// d_a, acc) block after block), so the results agree with it, and with matmul_neon.cc, to the
// bit.

#include <arm_neon.h>

#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/matmul_neon_groups.h"  // LoadScales, Store, the block sizes
#include "kernels/quant_blocks.h"

namespace reprise::kernels::neon_i8mm {
namespace {

constexpr int kTilePairs = 2;  // token pairs per weight load: a tile of 4 tokens x 8 rows

// Two tokens' 8 activations at `a0` and `a1`, as the smmla left operand [a0 0..7, a1 0..7].
inline int8x16_t LoadTokenPair(const int8_t* a0, const int8_t* a1) {
  return vcombine_s8(vld1_s8(a0), vld1_s8(a1));
}

// The low and high 64-bit halves of a and b, as one vector: [a.lo, b.lo] / [a.hi, b.hi].
inline int32x4_t ZipLow64(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}
inline int32x4_t ZipHigh64(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
}

// Rows 0-3 (`lo`) and 4-7 (`hi`) of chunks c (`*_c`) and c + 1 (`*_c1`) as the smmla right
// operands of row pairs (0, 1), (2, 3), (4, 5), (6, 7) over the chunks' 8 columns.
inline void ZipRowPairs(uint8x16_t lo_c, uint8x16_t lo_c1, uint8x16_t hi_c, uint8x16_t hi_c1,
                        uint8x16_t pairs[4]) {
  const uint32x4_t l0 = vreinterpretq_u32_u8(lo_c), l1 = vreinterpretq_u32_u8(lo_c1);
  const uint32x4_t h0 = vreinterpretq_u32_u8(hi_c), h1 = vreinterpretq_u32_u8(hi_c1);
  pairs[0] = vreinterpretq_u8_u32(vzip1q_u32(l0, l1));
  pairs[1] = vreinterpretq_u8_u32(vzip2q_u32(l0, l1));
  pairs[2] = vreinterpretq_u8_u32(vzip1q_u32(h0, h1));
  pairs[3] = vreinterpretq_u8_u32(vzip2q_u32(h0, h1));
}

// One group of 8 rows of block format kF (Q8_0x8, Q4_0x8, Q4_Kx8 or Q5_Kx8) against 2P tokens
// (P pairs) of quantized activations.
template <int P, PackedFormat kF>
void BlockGroup(const PackedMatrix& w, int64_t g, const MatMulInput& x, int64_t m,
                const MatMulOutput& out, int64_t n_begin, int64_t n_end) {
  constexpr int T = 2 * P;
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
  const int64_t sums_offset = w.cols + blocks * 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + BlocksOffset(kF, w.cols) + b * GroupBlockBytes(kF);
    const uint8_t* q = block + 2 * kPackRows;
    // s[p][r]: tokens 2p, 2p + 1 by weight rows 2r, 2r + 1, as [t0 r0, t0 r1, t1 r0, t1 r1].
    int32x4_t s[P][4];
    const int8_t* a[T];  // the block's activations
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(a_row[t]) + b * kQK;
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < 4; ++r) s[p][r] = vdupq_n_s32(0);
    }
    if constexpr (IsNibbles(kF)) {
      // Pairs 2j and 2j + 1 hold chunks 2j, 2j + 1 (columns 8j..8j+7) in their low nibbles
      // and chunks 2j + 4, 2j + 5 (columns 16 + 8j..) in their high ones.
      const uint8x16_t mask = vdupq_n_u8(0x0f);
      // Q5_Kx8's fifth bits, zipped as the nibble bytes are. A plane byte holds pair p's bits
      // at 2p and 2p + 1, so zipping the plane with itself shifted right by 2 puts those of
      // pairs 2j and 2j + 1 both at bit 4j (low nibbles) and 4j + 1 (high ones).
      constexpr bool kQ5 = kF == PackedFormat::kQ5_Kx8;
      uint8x16_t fifth[4];
      if constexpr (kQ5) {
        const uint8x16_t plane0 = vld1q_u8(block + kQ5HighOffset);       // rows 0-3
        const uint8x16_t plane1 = vld1q_u8(block + kQ5HighOffset + 16);  // rows 4-7
        ZipRowPairs(plane0, vshrq_n_u8(plane0, 2), plane1, vshrq_n_u8(plane1, 2), fifth);
      }
      auto chunk_pairs = [&](auto j_constant) __attribute__((always_inline)) {
        constexpr int j = decltype(j_constant)::value;
        const uint8_t* c0 = q + (2 * j) * 32;
        const uint8_t* c1 = c0 + 32;
        uint8x16_t pairs[4];
        ZipRowPairs(vld1q_u8(c0), vld1q_u8(c1), vld1q_u8(c0 + 16), vld1q_u8(c1 + 16), pairs);
        int8x16_t a_lo[P], a_hi[P];
        for (int p = 0; p < P; ++p) {
          a_lo[p] = LoadTokenPair(a[2 * p] + 8 * j, a[2 * p + 1] + 8 * j);
          a_hi[p] = LoadTokenPair(a[2 * p] + 16 + 8 * j, a[2 * p + 1] + 16 + 8 * j);
        }
        for (int r = 0; r < 4; ++r) {
          uint8x16_t lo = vandq_u8(pairs[r], mask);
          uint8x16_t hi = vshrq_n_u8(pairs[r], 4);
          if constexpr (kQ5) {
            lo = WithFifthBits<4 * j>(lo, fifth[r]);
            hi = WithFifthBits<4 * j + 1>(hi, fifth[r]);
          }
          for (int p = 0; p < P; ++p) {
            s[p][r] = vmmlaq_s32(s[p][r], a_lo[p], vreinterpretq_s8_u8(lo));
            s[p][r] = vmmlaq_s32(s[p][r], a_hi[p], vreinterpretq_s8_u8(hi));
          }
        }
      };
      chunk_pairs(std::integral_constant<int, 0>());
      chunk_pairs(std::integral_constant<int, 1>());
    } else {
      for (int j = 0; j < 4; ++j) {  // chunks 2j, 2j + 1: columns 8j..8j+7
        const uint8_t* c0 = q + (2 * j) * 32;
        const uint8_t* c1 = c0 + 32;
        uint8x16_t pairs[4];
        ZipRowPairs(vld1q_u8(c0), vld1q_u8(c1), vld1q_u8(c0 + 16), vld1q_u8(c1 + 16), pairs);
        int8x16_t a_j[P];
        for (int p = 0; p < P; ++p) a_j[p] = LoadTokenPair(a[2 * p] + 8 * j, a[2 * p + 1] + 8 * j);
        for (int r = 0; r < 4; ++r) {
          const int8x16_t rows = vreinterpretq_s8_u8(pairs[r]);
          for (int p = 0; p < P; ++p) s[p][r] = vmmlaq_s32(s[p][r], a_j[p], rows);
        }
      }
    }
    float32x4_t d_lo, d_hi, m_lo, m_hi;
    if constexpr (IsAffine(kF)) {
      Q4KBlockScales(group, block, b, d_lo, d_hi, m_lo, m_hi);
    } else {
      LoadScales(block, d_lo, d_hi);
    }
    for (int t = 0; t < T; ++t) {
      const int p = t / 2;
      int32x4_t dot_lo = t % 2 == 0 ? ZipLow64(s[p][0], s[p][1]) : ZipHigh64(s[p][0], s[p][1]);
      int32x4_t dot_hi = t % 2 == 0 ? ZipLow64(s[p][2], s[p][3]) : ZipHigh64(s[p][2], s[p][3]);
      if constexpr (kF == PackedFormat::kQ4_0x8) {
        // Q4_0's nibbles are value + 8: remove 8 x the block's activation sum.
        int32_t sum;
        std::memcpy(&sum, a_row[t] + sums_offset + 4 * b, sizeof(sum));
        const int32x4_t offset = vdupq_n_s32(8 * sum);
        dot_lo = vsubq_s32(dot_lo, offset);
        dot_hi = vsubq_s32(dot_hi, offset);
      }
      float d_a;
      std::memcpy(&d_a, a_row[t] + scales_offset + 4 * b, sizeof(d_a));
      acc_lo[t] = vfmaq_f32(acc_lo[t], vcvtq_f32_s32(dot_lo), vmulq_n_f32(d_lo, d_a));
      acc_hi[t] = vfmaq_f32(acc_hi[t], vcvtq_f32_s32(dot_hi), vmulq_n_f32(d_hi, d_a));
      if constexpr (IsAffine(kF)) {
        SubtractMins(m_lo, m_hi, d_a, a_row[t] + sums_offset + 4 * b, acc_lo[t], acc_hi[t]);
      }
    }
  }
  // Unrolled, so that the accumulators stay in registers instead of an array in memory.
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    Store(acc_lo[t], acc_hi[t], out.data + (m + t) * out.stride, g, n_begin, n_end, out.accumulate);
  }
}

// Tokens [m_begin, m_end), an even count, in tiles of 2 pairs and at most one of 1 pair.
template <PackedFormat kF>
void BlockMatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out,
                 int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) {
  const int64_t g_begin = n_begin / kPackRows;
  const int64_t g_end = (n_end + kPackRows - 1) / kPackRows;
  for (int64_t g = g_begin; g < g_end; ++g) {
    int64_t m = m_begin;
    for (; m + 2 * kTilePairs <= m_end; m += 2 * kTilePairs) {
      BlockGroup<kTilePairs, kF>(w, g, x, m, out, n_begin, n_end);
    }
    for (; m < m_end; m += 2) BlockGroup<1, kF>(w, g, x, m, out, n_begin, n_end);
  }
}

}  // namespace

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  REPRISE_DCHECK(0 <= m_begin && m_begin <= m_end);
  REPRISE_DCHECK(0 <= n_begin && n_begin <= n_end && n_end <= w.rows);
  const int64_t m_pairs_end = m_begin + (m_end - m_begin) / 2 * 2;
  // Q6_Kx8 (6-bit values in two parts, a scale per 16 columns): the DotProd kernel.
  if (!UsesQuantizedActivations(w.format) || w.format == PackedFormat::kQ6_Kx8 ||
      m_pairs_end == m_begin || n_begin == n_end) {
    neon::MatMul(w, x, out, m_begin, m_end, n_begin, n_end);
    return;
  }
  if (w.format == PackedFormat::kQ4_0x8) {
    BlockMatMul<PackedFormat::kQ4_0x8>(w, x, out, m_begin, m_pairs_end, n_begin, n_end);
  } else if (w.format == PackedFormat::kQ4_Kx8) {
    BlockMatMul<PackedFormat::kQ4_Kx8>(w, x, out, m_begin, m_pairs_end, n_begin, n_end);
  } else if (w.format == PackedFormat::kQ5_Kx8) {
    BlockMatMul<PackedFormat::kQ5_Kx8>(w, x, out, m_begin, m_pairs_end, n_begin, n_end);
  } else {
    BlockMatMul<PackedFormat::kQ8_0x8>(w, x, out, m_begin, m_pairs_end, n_begin, n_end);
  }
  // The odd token left over: the DotProd kernel computes the same bits.
  if (m_pairs_end < m_end) neon::MatMul(w, x, out, m_pairs_end, m_end, n_begin, n_end);
}

}  // namespace reprise::kernels::neon_i8mm
