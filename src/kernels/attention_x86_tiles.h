// The x86 attention (attention.h) for two vector widths: AVX2 (attention_avx2.cc, ymm) and
// AVX-512 (attention_avx512.cc, zmm). Each of those translation units includes this header
// once with its own flags and instantiates AttentionImpl with its width (Ymm or Zmm below);
// everything here is in an anonymous namespace, so neither shares code with the other.
//
// Work unit: one kv head and a block of "rows" = (query, query head) pairs that read it, up
// to kMaxRows = 64 (the query heads of a GQA group times the queries of a prefill's work
// item), so each K/V tile converted from f16 serves every row of the block. Per tile of 4
// vectors of slots (32 slots on ymm, 64 on zmm):
//  1. K is converted to float and transposed to kt[d][slot], so that a row's scores for a
//     vector of slots accumulate in one register with a broadcast of q[d] (no horizontal
//     sums); the scores of several rows are computed together, each K vector loaded once;
//  2. scores are scaled and masked by position (not at all where every slot of the tile is
//     visible to the row), and the row's running max / sum are updated (online softmax);
//  3. V (converted to float, [slot][d]) is accumulated with the probabilities, several rows
//     at a time, each V vector loaded once for all of them; a block whose rows fit one such
//     group (decode: the heads of one query) reads V straight from the f16 cache instead.
// Tiles that no row of the block can see are skipped before any conversion, and rows that
// see nothing of a tile skip it.
//
// A row's arithmetic never depends on the other rows of its block: each score lane sums over
// d in order, each accumulator lane over the slots in order, and tiles start at fixed slot
// indices. So a query's output is bit-identical whichever queries are computed with it (a
// prompt prefilled in one call or in several, or its prefix reused).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/check.h"
#include "kernels/avx2_math.h"
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels {
namespace {

#define REPRISE_ALWAYS_INLINE inline __attribute__((always_inline))

// 256-bit vectors (AVX2 + FMA). 16 registers: rows are computed 3 at a time (12
// accumulators of 4 vectors each, for scores and for V).
struct Ymm {
  using F = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kScoreRows = 3;
  static constexpr int kValueRows = 3;
  static REPRISE_ALWAYS_INLINE F Zero() { return _mm256_setzero_ps(); }
  static REPRISE_ALWAYS_INLINE F Set1(float x) { return _mm256_set1_ps(x); }
  static REPRISE_ALWAYS_INLINE F Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static REPRISE_ALWAYS_INLINE F Load(const float* p) { return _mm256_load_ps(p); }
  static REPRISE_ALWAYS_INLINE F LoadHalf(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static REPRISE_ALWAYS_INLINE void Store(float* p, F x) { _mm256_store_ps(p, x); }
  static REPRISE_ALWAYS_INLINE F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static REPRISE_ALWAYS_INLINE F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Max(F a, F b) { return _mm256_max_ps(a, b); }
  static REPRISE_ALWAYS_INLINE float ReduceMax(F x) { return avx2::HorizontalMax(x); }
  static REPRISE_ALWAYS_INLINE float ReduceAdd(F x) { return avx2::HorizontalSum(x); }
  static REPRISE_ALWAYS_INLINE F Exp(F x) { return avx2::Exp(x); }
  // -inf where the slot is hidden from a query at `position`: visible iff
  // 0 <= slot position <= position.
  static REPRISE_ALWAYS_INLINE F Mask(F score, const int32_t* slot_positions, int32_t position) {
    const __m256i pos = _mm256_load_si256(reinterpret_cast<const __m256i*>(slot_positions));
    const __m256i hidden = _mm256_or_si256(_mm256_cmpgt_epi32(pos, _mm256_set1_epi32(position)),
                                           _mm256_cmpgt_epi32(_mm256_setzero_si256(), pos));
    return _mm256_blendv_ps(score, _mm256_set1_ps(-INFINITY), _mm256_castsi256_ps(hidden));
  }
};

#if defined(__AVX512F__)
// 512-bit vectors (AVX-512 F/BW/DQ/VL). 32 registers: rows are computed 6 at a time (24
// accumulators).
struct Zmm {
  using F = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kScoreRows = 6;
  static constexpr int kValueRows = 6;
  static REPRISE_ALWAYS_INLINE F Zero() { return _mm512_setzero_ps(); }
  static REPRISE_ALWAYS_INLINE F Set1(float x) { return _mm512_set1_ps(x); }
  static REPRISE_ALWAYS_INLINE F Broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static REPRISE_ALWAYS_INLINE F Load(const float* p) { return _mm512_load_ps(p); }
  static REPRISE_ALWAYS_INLINE F LoadHalf(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static REPRISE_ALWAYS_INLINE void Store(float* p, F x) { _mm512_store_ps(p, x); }
  static REPRISE_ALWAYS_INLINE F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static REPRISE_ALWAYS_INLINE F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Add(F a, F b) { return _mm512_add_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Max(F a, F b) { return _mm512_max_ps(a, b); }
  static REPRISE_ALWAYS_INLINE float ReduceMax(F x) {
    const __m256 m = _mm256_max_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    return avx2::HorizontalMax(m);
  }
  static REPRISE_ALWAYS_INLINE float ReduceAdd(F x) {
    const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    return avx2::HorizontalSum(s);
  }
  // avx2::Exp on 16 lanes (same polynomial, same error bound).
  static REPRISE_ALWAYS_INLINE F Exp(F x) {
    const __m512 kMin = _mm512_set1_ps(-87.33f);
    const __mmask16 underflow = _mm512_cmp_ps_mask(x, kMin, _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, kMin), _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    const __m512i bits =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    const __m512 result = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow), result);
  }
  static REPRISE_ALWAYS_INLINE F Mask(F score, const int32_t* slot_positions, int32_t position) {
    const __m512i pos = _mm512_load_si512(slot_positions);
    const __mmask16 visible = _mm512_cmple_epi32_mask(pos, _mm512_set1_epi32(position)) &
                              _mm512_cmpge_epi32_mask(pos, _mm512_setzero_si512());
    return _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), visible, score);
  }
};
#endif

constexpr int64_t kMaxRows = 64;  // rows of a block
constexpr int64_t kTileVectors = 4;
constexpr bool kPrefetch = true;

struct Row {
  const float* q;
  float* out;
  int32_t position;
};

// 8x8 transpose of floats held in eight registers.
REPRISE_ALWAYS_INLINE void Transpose8(__m256 (&r)[8]) {
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

REPRISE_ALWAYS_INLINE __m256 LoadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// kt[d * tile + j] = K[slot s0 + j][d] for j < count; zero for count <= j < tile.
void LoadKTransposed(const uint16_t* k, int64_t hd, int64_t tile, int64_t count, float* kt) {
  for (int64_t j0 = 0; j0 < tile; j0 += 8) {
    if (j0 >= count) {
      for (int64_t d = 0; d < hd; ++d) _mm256_store_ps(kt + d * tile + j0, _mm256_setzero_ps());
      continue;
    }
    for (int64_t d0 = 0; d0 < hd; d0 += 8) {
      __m256 r[8];
      for (int64_t j = 0; j < 8; ++j) {
        r[j] = j0 + j < count ? LoadHalf8(k + (j0 + j) * hd + d0) : _mm256_setzero_ps();
      }
      Transpose8(r);
      for (int64_t d = 0; d < 8; ++d) _mm256_store_ps(kt + (d0 + d) * tile + j0, r[d]);
    }
  }
}

// vt[j * stride + d] = V[slot s0 + j][d] for j < count, d < hd (stride >= hd: the padding
// columns are left as they are).
void LoadV(const uint16_t* v, int64_t hd, int64_t stride, int64_t count, float* vt) {
  for (int64_t j = 0; j < count; ++j) {
    for (int64_t d = 0; d < hd; d += 8) {
      _mm256_store_ps(vt + j * stride + d, LoadHalf8(v + j * hd + d));
    }
  }
}

// Scores of R rows for the tile's slots (kTileVectors vectors): scores[r * tile + j] =
// sum over d in order of q_r[d] * kt[d][j]. Each K vector is loaded once for the R rows.
template <class V, int R>
REPRISE_ALWAYS_INLINE void ScoreRows(const Row* const* rows, const float* kt, int64_t hd,
                                     float* const* scores) {
  constexpr int64_t kTile = kTileVectors * V::kWidth;
  typename V::F s[R][kTileVectors];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < kTileVectors; ++c) s[r][c] = V::Zero();
  }
  const float* q[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) q[r] = rows[r]->q;
  for (int64_t d = 0; d < hd; ++d) {
    typename V::F k[kTileVectors];
#pragma GCC unroll 4
    for (int c = 0; c < kTileVectors; ++c) k[c] = V::Load(kt + d * kTile + c * V::kWidth);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const typename V::F x = V::Broadcast(q[r] + d);
#pragma GCC unroll 4
      for (int c = 0; c < kTileVectors; ++c) s[r][c] = V::Fma(x, k[c], s[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < kTileVectors; ++c) V::Store(scores[r] + c * V::kWidth, s[r][c]);
  }
}

// acc_r = acc_r * alpha_r + sum over the tile's slots in order of p_r[j] * V[j], for R rows
// over S vectors of dims from d0. Each V vector is loaded once for the R rows: from the
// converted tile (float, rows of `stride`) or, kHalf, straight from the f16 cache (rows of
// `stride` = hd), converting as it goes (the same values).
template <class V, int R, int S, bool kHalf>
REPRISE_ALWAYS_INLINE void AccumulateStrip(float* const* acc, const float* const* probs,
                                           const float* alpha, const void* values, int64_t stride,
                                           int64_t count, int64_t d0) {
  typename V::F a[R][S];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const typename V::F scale = V::Set1(alpha[r]);
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) a[r][c] = V::Mul(V::Load(acc[r] + d0 + c * V::kWidth), scale);
  }
  using Element = std::conditional_t<kHalf, uint16_t, float>;
  const Element* v = static_cast<const Element*>(values) + d0;
  for (int64_t j = 0; j < count; ++j, v += stride) {
    typename V::F x[S];
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) {
      if constexpr (kHalf) {
        x[c] = V::LoadHalf(v + c * V::kWidth);
      } else {
        x[c] = V::Load(v + c * V::kWidth);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const typename V::F p = V::Broadcast(probs[r] + j);
#pragma GCC unroll 4
      for (int c = 0; c < S; ++c) a[r][c] = V::Fma(p, x[c], a[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) V::Store(acc[r] + d0 + c * V::kWidth, a[r][c]);
  }
}

// AccumulateStrip over every vector of the (padded) row: strips of kTileVectors, then the
// remaining 1-3 vectors.
template <class V, int R, bool kHalf>
REPRISE_ALWAYS_INLINE void AccumulateRows(float* const* acc, const float* const* probs,
                                          const float* alpha, const void* values, int64_t stride,
                                          int64_t count) {
  int64_t d0 = 0;
  for (; d0 + kTileVectors * V::kWidth <= stride; d0 += kTileVectors * V::kWidth) {
    AccumulateStrip<V, R, kTileVectors, kHalf>(acc, probs, alpha, values, stride, count, d0);
  }
  switch ((stride - d0) / V::kWidth) {
    case 3:
      AccumulateStrip<V, R, 3, kHalf>(acc, probs, alpha, values, stride, count, d0);
      break;
    case 2:
      AccumulateStrip<V, R, 2, kHalf>(acc, probs, alpha, values, stride, count, d0);
      break;
    case 1:
      AccumulateStrip<V, R, 1, kHalf>(acc, probs, alpha, values, stride, count, d0);
      break;
    default:
      break;
  }
}

// Calls fn.template operator()<K>(first) for the group of the last `rest` items when
// rest == K, else tries K - 1.
template <int K, class Fn>
REPRISE_ALWAYS_INLINE void LastGroup(int64_t rest, int64_t first, Fn& fn) {
  if constexpr (K > 0) {
    if (rest == K) {
      fn.template operator()<K>(first);
    } else {
      LastGroup<K - 1>(rest, first, fn);
    }
  }
}

// Calls fn.template operator()<R>(first) for consecutive groups of at most kMax of n items:
// full groups of kMax, then one of the rest.
template <int kMax, class Fn>
REPRISE_ALWAYS_INLINE void ForGroups(int64_t n, Fn&& fn) {
  int64_t i = 0;
  for (; i + kMax <= n; i += kMax) fn.template operator()<kMax>(i);
  LastGroup<kMax - 1>(n - i, i, fn);
}

// Scales and masks one row's scores, updates its running max and sum, writes the tile's
// probabilities and returns the factor its accumulator must be rescaled by; negative when
// the row has seen nothing yet (nothing to accumulate). `unmasked`: every slot of the tile is
// visible to the row.
template <class V>
REPRISE_ALWAYS_INLINE float UpdateRow(const float* scores, int32_t position,
                                      const int32_t* tile_positions, bool unmasked, float scale,
                                      float& row_max, float& row_sum, float* probs) {
  using F = typename V::F;
  F score[kTileVectors];
  const F vscale = V::Set1(scale);
  F tile_max = V::Set1(-INFINITY);
#pragma GCC unroll 4
  for (int c = 0; c < kTileVectors; ++c) {
    score[c] = V::Mul(V::Load(scores + c * V::kWidth), vscale);
    if (!unmasked) score[c] = V::Mask(score[c], tile_positions + c * V::kWidth, position);
    tile_max = V::Max(tile_max, score[c]);
  }
  const float new_max = std::max(row_max, V::ReduceMax(tile_max));
  if (new_max == -INFINITY) return -1.0f;
  // 0 when row_max is -inf; exactly 1 when the max did not move.
  const float alpha = new_max == row_max ? 1.0f : std::exp(row_max - new_max);
  const F vmax = V::Set1(new_max);
  F psum = V::Zero();
#pragma GCC unroll 4
  for (int c = 0; c < kTileVectors; ++c) {
    const F p = V::Exp(V::Sub(score[c], vmax));  // exp(-inf) = 0
    V::Store(probs + c * V::kWidth, p);
    psum = V::Add(psum, p);
  }
  row_sum = row_sum * alpha + V::ReduceAdd(psum);
  row_max = new_max;
  return alpha;
}

// Runs one block of rows against kv head `kv_head`.
template <class V>
void RunBlock(const AttentionArgs& args, int64_t kv_head, const Row* rows, int64_t num_rows) {
  constexpr int64_t kTile = kTileVectors * V::kWidth;
  const int64_t hd = args.head_dim;
  // Accumulator and V rows padded to whole vectors (the padding of vt is zero, so that of
  // acc stays zero).
  const int64_t stride = (hd + V::kWidth - 1) / V::kWidth * V::kWidth;
  alignas(64) float kt[kMaxAttentionHeadDim * kTile];
  alignas(64) float vt[kTile * kMaxAttentionHeadDim];
  alignas(64) float acc[kMaxRows * kMaxAttentionHeadDim];
  alignas(64) float probs[kMaxRows * kTile];
  alignas(64) float scores[kMaxRows * kTile];
  alignas(64) int32_t tile_positions[kTile];
  float row_max[kMaxRows];
  float row_sum[kMaxRows];
  float alpha[kMaxRows];
  int32_t max_position = -1;
  for (int64_t r = 0; r < num_rows; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
    std::fill(acc + r * stride, acc + (r + 1) * stride, 0.0f);
    max_position = std::max(max_position, rows[r].position);
  }
  if (stride != hd) {
    for (int64_t j = 0; j < kTile; ++j)
      std::fill(vt + j * stride + hd, vt + (j + 1) * stride, 0.0f);
  }
  const uint16_t* k_head = args.k_cache + kv_head * args.capacity * hd;
  const uint16_t* v_head = args.v_cache + kv_head * args.capacity * hd;

  for (int64_t s0 = 0; s0 < args.num_slots; s0 += kTile) {
    const int64_t count = std::min(kTile, args.num_slots - s0);
    const int32_t* positions = args.slot_positions + s0;
    // The tile's smallest visible-able position and its largest; a slot that is empty (or past
    // `count`) makes the tile masked for every row.
    int32_t min_valid = INT32_MAX;
    int32_t max_valid = -1;
    bool has_empty = count < kTile;
    for (int64_t j = 0; j < count; ++j) {
      const int32_t p = positions[j];
      has_empty |= p < 0;
      if (p >= 0) {
        min_valid = std::min(min_valid, p);
        max_valid = std::max(max_valid, p);
      }
    }
    if (min_valid > max_position) continue;  // no row sees any slot of it
    for (int64_t j = 0; j < kTile; ++j) tile_positions[j] = j < count ? positions[j] : -1;
    // The cache of a layer is read once per block, from DRAM for long contexts: ask for the
    // next tile's K and V while this one is computed.
    if (kPrefetch && s0 + kTile < args.num_slots) {
      const int64_t next_bytes = std::min(kTile, args.num_slots - s0 - kTile) * hd * 2;
      const char* next_k = reinterpret_cast<const char*>(k_head + (s0 + kTile) * hd);
      const char* next_v = reinterpret_cast<const char*>(v_head + (s0 + kTile) * hd);
      for (int64_t offset = 0; offset < next_bytes; offset += 64) {
        _mm_prefetch(next_k + offset, _MM_HINT_T0);
        _mm_prefetch(next_v + offset, _MM_HINT_T0);
      }
    }
    LoadKTransposed(k_head + s0 * hd, hd, kTile, count, kt);

    // Rows that see some slot of the tile.
    const Row* seeing[kMaxRows];
    int64_t seeing_index[kMaxRows];
    int64_t num_seeing = 0;
    for (int64_t r = 0; r < num_rows; ++r) {
      if (rows[r].position >= min_valid) {
        seeing_index[num_seeing] = r;
        seeing[num_seeing++] = rows + r;
      }
    }
    ForGroups<V::kScoreRows>(num_seeing, [&]<int R>(int64_t first) {
      float* row_scores[R];
      for (int i = 0; i < R; ++i) row_scores[i] = scores + seeing_index[first + i] * kTile;
      ScoreRows<V, R>(seeing + first, kt, hd, row_scores);
    });
    int64_t active[kMaxRows];
    int64_t num_active = 0;
    for (int64_t i = 0; i < num_seeing; ++i) {
      const int64_t r = seeing_index[i];
      const bool unmasked = !has_empty && max_valid <= rows[r].position;
      alpha[r] = UpdateRow<V>(scores + r * kTile, rows[r].position, tile_positions, unmasked,
                              args.scale, row_max[r], row_sum[r], probs + r * kTile);
      if (alpha[r] >= 0.0f) active[num_active++] = r;
    }
    if (num_active == 0) continue;
    // A block that fits one register group (decode) reads V straight from the cache; larger
    // ones convert the tile once for all their groups.
    const bool direct = num_active <= V::kValueRows && stride == hd;
    if (!direct) LoadV(v_head + s0 * hd, hd, stride, count, vt);
    ForGroups<V::kValueRows>(num_active, [&]<int R>(int64_t first) {
      float* acc_rows[R];
      const float* prob_rows[R];
      float alphas[R];
      for (int i = 0; i < R; ++i) {
        const int64_t r = active[first + i];
        acc_rows[i] = acc + r * stride;
        prob_rows[i] = probs + r * kTile;
        alphas[i] = alpha[r];
      }
      if (direct) {
        AccumulateRows<V, R, true>(acc_rows, prob_rows, alphas, v_head + s0 * hd, hd, count);
      } else {
        AccumulateRows<V, R, false>(acc_rows, prob_rows, alphas, vt, stride, count);
      }
    });
  }

  for (int64_t r = 0; r < num_rows; ++r) {
    const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (int64_t d = 0; d < hd; d += 8) {
      _mm256_storeu_ps(rows[r].out + d, _mm256_mul_ps(_mm256_load_ps(acc + r * stride + d), vinv));
    }
  }
}

// The whole kernel (the KernelSet::attention contract) on vectors V.
template <class V>
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
          if (num_rows > 0) RunBlock<V>(args, kv_head, rows, num_rows);
          num_rows = 0;
          queries_in_block = 0;
        }
      }
    }
  }
}

}  // namespace
}  // namespace reprise::kernels
