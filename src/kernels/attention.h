// Attention of a block of query tokens over an f16 KV cache, masked by position.
//
// KV cache layout (one layer): K and V each f16 [num_kv_heads][capacity][head_dim]: a kv
// head's slots are contiguous, so the kernel streams one head's K (then V) rows in slot
// order, and a slot is written with one row copy per head. K is stored after RoPE. Each slot
// carries the position of the token it holds (slot_positions[s]; negative = empty), so that
// cached chunks reused at other positions, or in another order, still mask correctly: query
// i, at position query_positions[i], sees slot s iff 0 <= slot_positions[s] <=
// query_positions[i]. A query with a negative position is padding: its output is zeros and
// it costs nothing.
//
// Query head h reads kv head h / (num_heads / num_kv_heads) (grouped-query attention). The
// softmax is taken over scale * q.k with an online (running max, running sum) update over
// tiles of slots, so long contexts stream through the cache in one pass and no score row is
// ever stored; tiles that no query of the block can see are skipped.
//
// The kernels (scalar and AVX2) are KernelSet::attention (kernel_set.h). They take a range
// of queries and of query heads, so callers parallelise over both.
#pragma once

#include <cstdint>

namespace reprise::kernels {

inline constexpr int64_t kMaxAttentionHeadDim = 256;

struct AttentionArgs {
  // Query i, head h: q + i * q_stride + h * head_dim floats. Output: the same layout in out.
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  const int32_t* query_positions = nullptr;  // [num_queries]

  const uint16_t* k_cache = nullptr;        // f16 [num_kv_heads][capacity][head_dim]
  const uint16_t* v_cache = nullptr;        // f16 [num_kv_heads][capacity][head_dim]
  int64_t capacity = 0;                     // slots per kv head in the cache arrays
  const int32_t* slot_positions = nullptr;  // [num_slots]
  int64_t num_slots = 0;                    // slots [0, num_slots) are considered

  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 0.0f;  // usually 1 / sqrt(head_dim)
};

// Computes the outputs of queries [query_begin, query_end) for query heads
// [head_begin, head_end). Requires: num_heads % num_kv_heads == 0; head_dim % 8 == 0 and
// <= kMaxAttentionHeadDim; num_slots <= capacity; out does not overlap q or the cache.
using AttentionFn = void (*)(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
                             int64_t head_begin, int64_t head_end);

}  // namespace reprise::kernels
