// AVX-512 VNNI matmul kernels for the block formats (Q8_0x8, Q4_0x8, Q4_Kx8, Q6_Kx8) and the
// NPU-style per-row int8 format (kI8x8), over the packed layouts of packed_matrix.h; the
// float formats go to the AVX2 kernels.
//
// One zmm register holds the outputs of two neighbouring groups (lanes 0-7: the 8 rows of
// group g, lanes 8-15: those of group g + 1), so a 4-byte activation chunk is a plain 32-bit
// broadcast, and one vpdpbusd adds 4 byte products per lane straight into int32 (AVX2 needs
// maddubs + madd + add). The register tile is T tokens x P group pairs of float
// accumulators; a group left over at the end of a range goes to the AVX2 kernel.
//
// vpdpbusd multiplies unsigned by signed bytes:
//  - Q8_0 (signed weights, signed activations): the weights are made unsigned as they are
//    loaded, by adding 128 (w xor 0x80), so per block sum((w + 128) * a) = sum(w * a) +
//    128 * sum(a), and sum(a) is the activation row's block sum (activation_quant.h): one
//    subtraction per token and block. (Biasing the activations instead needs 128 * sum(w),
//    a vpdpbusd per weight load on top of the products: 25% more of them, and an xor per
//    token and chunk rather than per weight load.)
//  - Q4_0: the nibbles (value + 8) are the unsigned operand and the activations the signed
//    one; the +8 is removed with the activation block sum, as in the AVX2 kernel.
//  - Q4_Kx8 (value d * nibble - min): the same nibble products; min enters in float, as a
//    second FMA per block of - min * d_a * sum(a), d and min prepared per M chunk.
//  - Q6_Kx8 (value d * scale_h * w, w = q - 32 signed, a scale per 16-column half h): here
//    the activations are made unsigned (a + 128: the driver xors a copy of each M chunk's
//    rows once), so per half sum((a + 128) w) = sum(a w) + 128 sum(w); the halves'
//    sums are multiplied by their scales (vpmulld) and 128 * (scale_0 sum_0(w) + scale_1
//    sum_1(w)), prepared per block with the unpacked weights, is subtracted.
// Both give the exact int32 block dot product; it becomes float and is added with one FMA
// scaled by d_weight * d_activation, as in the scalar reference.

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/matmul_avx2_tiles.h"  // TileOperands, TileTarget, StoreGroup, the block sizes
#include "kernels/matmul_scratch.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx512_vnni {
namespace {

constexpr int kMaxPairTileTokens = 4;
constexpr int kTilePairs = 2;  // group pairs per tile: 32 output rows

// 32 bytes at `a` (group g) and 32 at `b` (group g + 1) as one register.
inline __m512i LoadPair(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// The 8 half-float scales of both groups' block, as floats in the pair's lanes.
inline __m512 LoadPairScales(const uint8_t* a, const uint8_t* b) {
  return _mm512_insertf32x8(
      _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)))),
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b))), 1);
}

// Q4_Kx8: the float d and min of each block of a group pair (Q4KBlockScales), prepared once
// per M chunk: per block 16 d (group g's 8 rows, then group g + 1's), then 16 mins.
constexpr int64_t kQ4KPairScaleBytes = 2 * 16 * 4;

void PrepareQ4KPairScales(const uint8_t* a, int64_t group_bytes, int64_t k, uint8_t* dst) {
  const int64_t num_blocks = k / kQK;
  const int64_t blocks_offset = NibbleBlocksOffset<Nibbles::kQ4_K>(k);
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* out = reinterpret_cast<float*>(dst + b * kQ4KPairScaleBytes);
    for (int g = 0; g < 2; ++g) {
      const uint8_t* group = a + g * group_bytes;
      __m256 d, min;
      Q4KBlockScales(group, group + blocks_offset + b * kQ4GroupBlockBytes, b, d, min);
      _mm256_storeu_ps(out + 8 * g, d);
      _mm256_storeu_ps(out + 16 + 8 * g, min);
    }
  }
}

// Q5_Kx8 prepared once per M chunk, per block of a group pair: the 5-bit values as 8 register
// images ([byte pair q][low, high nibbles], as SplitNibbles makes them for each group), then
// the 16 rows' float d and 16 mins (Q4KBlockScales). Merging the fifth bits in the tiles
// instead costs every tile 9 more ops per byte pair and group pair.
constexpr int64_t kQ5PairBlockBytes = 8 * 64 + kQ4KPairScaleBytes;

void PrepareQ5KPair(const uint8_t* a, int64_t group_bytes, int64_t k, uint8_t* dst) {
  const int64_t blocks_offset = NibbleBlocksOffset<Nibbles::kQ5_K>(k);
  for (int64_t b = 0; b < k / kQK; ++b) {
    uint8_t* out = dst + b * kQ5PairBlockBytes;
    for (int g = 0; g < 2; ++g) {
      const uint8_t* group = a + g * group_bytes;
      const uint8_t* block = group + blocks_offset + b * kQ5GroupBlockBytes;
      const __m256i plane = LoadFifthBits<Nibbles::kQ5_K>(block);
      for (int q = 0; q < 4; ++q) {
        __m256i lo, hi;
        SplitNibbles<Nibbles::kQ5_K>(block + kScaleBytes, q, plane, lo, hi);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * q * 64 + 32 * g), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (2 * q + 1) * 64 + 32 * g), hi);
      }
      __m256 d, min;
      Q4KBlockScales(group, block, b, d, min);
      float* scales = reinterpret_cast<float*>(out + 8 * 64);
      _mm256_storeu_ps(scales + 8 * g, d);
      _mm256_storeu_ps(scales + 16 + 8 * g, min);
    }
  }
}

// Q6_Kx8 prepared once per M chunk, per block of a group pair: the weights w = q - 32 as 8
// register images ([h][chunk]), the two halves' int32 scales, the int32 correction 128 *
// (scale_0 sum_0(w) + scale_1 sum_1(w)) of each row, and the rows' float d.
constexpr int64_t kQ6PairBlockBytes = 8 * 64 + 2 * 64 + 64 + 64;

void PrepareQ6KPair(const uint8_t* a, int64_t group_bytes, int64_t k, uint8_t* dst) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < k / kQK; ++b) {
    uint8_t* out = dst + b * kQ6PairBlockBytes;
    for (int g = 0; g < 2; ++g) {
      const uint8_t* group = a + g * group_bytes;
      const uint8_t* block = group + Q6BlockOffset(k, b);
      __m256i correction = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        __m256i weight_sum = _mm256_setzero_si256();  // sum_h(w) of each row
        for (int q = 0; q < 4; ++q) {
          const __m256i w = Q6KWeights(block, q, h);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (h * 4 + q) * 64 + 32 * g), w);
          weight_sum = DpBusd(weight_sum, ones, w);
        }
        const __m256i scales = Q6KScales<true>(block, h);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 512 + h * 64 + 32 * g), scales);
        correction = _mm256_add_epi32(correction, _mm256_mullo_epi32(weight_sum, scales));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 640 + 32 * g),
                          _mm256_slli_epi32(correction, 7));
      _mm256_storeu_ps(reinterpret_cast<float*>(out + 704 + 32 * g), Q6KBlockD(group, b));
    }
  }
}

// Q8_0 weights prepared once per M chunk for the tiles of every token: per chunk c of a block,
// one 64-byte register image of both groups' 32 bytes, + 128, so that a tile loads it with one
// instruction instead of two loads, an insert and an xor. (Not for Q4_0: its nibbles split
// take more bytes than the packed ones and measured no faster; docs/benchmarks.md, "Figures
// behind constants in the code".)
constexpr int64_t kQ8PairBlockBytes = 8 * 64;

// Group pair (a, a + group_bytes), K columns, into dst: block b of the pair at
// b * kQ8PairBlockBytes.
void PrepareQ8Pair(const uint8_t* a, int64_t group_bytes, int64_t k, uint8_t* dst) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const int64_t num_blocks = k / kQK;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block = a + b * kQ8GroupBlockBytes + kScaleBytes;
    for (int c = 0; c < 8; ++c) {
      const __m512i w = LoadPair(block + c * 32, block + group_bytes + c * 32);
      _mm512_storeu_si512(dst + b * kQ8PairBlockBytes + c * 64, _mm512_xor_si512(w, bias));
    }
  }
}

template <int T, int P>
REPRISE_ALWAYS_INLINE void StoreTile(const __m512 (&acc)[T][P], const TileTarget& target) {
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const int64_t group = target.group + 2 * p;
      StoreGroup(_mm512_castps512_ps256(acc[t][p]), *target.out, target.m + t, group,
                 target.n_begin, target.n_end);
      StoreGroup(_mm512_extractf32x8_ps(acc[t][p], 1), *target.out, target.m + t, group + 1,
                 target.n_begin, target.n_end);
    }
  }
}

template <int T, int P>
REPRISE_ALWAYS_INLINE void PairTileQ8(const TileOperands& op, const TileTarget& target) {
  __m512 acc[T][P];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[t][p] = _mm512_setzero_ps();
  }
  const int64_t num_blocks = op.k / kQK;
  const int64_t scales_offset = op.k;
  const int64_t sums_offset = op.k + num_blocks * 4;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block[2 * P];
#pragma GCC unroll 8
    for (int g = 0; g < 2 * P; ++g) {
      block[g] = op.groups + g * op.group_bytes + b * kQ8GroupBlockBytes;
    }
    __m512i isum[T][P];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) isum[t][p] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      __m512i w[P];  // w + 128, unsigned
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        w[p] = _mm512_loadu_si512(op.prepared + (p * num_blocks + b) * kQ8PairBlockBytes + c * 64);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = op.rows + t * op.row_stride + b * kQK;
        const __m512i av = _mm512_set1_epi32(LoadInt(a + 4 * c));
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) isum[t][p] = _mm512_dpbusd_epi32(isum[t][p], w[p], av);
      }
    }
    __m512 dw[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) dw[p] = LoadPairScales(block[2 * p], block[2 * p + 1]);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const uint8_t* row = op.rows + t * op.row_stride;
      const __m512 da = _mm512_set1_ps(LoadFloat(row + scales_offset + 4 * b));
      const __m512i offset = _mm512_set1_epi32(128 * LoadInt(row + sums_offset + 4 * b));
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const __m512i exact = _mm512_sub_epi32(isum[t][p], offset);
        acc[t][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw[p], da), acc[t][p]);
      }
    }
  }
  StoreTile<T, P>(acc, target);
}

// Q4_0, Q4_Kx8 and Q5_Kx8: the K-quants' blocks' d and min prepared by the driver
// (op.prepared), and Q5_Kx8's 5-bit values (PrepareQ5KPair).
template <Nibbles kF, int T, int P>
REPRISE_ALWAYS_INLINE void PairTileQ4(const TileOperands& op, const TileTarget& target) {
  constexpr bool kQ4K = IsAffine(kF);
  const int64_t blocks_offset = NibbleBlocksOffset<kF>(op.k);
  __m512 acc[T][P];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[t][p] = _mm512_setzero_ps();
  }
  const int64_t num_blocks = op.k / kQK;
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  const int64_t scales_offset = op.k;
  const int64_t sums_offset = op.k + num_blocks * 4;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block[2 * P];
#pragma GCC unroll 8
    for (int g = 0; g < 2 * P; ++g) {
      block[g] = op.groups + g * op.group_bytes + blocks_offset + b * NibbleBlockBytes<kF>();
    }
    // The driver's preparation of block b of pair p: Q5_Kx8's values and scales, or Q4_Kx8's
    // scales (Q4_0 has none: op.prepared is null).
    const uint8_t* prepared[P] = {};
    if constexpr (kQ4K) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        prepared[p] =
            op.prepared +
            (p * num_blocks + b) * (kF == Nibbles::kQ5_K ? kQ5PairBlockBytes : kQ4KPairScaleBytes);
      }
    }
    __m512i isum[T][P];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) isum[t][p] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {  // byte pair q: columns 4q.. (low) and 16 + 4q.. (high)
      __m512i lo[P];
      __m512i hi[P];
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        if constexpr (kF == Nibbles::kQ5_K) {
          lo[p] = _mm512_loadu_si512(prepared[p] + 2 * q * 64);
          hi[p] = _mm512_loadu_si512(prepared[p] + (2 * q + 1) * 64);
        } else {
          const __m512i raw = LoadPair(block[2 * p] + kScaleBytes + q * 32,
                                       block[2 * p + 1] + kScaleBytes + q * 32);
          lo[p] = _mm512_and_si512(raw, low_mask);
          hi[p] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = op.rows + t * op.row_stride + b * kQK;
        const __m512i a_lo = _mm512_set1_epi32(LoadInt(a + 4 * q));
        const __m512i a_hi = _mm512_set1_epi32(LoadInt(a + 16 + 4 * q));
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          isum[t][p] = _mm512_dpbusd_epi32(isum[t][p], lo[p], a_lo);
          isum[t][p] = _mm512_dpbusd_epi32(isum[t][p], hi[p], a_hi);
        }
      }
    }
    __m512 dw[P];
    __m512 mw[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      if constexpr (kQ4K) {
        const float* scales =
            reinterpret_cast<const float*>(prepared[p] + (kF == Nibbles::kQ5_K ? 8 * 64 : 0));
        dw[p] = _mm512_loadu_ps(scales);
        mw[p] = _mm512_loadu_ps(scales + 16);
      } else {
        dw[p] = LoadPairScales(block[2 * p], block[2 * p + 1]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const uint8_t* row = op.rows + t * op.row_stride;
      const float da_scalar = LoadFloat(row + scales_offset + 4 * b);
      const int32_t a_sum = LoadInt(row + sums_offset + 4 * b);
      const __m512 da = _mm512_set1_ps(da_scalar);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        if constexpr (kQ4K) {
          acc[t][p] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t][p]), _mm512_mul_ps(dw[p], da), acc[t][p]);
          acc[t][p] = _mm512_fnmadd_ps(mw[p], _mm512_set1_ps(da_scalar * static_cast<float>(a_sum)),
                                       acc[t][p]);
        } else {
          const __m512i exact = _mm512_sub_epi32(isum[t][p], _mm512_set1_epi32(8 * a_sum));
          acc[t][p] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw[p], da), acc[t][p]);
        }
      }
    }
  }
  StoreTile<T, P>(acc, target);
}

// Q6_Kx8 from the weights the driver prepared (PrepareQ6KPair) and the activation rows it
// biased (op.rows: values + 128): per block and half, the chunks' products, times the half's
// scales; the bias's share subtracted once per block; one FMA by d * d_a.
template <int T, int P>
REPRISE_ALWAYS_INLINE void PairTileQ6K(const TileOperands& op, const TileTarget& target) {
  __m512 acc[T][P];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[t][p] = _mm512_setzero_ps();
  }
  const int64_t num_blocks = op.k / kQK;
  const int64_t scales_offset = op.k;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* prepared[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
      prepared[p] = op.prepared + (p * num_blocks + b) * kQ6PairBlockBytes;
    __m512i isum[T][P];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512i sum[T][P];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) sum[t][p] = _mm512_setzero_si512();
      }
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        __m512i w[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(prepared[p] + (h * 4 + q) * 64);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const uint8_t* a = op.rows + t * op.row_stride + b * kQK;
          const __m512i biased_a = _mm512_set1_epi32(LoadInt(a + 16 * h + 4 * q));
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p) sum[t][p] = _mm512_dpbusd_epi32(sum[t][p], biased_a, w[p]);
        }
      }
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const __m512i scales = _mm512_loadu_si512(prepared[p] + 512 + h * 64);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m512i scaled = _mm512_mullo_epi32(sum[t][p], scales);
          isum[t][p] = h == 0 ? scaled : _mm512_add_epi32(isum[t][p], scaled);
        }
      }
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const __m512i correction = _mm512_loadu_si512(prepared[p] + 640);
      const __m512 dw = _mm512_loadu_ps(prepared[p] + 704);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512 da =
            _mm512_set1_ps(LoadFloat(op.rows + t * op.row_stride + scales_offset + 4 * b));
        const __m512i exact = _mm512_sub_epi32(isum[t][p], correction);
        acc[t][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw, da), acc[t][p]);
      }
    }
  }
  StoreTile<T, P>(acc, target);
}

// kI8x8 (static per-tensor activations): one int32 accumulator per lane over the whole row,
// the activations made unsigned by +128 as for Q8_0, the correction 128 * sum(w) taken from
// the rows' sums in the group headers at the end; then one product by d_row * static_scale.
template <int T, int P>
REPRISE_ALWAYS_INLINE void PairTileI8(const TileOperands& op, const TileTarget& target) {
  __m512i isum[T][P];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) isum[t][p] = _mm512_setzero_si512();
  }
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const uint8_t* q[2 * P];
#pragma GCC unroll 8
  for (int g = 0; g < 2 * P; ++g) q[g] = op.groups + g * op.group_bytes + kI8x8HeaderBytes;
  const int64_t num_chunks = op.k / 4;
  for (int64_t c = 0; c < num_chunks; ++c) {
    __m512i w[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) w[p] = LoadPair(q[2 * p] + c * 32, q[2 * p + 1] + c * 32);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i av =
          _mm512_xor_si512(_mm512_set1_epi32(LoadInt(op.rows + t * op.row_stride + 4 * c)), bias);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) isum[t][p] = _mm512_dpbusd_epi32(isum[t][p], av, w[p]);
    }
  }
  __m512 acc[T][P];
  const __m512 sa = _mm512_set1_ps(op.static_scale);
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
    const uint8_t* a = op.groups + 2 * p * op.group_bytes;
    const uint8_t* b = a + op.group_bytes;
    const __m512 scale = _mm512_mul_ps(
        _mm512_insertf32x8(
            _mm512_castps256_ps512(_mm256_loadu_ps(reinterpret_cast<const float*>(a))),
            _mm256_loadu_ps(reinterpret_cast<const float*>(b)), 1),
        sa);
    const __m512i bias_sum = _mm512_slli_epi32(LoadPair(a + 4 * kPackRows, b + 4 * kPackRows), 7);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc[t][p] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t][p], bias_sum)), scale);
    }
  }
  StoreTile<T, P>(acc, target);
}

enum class PairKind { kQ8, kQ4, kQ4K, kQ5K, kQ6K, kI8 };

template <PairKind kKind, int T, int P>
__attribute__((noinline)) void RunPairTile(const TileOperands& op, const MatMulOutput& out,
                                           int64_t m, int64_t group, int64_t n_begin,
                                           int64_t n_end) {
  const TileTarget target{&out, m, group, n_begin, n_end};
  if constexpr (kKind == PairKind::kQ8) {
    PairTileQ8<T, P>(op, target);
  } else if constexpr (kKind == PairKind::kI8) {
    PairTileI8<T, P>(op, target);
  } else if constexpr (kKind == PairKind::kQ6K) {
    PairTileQ6K<T, P>(op, target);
  } else {
    constexpr Nibbles kF = kKind == PairKind::kQ4K   ? Nibbles::kQ4_K
                           : kKind == PairKind::kQ5K ? Nibbles::kQ5_K
                                                     : Nibbles::kQ4_0;
    PairTileQ4<kF, T, P>(op, target);
  }
}

// One tile of `tokens` (1..4) tokens by P group pairs.
template <PairKind kKind, int P>
void RunPairTokens(const TileOperands& op, int64_t tokens, const MatMulOutput& out, int64_t m,
                   int64_t group, int64_t n_begin, int64_t n_end) {
  switch (tokens) {
    case 4:
      RunPairTile<kKind, 4, P>(op, out, m, group, n_begin, n_end);
      break;
    case 3:
      RunPairTile<kKind, 3, P>(op, out, m, group, n_begin, n_end);
      break;
    case 2:
      RunPairTile<kKind, 2, P>(op, out, m, group, n_begin, n_end);
      break;
    default:
      RunPairTile<kKind, 1, P>(op, out, m, group, n_begin, n_end);
      break;
  }
}

// The groups [group_begin, group_end) with an even count, as the AVX2 driver walks them: M
// chunks that fit L2; inside a chunk, group pairs outer, token tiles inner, so a tile's
// weights stay in L1 across the chunk's tokens.
template <PairKind kKind>
void MatMulPairs(const PackedMatrix& w, const uint8_t* rows, int64_t row_stride, int64_t row_bytes,
                 const MatMulOutput& out, int64_t m_begin, int64_t m_end, int64_t group_begin,
                 int64_t group_end, int64_t n_begin, int64_t n_end, float static_scale = 0.0f) {
  TileOperands op{nullptr,     static_cast<int64_t>(w.group_bytes()), nullptr, row_stride, w.cols,
                  static_scale};
  const int64_t chunk = std::max<int64_t>(kMaxPairTileTokens,
                                          kActivationChunkBytes / std::max<int64_t>(row_bytes, 1) /
                                              kMaxPairTileTokens * kMaxPairTileTokens);
  constexpr int64_t kTileGroups = 2 * kTilePairs;
  // This thread's prepared weights of one tile's group pairs.
  uint8_t* prepared = nullptr;
  const int64_t pair_bytes = w.cols / kQK * kQ8PairBlockBytes;
  const int64_t q4k_pair_bytes = w.cols / kQK * kQ4KPairScaleBytes;
  const int64_t q5k_pair_bytes = w.cols / kQK * kQ5PairBlockBytes;
  const int64_t q6k_pair_bytes = w.cols / kQK * kQ6PairBlockBytes;
  if constexpr (kKind == PairKind::kQ8) {
    prepared = ThreadMatMulScratch(MatMulScratch::kPreparedWeights, kTilePairs * pair_bytes);
  } else if constexpr (kKind == PairKind::kQ4K) {
    prepared = ThreadMatMulScratch(MatMulScratch::kPreparedWeights, kTilePairs * q4k_pair_bytes);
  } else if constexpr (kKind == PairKind::kQ5K) {
    prepared = ThreadMatMulScratch(MatMulScratch::kPreparedWeights, kTilePairs * q5k_pair_bytes);
  } else if constexpr (kKind == PairKind::kQ6K) {
    prepared = ThreadMatMulScratch(MatMulScratch::kPreparedWeights, kTilePairs * q6k_pair_bytes);
  }
  op.prepared = prepared;
  // Q6_Kx8: this thread's copy of one M chunk's activation rows with their int8 values + 128
  // (xor 0x80), the unsigned operand of its products, made once per chunk instead of once
  // per token, chunk of 4 columns and group-pair step in the tiles.
  for (int64_t m0 = m_begin; m0 < m_end; m0 += chunk) {
    const int64_t m1 = std::min(m_end, m0 + chunk);
    const uint8_t* chunk_rows = rows + m0 * row_stride;
    int64_t chunk_stride = row_stride;
    if constexpr (kKind == PairKind::kQ6K) {
      uint8_t* biased_rows = ThreadMatMulScratch(MatMulScratch::kRows, (m1 - m0) * row_bytes);
      const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
      for (int64_t m = m0; m < m1; ++m) {
        const uint8_t* src = rows + m * row_stride;
        uint8_t* dst = biased_rows + (m - m0) * row_bytes;
        for (int64_t j = 0; j < w.cols; j += 64) {
          _mm512_storeu_si512(dst + j, _mm512_xor_si512(_mm512_loadu_si512(src + j), bias));
        }
        std::memcpy(dst + w.cols, src + w.cols, static_cast<size_t>(row_bytes - w.cols));
      }
      chunk_rows = biased_rows;
      chunk_stride = row_bytes;
    }
    op.row_stride = chunk_stride;
    for (int64_t group = group_begin; group < group_end; group += kTileGroups) {
      op.groups = w.data + group * op.group_bytes;
      const bool whole = group + kTileGroups <= group_end;
      if constexpr (kKind == PairKind::kQ8) {
        const int64_t pairs = whole ? kTilePairs : 1;
        for (int64_t p = 0; p < pairs; ++p) {
          PrepareQ8Pair(op.groups + 2 * p * op.group_bytes, op.group_bytes, w.cols,
                        prepared + p * pair_bytes);
        }
      } else if constexpr (kKind == PairKind::kQ4K) {
        const int64_t pairs = whole ? kTilePairs : 1;
        for (int64_t p = 0; p < pairs; ++p) {
          PrepareQ4KPairScales(op.groups + 2 * p * op.group_bytes, op.group_bytes, w.cols,
                               prepared + p * q4k_pair_bytes);
        }
      } else if constexpr (kKind == PairKind::kQ5K) {
        const int64_t pairs = whole ? kTilePairs : 1;
        for (int64_t p = 0; p < pairs; ++p) {
          PrepareQ5KPair(op.groups + 2 * p * op.group_bytes, op.group_bytes, w.cols,
                         prepared + p * q5k_pair_bytes);
        }
      } else if constexpr (kKind == PairKind::kQ6K) {
        const int64_t pairs = whole ? kTilePairs : 1;
        for (int64_t p = 0; p < pairs; ++p) {
          PrepareQ6KPair(op.groups + 2 * p * op.group_bytes, op.group_bytes, w.cols,
                         prepared + p * q6k_pair_bytes);
        }
      }
      // The next groups' weights come from memory: spread prefetches of them (into L2) over
      // this group step's token tiles, so that the next step does not wait for the stream.
      const uint8_t* next = op.groups + kTileGroups * op.group_bytes;
      const int64_t next_bytes =
          std::max<int64_t>(0, std::min<int64_t>(kTileGroups, group_end - group - kTileGroups)) *
          op.group_bytes;
      const int64_t tiles = (m1 - m0 + kMaxPairTileTokens - 1) / kMaxPairTileTokens;
      const int64_t lines_per_tile = (next_bytes / 64 + tiles - 1) / tiles;
      int64_t next_line = 0;
      for (int64_t m = m0; m < m1; m += kMaxPairTileTokens) {
        for (int64_t i = 0; i < lines_per_tile && next_line * 64 < next_bytes; ++i, ++next_line) {
          _mm_prefetch(reinterpret_cast<const char*>(next + next_line * 64), _MM_HINT_T1);
        }
        op.rows = chunk_rows + (m - m0) * chunk_stride;
        const int64_t tokens = std::min<int64_t>(kMaxPairTileTokens, m1 - m);
        if (whole) {
          RunPairTokens<kKind, kTilePairs>(op, tokens, out, m, group, n_begin, n_end);
        } else {
          RunPairTokens<kKind, 1>(op, tokens, out, m, group, n_begin, n_end);
        }
      }
    }
  }
}

}  // namespace

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  REPRISE_DCHECK(0 <= m_begin && m_begin <= m_end);
  REPRISE_DCHECK(0 <= n_begin && n_begin <= n_end && n_end <= w.rows);
  if (m_begin == m_end || n_begin == n_end) return;
  // One token (decode) streams every weight once from memory: the AVX2 kernel's single
  // prefetched stream per thread reads them fastest (measured: qwen3-0.6b Q4_0 tg64 119 tok/s
  // against 78 with this kernel's pairs of streams); the float formats are AVX2's too.
  const int64_t group_begin = n_begin / kPackRows;
  const int64_t group_end = (n_end + kPackRows - 1) / kPackRows;
  const int64_t pairs_end = group_begin + (group_end - group_begin) / 2 * 2;
  // The NPU-style kI8x8 (whole-row int32): pairs here; one token, or an odd last group, in the
  // ymm tiles with vpdpbusd in its EVEX form.
  if (w.format == PackedFormat::kI8x8) {
    if (m_end - m_begin > 1 && pairs_end > group_begin) {
      MatMulPairs<PairKind::kI8>(w, x.q8, x.q8_stride, w.cols, out, m_begin, m_end, group_begin,
                                 pairs_end, n_begin, n_end, x.static_scale);
      if (pairs_end < group_end) {
        MatMulAvx2<true>(w, x, out, m_begin, m_end, std::max(n_begin, pairs_end * kPackRows),
                         n_end);
      }
    } else {
      MatMulAvx2<true>(w, x, out, m_begin, m_end, n_begin, n_end);
    }
    return;
  }
  if (!UsesQuantizedActivations(w.format) || m_end - m_begin == 1) {
    avx2::MatMul(w, x, out, m_begin, m_end, n_begin, n_end);
    return;
  }
  // Whole pairs here; an odd last group (its outputs from its first row on) to AVX2.
  if (pairs_end > group_begin) {
    const int64_t row_bytes = QuantizedRowBytes(w.cols);
    if (w.format == PackedFormat::kQ8_0x8) {
      MatMulPairs<PairKind::kQ8>(w, x.q8, x.q8_stride, row_bytes, out, m_begin, m_end, group_begin,
                                 pairs_end, n_begin, n_end);
    } else if (w.format == PackedFormat::kQ4_Kx8) {
      MatMulPairs<PairKind::kQ4K>(w, x.q8, x.q8_stride, row_bytes, out, m_begin, m_end, group_begin,
                                  pairs_end, n_begin, n_end);
    } else if (w.format == PackedFormat::kQ5_Kx8) {
      MatMulPairs<PairKind::kQ5K>(w, x.q8, x.q8_stride, row_bytes, out, m_begin, m_end, group_begin,
                                  pairs_end, n_begin, n_end);
    } else if (w.format == PackedFormat::kQ6_Kx8) {
      MatMulPairs<PairKind::kQ6K>(w, x.q8, x.q8_stride, row_bytes, out, m_begin, m_end, group_begin,
                                  pairs_end, n_begin, n_end);
    } else {
      MatMulPairs<PairKind::kQ4>(w, x.q8, x.q8_stride, row_bytes, out, m_begin, m_end, group_begin,
                                 pairs_end, n_begin, n_end);
    }
  }
  if (pairs_end < group_end) {
    avx2::MatMul(w, x, out, m_begin, m_end, std::max(n_begin, pairs_end * kPackRows), n_end);
  }
}

}  // namespace reprise::kernels::avx512_vnni
