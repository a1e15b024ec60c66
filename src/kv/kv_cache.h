// KvCache: the session buffer of docs/design.md §6 — the K and V of one sequence, f16, for every
// layer, plus the position each slot holds.
//
// Layout per layer: K and V each [num_kv_heads][capacity][head_dim] half floats (what the
// attention kernel streams), K after RoPE. Slot s holds the token at position
// slot_positions[s] (-1 = empty), so that reused chunks can sit at positions other than
// their slot order. Owns its memory; thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace reprise::kv {

struct KvShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int capacity = 0;  // slots (tokens)

  int64_t bytes_per_layer() const {
    return 2LL * num_kv_heads * capacity * head_dim * static_cast<int64_t>(sizeof(uint16_t));
  }
  int64_t total_bytes() const { return bytes_per_layer() * num_layers; }
};

class KvCache {
 public:
  // Errors: InvalidArgument (non-positive sizes), ResourceExhausted.
  static Result<std::unique_ptr<KvCache>> Create(const KvShape& shape);

  const KvShape& shape() const { return shape_; }

  // [num_kv_heads][capacity][head_dim] half floats of one layer.
  uint16_t* k(int layer) { return k_[static_cast<size_t>(layer)].get(); }
  uint16_t* v(int layer) { return v_[static_cast<size_t>(layer)].get(); }
  const uint16_t* k(int layer) const { return k_[static_cast<size_t>(layer)].get(); }
  const uint16_t* v(int layer) const { return v_[static_cast<size_t>(layer)].get(); }

  // The f16 values of one (layer, kv head, slot): head_dim halves.
  uint16_t* k_row(int layer, int head, int slot) {
    return k(layer) + (static_cast<int64_t>(head) * shape_.capacity + slot) * shape_.head_dim;
  }
  uint16_t* v_row(int layer, int head, int slot) {
    return v(layer) + (static_cast<int64_t>(head) * shape_.capacity + slot) * shape_.head_dim;
  }
  const uint16_t* k_row(int layer, int head, int slot) const {
    return k(layer) + (static_cast<int64_t>(head) * shape_.capacity + slot) * shape_.head_dim;
  }
  const uint16_t* v_row(int layer, int head, int slot) const {
    return v(layer) + (static_cast<int64_t>(head) * shape_.capacity + slot) * shape_.head_dim;
  }

  // [capacity]: the position held by each slot, -1 when empty.
  std::span<int32_t> slot_positions() { return slot_positions_; }
  std::span<const int32_t> slot_positions() const { return slot_positions_; }

  // Marks slots [first, capacity) empty. Requires: 0 <= first <= capacity.
  void ClearFrom(int first);

 private:
  explicit KvCache(const KvShape& shape) : shape_(shape) {}
  // Anonymous mappings: zero-filled, and pages are committed only when a slot is written, so
  // a large context costs memory only for the tokens actually held.
  struct Unmapper {
    size_t bytes = 0;
    void operator()(uint16_t* p) const;
  };
  KvShape shape_;
  std::vector<std::unique_ptr<uint16_t, Unmapper>> k_, v_;
  std::vector<int32_t> slot_positions_;
};

}  // namespace reprise::kv
