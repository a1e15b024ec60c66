// The AVX2 attention (attention.h) for two instruction sets: AVX2 (attention_avx2.cc) and
// AVX-512 (attention_avx512.cc, whose scores and V accumulation run on zmm registers). Each of
// those translation units includes this header once with its own flags; everything here is
// in an anonymous namespace, so neither shares code with the other.
//
// Work unit: one kv head and a block of "rows" = (query, query head) pairs that read it, up
// to kMaxRows, so each K/V tile converted from f16 is used by every row of the block (the
// query heads of a GQA group, times several queries in prefill). Per tile of kTile slots:
//  1. K is converted to float and transposed to kt[d][slot], so that a row's scores for 8
//     (16) slots accumulate in one register with a broadcast of q[d] (no horizontal sums);
//  2. scores are masked by position, and the row's running max / sum / accumulator are
//     rescaled once per tile (online softmax);
//  3. V (converted to float, [slot][d]) is accumulated with the probabilities.
// Tiles that no row of the block can see are skipped before any conversion.
#pragma once

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/avx2_math.h"
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels {
namespace {

using avx2::Exp;
using avx2::HorizontalMax;
using avx2::HorizontalSum;

constexpr int64_t kTile = 32;     // slots per tile
constexpr int64_t kMaxRows = 16;  // rows of a block
constexpr int64_t kSlotVectors = kTile / 8;

struct Row {
  const float* q;
  float* out;
  int32_t position;
};

// 8x8 transpose of floats held in eight registers.
inline void Transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
  const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
  const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
  const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

inline __m256 LoadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// kt[d * kTile + j] = K[slot s0 + j][d] for j < count; zero for count <= j < kTile.
void LoadKTransposed(const uint16_t* k, int64_t hd, int64_t count, float* kt) {
  for (int64_t j0 = 0; j0 < kTile; j0 += 8) {
    for (int64_t d0 = 0; d0 < hd; d0 += 8) {
      __m256 r[8];
      for (int64_t j = 0; j < 8; ++j) {
        r[j] = j0 + j < count ? LoadHalf8(k + (j0 + j) * hd + d0) : _mm256_setzero_ps();
      }
      Transpose8(r);
      for (int64_t d = 0; d < 8; ++d) _mm256_storeu_ps(kt + (d0 + d) * kTile + j0, r[d]);
    }
  }
}

// vt[j * hd + d] = V[slot s0 + j][d] for j < count.
void LoadV(const uint16_t* v, int64_t hd, int64_t count, float* vt) {
  for (int64_t j = 0; j < count; ++j) {
    for (int64_t d = 0; d < hd; d += 8)
      _mm256_storeu_ps(vt + j * hd + d, LoadHalf8(v + j * hd + d));
  }
}

#define REPRISE_ALWAYS_INLINE inline __attribute__((always_inline))

// Scores of R rows (R = 1 or 2) for the kTile slots of the transposed tile, into
// scores[r * kTile + j]: one broadcast of q[d] per row against kSlotVectors vectors of kt,
// so R * kSlotVectors independent FMA chains in registers (a single row splits d into even
// and odd halves to get as many).
template <int R>
REPRISE_ALWAYS_INLINE void TileScores(const Row* rows, const float* kt, int64_t hd, float* scores) {
  __m256 s0[kSlotVectors];
  __m256 s1[kSlotVectors];
  for (int64_t c = 0; c < kSlotVectors; ++c) s0[c] = s1[c] = _mm256_setzero_ps();
  if constexpr (R == 2) {
    const float* q0 = rows[0].q;
    const float* q1 = rows[1].q;
    for (int64_t d = 0; d < hd; ++d) {
      const __m256 a = _mm256_broadcast_ss(q0 + d);
      const __m256 b = _mm256_broadcast_ss(q1 + d);
      for (int64_t c = 0; c < kSlotVectors; ++c) {
        const __m256 k = _mm256_load_ps(kt + d * kTile + 8 * c);
        s0[c] = _mm256_fmadd_ps(a, k, s0[c]);
        s1[c] = _mm256_fmadd_ps(b, k, s1[c]);
      }
    }
    for (int64_t c = 0; c < kSlotVectors; ++c) {
      _mm256_store_ps(scores + 8 * c, s0[c]);
      _mm256_store_ps(scores + kTile + 8 * c, s1[c]);
    }
  } else {
    const float* q = rows[0].q;
    for (int64_t d = 0; d < hd; d += 2) {  // hd is a multiple of 8
      const __m256 a = _mm256_broadcast_ss(q + d);
      const __m256 b = _mm256_broadcast_ss(q + d + 1);
      for (int64_t c = 0; c < kSlotVectors; ++c) {
        s0[c] = _mm256_fmadd_ps(a, _mm256_load_ps(kt + d * kTile + 8 * c), s0[c]);
        s1[c] = _mm256_fmadd_ps(b, _mm256_load_ps(kt + (d + 1) * kTile + 8 * c), s1[c]);
      }
    }
    for (int64_t c = 0; c < kSlotVectors; ++c) {
      _mm256_store_ps(scores + 8 * c, _mm256_add_ps(s0[c], s1[c]));
    }
  }
}

#if defined(__AVX512F__)
// TileScores on zmm: kTile = 32 slots are 2 registers per row; d is split into 4 / R
// interleaved parts so that 8 independent FMA chains run either way.
template <int R>
REPRISE_ALWAYS_INLINE void TileScores512(const Row* rows, const float* kt, int64_t hd,
                                         float* scores) {
  constexpr int kParts = 4 / R;
  constexpr int kVectors = kTile / 16;
  __m512 s[R][kParts][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < kParts; ++p) {
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) s[r][p][c] = _mm512_setzero_ps();
    }
  }
  for (int64_t d = 0; d < hd; d += kParts) {  // hd is a multiple of 8
#pragma GCC unroll 8
    for (int p = 0; p < kParts; ++p) {
      __m512 k[kVectors];
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) k[c] = _mm512_loadu_ps(kt + (d + p) * kTile + 16 * c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 q = _mm512_set1_ps(rows[r].q[d + p]);
#pragma GCC unroll 8
        for (int c = 0; c < kVectors; ++c) s[r][p][c] = _mm512_fmadd_ps(q, k[c], s[r][p][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kVectors; ++c) {
      __m512 sum = s[r][0][c];
#pragma GCC unroll 8
      for (int p = 1; p < kParts; ++p) sum = _mm512_add_ps(sum, s[r][p][c]);
      _mm512_storeu_ps(scores + r * kTile + 16 * c, sum);
    }
  }
}
#endif

// The widest TileScores this translation unit is compiled for.
template <int R>
REPRISE_ALWAYS_INLINE void Scores(const Row* rows, const float* kt, int64_t hd, float* scores) {
#if defined(__AVX512F__)
  TileScores512<R>(rows, kt, hd, scores);
#else
  TileScores<R>(rows, kt, hd, scores);
#endif
}

// acc_r = acc_r * alpha_r + sum_j p_r[j] * V[j] for R = 1 or 2 rows over one strip of
// W * 8 dims starting at d0; 2 * W independent FMA chains either way (a single row splits
// the slots into even and odd).
template <int R, int W>
REPRISE_ALWAYS_INLINE void StripAccumulate(float* const* acc, const float* const* probs,
                                           const float* alpha, const float* vt, int64_t hd,
                                           int64_t count, int64_t d0) {
  __m256 a0[W];
  __m256 a1[W];
  const __m256 alpha0 = _mm256_set1_ps(alpha[0]);
  for (int c = 0; c < W; ++c) {
    a0[c] = _mm256_mul_ps(_mm256_loadu_ps(acc[0] + d0 + 8 * c), alpha0);
  }
  if constexpr (R == 2) {
    const __m256 alpha1 = _mm256_set1_ps(alpha[1]);
    for (int c = 0; c < W; ++c) {
      a1[c] = _mm256_mul_ps(_mm256_loadu_ps(acc[1] + d0 + 8 * c), alpha1);
    }
    const float* v = vt + d0;
    for (int64_t j = 0; j < count; ++j, v += hd) {
      const __m256 p0 = _mm256_broadcast_ss(probs[0] + j);
      const __m256 p1 = _mm256_broadcast_ss(probs[1] + j);
      for (int c = 0; c < W; ++c) {
        const __m256 x = _mm256_load_ps(v + 8 * c);
        a0[c] = _mm256_fmadd_ps(p0, x, a0[c]);
        a1[c] = _mm256_fmadd_ps(p1, x, a1[c]);
      }
    }
    for (int c = 0; c < W; ++c) {
      _mm256_storeu_ps(acc[0] + d0 + 8 * c, a0[c]);
      _mm256_storeu_ps(acc[1] + d0 + 8 * c, a1[c]);
    }
  } else {
    for (int c = 0; c < W; ++c) a1[c] = _mm256_setzero_ps();
    int64_t j = 0;
    const float* v = vt + d0;
    for (; j + 2 <= count; j += 2, v += 2 * hd) {
      const __m256 p0 = _mm256_broadcast_ss(probs[0] + j);
      const __m256 p1 = _mm256_broadcast_ss(probs[0] + j + 1);
      for (int c = 0; c < W; ++c) {
        a0[c] = _mm256_fmadd_ps(p0, _mm256_load_ps(v + 8 * c), a0[c]);
        a1[c] = _mm256_fmadd_ps(p1, _mm256_load_ps(v + hd + 8 * c), a1[c]);
      }
    }
    if (j < count) {
      const __m256 p0 = _mm256_broadcast_ss(probs[0] + j);
      for (int c = 0; c < W; ++c) a0[c] = _mm256_fmadd_ps(p0, _mm256_load_ps(v + 8 * c), a0[c]);
    }
    for (int c = 0; c < W; ++c) _mm256_storeu_ps(acc[0] + d0 + 8 * c, _mm256_add_ps(a0[c], a1[c]));
  }
}

#if defined(__AVX512F__)
// StripAccumulate on zmm: W registers of 16 dims from d0; 2 * W independent FMA chains (a
// single row splits the slots into even and odd).
template <int R, int W>
REPRISE_ALWAYS_INLINE void StripAccumulate512(float* const* acc, const float* const* probs,
                                              const float* alpha, const float* vt, int64_t hd,
                                              int64_t count, int64_t d0) {
  __m512 a0[W];
  __m512 a1[W];
  const __m512 alpha0 = _mm512_set1_ps(alpha[0]);
#pragma GCC unroll 8
  for (int c = 0; c < W; ++c) a0[c] = _mm512_mul_ps(_mm512_loadu_ps(acc[0] + d0 + 16 * c), alpha0);
  const float* v = vt + d0;
  if constexpr (R == 2) {
    const __m512 alpha1 = _mm512_set1_ps(alpha[1]);
#pragma GCC unroll 8
    for (int c = 0; c < W; ++c) {
      a1[c] = _mm512_mul_ps(_mm512_loadu_ps(acc[1] + d0 + 16 * c), alpha1);
    }
    for (int64_t j = 0; j < count; ++j, v += hd) {
      const __m512 p0 = _mm512_set1_ps(probs[0][j]);
      const __m512 p1 = _mm512_set1_ps(probs[1][j]);
#pragma GCC unroll 8
      for (int c = 0; c < W; ++c) {
        const __m512 x = _mm512_loadu_ps(v + 16 * c);
        a0[c] = _mm512_fmadd_ps(p0, x, a0[c]);
        a1[c] = _mm512_fmadd_ps(p1, x, a1[c]);
      }
    }
#pragma GCC unroll 8
    for (int c = 0; c < W; ++c) {
      _mm512_storeu_ps(acc[0] + d0 + 16 * c, a0[c]);
      _mm512_storeu_ps(acc[1] + d0 + 16 * c, a1[c]);
    }
  } else {
#pragma GCC unroll 8
    for (int c = 0; c < W; ++c) a1[c] = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 2 <= count; j += 2, v += 2 * hd) {
      const __m512 p0 = _mm512_set1_ps(probs[0][j]);
      const __m512 p1 = _mm512_set1_ps(probs[0][j + 1]);
#pragma GCC unroll 8
      for (int c = 0; c < W; ++c) {
        a0[c] = _mm512_fmadd_ps(p0, _mm512_loadu_ps(v + 16 * c), a0[c]);
        a1[c] = _mm512_fmadd_ps(p1, _mm512_loadu_ps(v + hd + 16 * c), a1[c]);
      }
    }
    if (j < count) {
      const __m512 p0 = _mm512_set1_ps(probs[0][j]);
#pragma GCC unroll 8
      for (int c = 0; c < W; ++c) a0[c] = _mm512_fmadd_ps(p0, _mm512_loadu_ps(v + 16 * c), a0[c]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < W; ++c) {
      _mm512_storeu_ps(acc[0] + d0 + 16 * c, _mm512_add_ps(a0[c], a1[c]));
    }
  }
}
#endif

template <int R>
void TileAccumulate(float* const* acc, const float* const* probs, const float* alpha,
                    const float* vt, int64_t hd, int64_t count) {
  int64_t d0 = 0;
#if defined(__AVX512F__)
  for (; d0 + 64 <= hd; d0 += 64) StripAccumulate512<R, 4>(acc, probs, alpha, vt, hd, count, d0);
  switch ((hd - d0) / 16) {
    case 3:
      StripAccumulate512<R, 3>(acc, probs, alpha, vt, hd, count, d0);
      d0 += 48;
      break;
    case 2:
      StripAccumulate512<R, 2>(acc, probs, alpha, vt, hd, count, d0);
      d0 += 32;
      break;
    case 1:
      StripAccumulate512<R, 1>(acc, probs, alpha, vt, hd, count, d0);
      d0 += 16;
      break;
    default:
      break;
  }
  if (d0 < hd) StripAccumulate<R, 1>(acc, probs, alpha, vt, hd, count, d0);  // the last 8
#else
  for (; d0 + 32 <= hd; d0 += 32) StripAccumulate<R, 4>(acc, probs, alpha, vt, hd, count, d0);
  switch ((hd - d0) / 8) {
    case 3:
      StripAccumulate<R, 3>(acc, probs, alpha, vt, hd, count, d0);
      break;
    case 2:
      StripAccumulate<R, 2>(acc, probs, alpha, vt, hd, count, d0);
      break;
    case 1:
      StripAccumulate<R, 1>(acc, probs, alpha, vt, hd, count, d0);
      break;
    default:
      break;
  }
#endif
}

// Masks and scales one row's scores and updates its running max and sum; writes the
// tile's probabilities and returns the factor the accumulator must be rescaled by, or a
// negative value when the row sees nothing yet (nothing to accumulate).
inline float UpdateRow(const float* scores, int32_t position, const int32_t* tile_positions,
                       float scale, float& row_max, float& row_sum, float* probs) {
  __m256 score[kSlotVectors];
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i query_position = _mm256_set1_epi32(position);
  __m256 tile_max = _mm256_set1_ps(-INFINITY);
  for (int64_t c = 0; c < kSlotVectors; ++c) {
    // Visible iff 0 <= slot position <= query position.
    const __m256i pos = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile_positions + 8 * c));
    const __m256i hidden = _mm256_or_si256(_mm256_cmpgt_epi32(pos, query_position),
                                           _mm256_cmpgt_epi32(_mm256_setzero_si256(), pos));
    score[c] = _mm256_blendv_ps(_mm256_mul_ps(_mm256_load_ps(scores + 8 * c), vscale),
                                _mm256_set1_ps(-INFINITY), _mm256_castsi256_ps(hidden));
    tile_max = _mm256_max_ps(tile_max, score[c]);
  }
  const float new_max = std::max(row_max, HorizontalMax(tile_max));
  if (new_max == -INFINITY) return -1.0f;
  const float alpha = std::exp(row_max - new_max);  // 0 when row_max is -inf
  const __m256 vmax = _mm256_set1_ps(new_max);
  __m256 psum = _mm256_setzero_ps();
  for (int64_t c = 0; c < kSlotVectors; ++c) {
    const __m256 p = Exp(_mm256_sub_ps(score[c], vmax));  // exp(-inf) = 0
    _mm256_store_ps(probs + 8 * c, p);
    psum = _mm256_add_ps(psum, p);
  }
  row_sum = row_sum * alpha + HorizontalSum(psum);
  row_max = new_max;
  return alpha;
}

// Runs one block of rows against kv head `kv_head`.
void RunBlock(const AttentionArgs& args, int64_t kv_head, const Row* rows, int64_t num_rows) {
  const int64_t hd = args.head_dim;
  alignas(64) float kt[kMaxAttentionHeadDim * kTile];
  alignas(64) float vt[kTile * kMaxAttentionHeadDim];
  alignas(64) float acc[kMaxRows * kMaxAttentionHeadDim];
  alignas(64) float probs[kMaxRows * kTile];
  alignas(32) int32_t tile_positions[kTile];
  float row_max[kMaxRows];
  float row_sum[kMaxRows];
  float alpha[kMaxRows];
  int32_t max_position = -1;
  for (int64_t r = 0; r < num_rows; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
    std::fill(acc + r * hd, acc + (r + 1) * hd, 0.0f);
    max_position = std::max(max_position, rows[r].position);
  }
  const uint16_t* k_head = args.k_cache + kv_head * args.capacity * hd;
  const uint16_t* v_head = args.v_cache + kv_head * args.capacity * hd;

  for (int64_t s0 = 0; s0 < args.num_slots; s0 += kTile) {
    const int64_t count = std::min(kTile, args.num_slots - s0);
    const int32_t* positions = args.slot_positions + s0;
    bool any_visible = false;
    for (int64_t j = 0; j < count; ++j) {
      any_visible |= positions[j] >= 0 && positions[j] <= max_position;
    }
    if (!any_visible) continue;
    // Slots past `count` get -1: never visible.
    for (int64_t j = 0; j < kTile; ++j) tile_positions[j] = j < count ? positions[j] : -1;
    // The cache of a layer is read once per step, from DRAM for long contexts: ask for the
    // next tile's K and V while this one is computed.
    if (s0 + kTile < args.num_slots) {
      const int64_t next_bytes = std::min(kTile, args.num_slots - s0 - kTile) * hd * 2;
      const char* next_k = reinterpret_cast<const char*>(k_head + (s0 + kTile) * hd);
      const char* next_v = reinterpret_cast<const char*>(v_head + (s0 + kTile) * hd);
      for (int64_t offset = 0; offset < next_bytes; offset += 64) {
        _mm_prefetch(next_k + offset, _MM_HINT_T0);
        _mm_prefetch(next_v + offset, _MM_HINT_T0);
      }
    }
    LoadKTransposed(k_head + s0 * hd, hd, count, kt);

    bool any_row = false;
    for (int64_t r = 0; r < num_rows; r += 2) {
      alignas(64) float scores[2 * kTile];
      const int pair = r + 1 < num_rows ? 2 : 1;
      if (pair == 2) {
        Scores<2>(rows + r, kt, hd, scores);
      } else {
        Scores<1>(rows + r, kt, hd, scores);
      }
      for (int i = 0; i < pair; ++i) {
        alpha[r + i] =
            UpdateRow(scores + i * kTile, rows[r + i].position, tile_positions, args.scale,
                      row_max[r + i], row_sum[r + i], probs + (r + i) * kTile);
        any_row |= alpha[r + i] >= 0.0f;
      }
    }
    if (!any_row) continue;
    LoadV(v_head + s0 * hd, hd, count, vt);
    // Rows that see nothing of this tile are left alone; the others go by pairs.
    int64_t active[kMaxRows];
    int64_t num_active = 0;
    for (int64_t r = 0; r < num_rows; ++r) {
      if (alpha[r] >= 0.0f) active[num_active++] = r;
    }
    for (int64_t i = 0; i < num_active; i += 2) {
      float* acc_rows[2];
      const float* prob_rows[2];
      float alphas[2];
      const int pair = i + 1 < num_active ? 2 : 1;
      for (int j = 0; j < pair; ++j) {
        acc_rows[j] = acc + active[i + j] * hd;
        prob_rows[j] = probs + active[i + j] * kTile;
        alphas[j] = alpha[active[i + j]];
      }
      if (pair == 2) {
        TileAccumulate<2>(acc_rows, prob_rows, alphas, vt, hd, count);
      } else {
        TileAccumulate<1>(acc_rows, prob_rows, alphas, vt, hd, count);
      }
    }
  }

  for (int64_t r = 0; r < num_rows; ++r) {
    const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (int64_t d = 0; d < hd; d += 8) {
      _mm256_storeu_ps(rows[r].out + d, _mm256_mul_ps(_mm256_loadu_ps(acc + r * hd + d), vinv));
    }
  }
}

// The whole kernel (the KernelSet::attention contract).
void AttentionImpl(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
                   int64_t head_begin, int64_t head_end) {
  const int64_t hd = args.head_dim;
  REPRISE_DCHECK(hd > 0 && hd % 8 == 0 && hd <= kMaxAttentionHeadDim);
  REPRISE_DCHECK(args.num_kv_heads > 0 && args.num_heads % args.num_kv_heads == 0);
  REPRISE_DCHECK(args.num_slots <= args.capacity);
  const int64_t group = args.num_heads / args.num_kv_heads;
  Row rows[kMaxRows];
  for (int64_t kv_head = head_begin / group; kv_head * group < head_end; ++kv_head) {
    const int64_t h0 = std::max(head_begin, kv_head * group);
    const int64_t h1 = std::min(head_end, (kv_head + 1) * group);
    // Heads of this kv head, in chunks of at most kMaxRows; queries fill the rest of a block.
    for (int64_t hc = h0; hc < h1; hc += kMaxRows) {
      const int64_t num_heads = std::min(kMaxRows, h1 - hc);
      const int64_t queries_per_block = std::max<int64_t>(1, kMaxRows / num_heads);
      int64_t num_rows = 0;
      int64_t queries_in_block = 0;
      for (int64_t i = query_begin; i < query_end; ++i) {
        const int32_t position = args.query_positions[i];
        for (int64_t h = hc; h < hc + num_heads; ++h) {
          float* out = args.out + i * args.out_stride + h * hd;
          if (position < 0) {
            std::fill(out, out + hd, 0.0f);  // padding query
            continue;
          }
          rows[num_rows++] = Row{args.q + i * args.q_stride + h * hd, out, position};
        }
        if (position >= 0) ++queries_in_block;
        if (queries_in_block == queries_per_block || i + 1 == query_end) {
          if (num_rows > 0) RunBlock(args, kv_head, rows, num_rows);
          num_rows = 0;
          queries_in_block = 0;
        }
      }
    }
  }
}

}  // namespace
}  // namespace reprise::kernels
