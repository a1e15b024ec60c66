// The tiled attention (attention.h) as one algorithm over a vector type V, for the SIMD
// kernels: x86 (attention_x86_tiles.h: ymm, zmm) and ARM NEON (attention_neon.cc). Each of
// those translation units includes this header once with its own flags and a V of its own;
// everything here is in an anonymous namespace, so none shares code with another.
//
// V provides: F (a vector of kWidth floats), kScoreRows and kValueRows (how many rows its
// registers hold at once in steps 1 and 3 below), Zero, Set1, Broadcast (a float from
// memory), Load / Store (aligned to the vector), LoadHalf (kWidth f16 values), Fma(a, b, c) =
// a * b + c, Mul, Add, Sub, Max, ReduceMax, ReduceAdd, Exp (to ~1e-7 relative, 0 at -inf),
// Mask (-inf where a slot's position is hidden from a query's), Prefetch (a cache line), and
// LoadKTransposed / LoadV (a tile's f16 K rows to kt[d][slot], V rows to vt[slot][d]).
//
// Work unit: one kv head and a block of "rows" = (query, query head) pairs that read it, up
// to kMaxRows = 64 (the query heads of a GQA group times the queries of a prefill's work
// item), so each K/V tile converted from f16 serves every row of the block. Per tile of 4
// vectors of slots (16 slots on NEON, 32 on ymm, 64 on zmm):
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
#include <cstdint>
#include <type_traits>

#include "base/check.h"
#include "kernels/attention.h"

namespace reprise::kernels {
namespace {

#define REPRISE_ALWAYS_INLINE inline __attribute__((always_inline))

constexpr int64_t kMaxRows = 64;  // rows of a block
constexpr int64_t kTileVectors = 4;

struct Row {
  const float* q;
  float* out;
  int32_t position;
};

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
    if (s0 + kTile < args.num_slots) {
      const int64_t next_bytes = std::min(kTile, args.num_slots - s0 - kTile) * hd * 2;
      const char* next_k = reinterpret_cast<const char*>(k_head + (s0 + kTile) * hd);
      const char* next_v = reinterpret_cast<const char*>(v_head + (s0 + kTile) * hd);
      for (int64_t offset = 0; offset < next_bytes; offset += 64) {
        V::Prefetch(next_k + offset);
        V::Prefetch(next_v + offset);
      }
    }
    V::LoadKTransposed(k_head + s0 * hd, hd, kTile, count, kt);

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
    if (!direct) V::LoadV(v_head + s0 * hd, hd, stride, count, vt);
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
    for (int64_t d = 0; d < hd; ++d) rows[r].out[d] = acc[r * stride + d] * inv;
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
