#include "engine/kv_transfer.h"

#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/attention.h"

namespace reprise::engine {

void RerotateKeys(uint16_t* k, int num_heads, int64_t head_stride, int head_dim, const float* cos,
                  const float* sin, const RopeLayout& rope, const kernels::KernelSet& kernels) {
  float row[kernels::kMaxAttentionHeadDim];
  for (int h = 0; h < num_heads; ++h) {
    uint16_t* head = k + h * head_stride;
    kernels.f16_to_f32(head, head_dim, row);
    kernels.rope(row, 1, head_dim, rope.rope_dims, cos, sin, rope.style);
    kernels.f32_to_f16(row, head_dim, head);
  }
}

void PlaceChunkKv(const kv::ChunkKv& chunk, int src_begin, std::span<const int32_t> new_positions,
                  kv::KvCache& cache, int dst_slot, const RopeLayout& rope,
                  const kernels::KernelSet& kernels) {
  PlaceChunkRows(chunk, src_begin, new_positions, cache, dst_slot, rope, kernels);
  std::span<int32_t> slots = cache.slot_positions();
  for (size_t t = 0; t < new_positions.size(); ++t) {
    slots[static_cast<size_t>(dst_slot) + t] = new_positions[t];
  }
}

void PlaceChunkRows(const kv::ChunkKv& chunk, int src_begin, std::span<const int32_t> new_positions,
                    kv::KvCache& cache, int dst_slot, const RopeLayout& rope,
                    const kernels::KernelSet& kernels, int first_layer, int end_layer) {
  const kv::KvShape& shape = cache.shape();
  if (end_layer < 0) end_layer = shape.num_layers;
  REPRISE_CHECK(first_layer >= 0 && first_layer <= end_layer && end_layer <= shape.num_layers);
  const int count = static_cast<int>(new_positions.size());
  REPRISE_CHECK(chunk.num_layers == shape.num_layers && chunk.num_kv_heads == shape.num_kv_heads &&
                chunk.head_dim == shape.head_dim);
  REPRISE_CHECK(src_begin >= 0 && src_begin + count <= chunk.num_tokens);
  REPRISE_CHECK(dst_slot >= 0 && dst_slot + count <= shape.capacity);
  const size_t row_bytes = static_cast<size_t>(shape.head_dim) * sizeof(uint16_t);
  // The rotation of each token's delta, computed once for every layer; a run moved as a whole
  // (the usual case) has one delta, so one rotation.
  const int half = rope.rope_dims / 2;
  std::vector<int> rotation_of(static_cast<size_t>(count), -1);  // index into `rotations`
  std::vector<float> rotations;  // [cos half | sin half] per distinct delta, in order
  int32_t last_delta = 0;
  for (int t = 0; t < count; ++t) {
    const int32_t delta =
        new_positions[static_cast<size_t>(t)] - chunk.positions[static_cast<size_t>(src_begin + t)];
    if (delta == 0) continue;
    if (rotations.empty() || delta != last_delta) {
      rotations.resize(rotations.size() + 2 * static_cast<size_t>(half));
      float* cos = rotations.data() + rotations.size() - 2 * static_cast<size_t>(half);
      kernels::RopeCosSin(delta, rope.inv_freq, half, cos, cos + half);
      last_delta = delta;
    }
    rotation_of[static_cast<size_t>(t)] =
        static_cast<int>(rotations.size() / (2 * static_cast<size_t>(half))) - 1;
  }
  for (int l = first_layer; l < end_layer; ++l) {
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      // A head's rows are contiguous in both layouts: one copy per (layer, head).
      std::memcpy(cache.k_row(l, h, dst_slot), &chunk.k[chunk.row_offset(l, h, src_begin)],
                  row_bytes * static_cast<size_t>(count));
      std::memcpy(cache.v_row(l, h, dst_slot), &chunk.v[chunk.row_offset(l, h, src_begin)],
                  row_bytes * static_cast<size_t>(count));
    }
    for (int t = 0; t < count; ++t) {
      const int r = rotation_of[static_cast<size_t>(t)];
      if (r < 0) continue;
      const float* cos = rotations.data() + static_cast<size_t>(r) * 2 * static_cast<size_t>(half);
      // Heads of one slot are capacity * head_dim apart.
      RerotateKeys(cache.k_row(l, 0, dst_slot + t), shape.num_kv_heads,
                   static_cast<int64_t>(shape.capacity) * shape.head_dim, shape.head_dim, cos,
                   cos + half, rope, kernels);
    }
  }
}

kv::ChunkKv ExtractChunkKv(const kv::KvCache& cache, int slot, int count) {
  const kv::KvShape& shape = cache.shape();
  REPRISE_CHECK(slot >= 0 && count >= 0 && slot + count <= shape.capacity);
  kv::ChunkKv chunk;
  chunk.num_layers = shape.num_layers;
  chunk.num_kv_heads = shape.num_kv_heads;
  chunk.head_dim = shape.head_dim;
  chunk.num_tokens = count;
  chunk.Allocate();
  const size_t row_bytes = static_cast<size_t>(shape.head_dim) * sizeof(uint16_t);
  for (int l = 0; l < shape.num_layers; ++l) {
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      std::memcpy(&chunk.k[chunk.row_offset(l, h, 0)], cache.k_row(l, h, slot),
                  row_bytes * static_cast<size_t>(count));
      std::memcpy(&chunk.v[chunk.row_offset(l, h, 0)], cache.v_row(l, h, slot),
                  row_bytes * static_cast<size_t>(count));
    }
  }
  for (int t = 0; t < count; ++t) {
    chunk.positions[static_cast<size_t>(t)] = cache.slot_positions()[static_cast<size_t>(slot + t)];
  }
  return chunk;
}

}  // namespace reprise::engine
