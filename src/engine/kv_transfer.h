// Moving chunk KV between the session's KV cache and cached chunks (docs/design.md §2, §6):
// placing a reused chunk at new positions (re-rotating its K by the position delta) and
// extracting a chunk's KV to store it.
#pragma once

#include <span>

#include "kernels/elementwise.h"
#include "kernels/kernel_set.h"
#include "kv/chunk.h"
#include "kv/kv_cache.h"

namespace reprise::engine {

// How RoPE was applied to the cached K.
struct RopeLayout {
  const float* inv_freq = nullptr;  // [rope_dims / 2]
  int rope_dims = 0;
  kernels::RopeStyle style = kernels::RopeStyle::kInterleaved;
};

// Copies tokens [src_begin, src_begin + new_positions.size()) of `chunk` into the cache slots
// starting at `dst_slot`, K rotated from the chunk's positions to `new_positions` (a rotation
// by the delta; a plain copy where the delta is 0), and records the new positions in the
// cache's slot table. Requires: shapes match and the ranges are inside both.
void PlaceChunkKv(const kv::ChunkKv& chunk, int src_begin, std::span<const int32_t> new_positions,
                  kv::KvCache& cache, int dst_slot, const RopeLayout& rope,
                  const kernels::KernelSet& kernels);

// PlaceChunkKv without the slot table: the slots' K and V rows only, of layers
// [first_layer, end_layer) (end_layer < 0: through the last). For a preparer that fills
// slots no graph reads yet and lets the caller record their positions when it needs them
// (kv_preparer.h).
void PlaceChunkRows(const kv::ChunkKv& chunk, int src_begin, std::span<const int32_t> new_positions,
                    kv::KvCache& cache, int dst_slot, const RopeLayout& rope,
                    const kernels::KernelSet& kernels, int first_layer = 0, int end_layer = -1);

// The KV of cache slots [slot, slot + count), with their positions.
kv::ChunkKv ExtractChunkKv(const kv::KvCache& cache, int slot, int count);

// Rotates one f16 K row set in place: `num_heads` heads of `head_dim` at `k` (head h at
// k + h * head_stride), by the angles whose cos and sin are given (kernels::RopeCosSin of the
// position delta, half the rope dims each; a run moved by one delta computes them once).
void RerotateKeys(uint16_t* k, int num_heads, int64_t head_stride, int head_dim, const float* cos,
                  const float* sin, const RopeLayout& rope, const kernels::KernelSet& kernels);

}  // namespace reprise::engine
