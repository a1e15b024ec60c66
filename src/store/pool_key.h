// PoolKey: a chunk's identity in the store's memory pool — a namespace and a 64-bit value
// (a chunk id, or for the pool's secondary indexes a content hash or a parent id) — with its
// hash. Also the id the eviction policies know a chunk by (PolicyChunkId).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace reprise::store {

struct PoolKey {
  std::string name_space;
  uint64_t value = 0;  // chunk id, content hash or parent id: see the index using it
  bool operator==(const PoolKey&) const = default;
};

struct PoolKeyHash {
  size_t operator()(const PoolKey& k) const {
    return std::hash<std::string>()(k.name_space) ^ (k.value * 0x9e3779b97f4a7c15ull);
  }
};

// The id the eviction policies and the locality model know a chunk by: unique across
// namespaces (the same chunk can be stored in two). 0 stays 0 (the root).
inline uint64_t PolicyChunkId(std::string_view name_space, uint64_t chunk_id) {
  if (chunk_id == 0) return 0;
  const uint64_t h = std::hash<std::string_view>()(name_space) * 0x9e3779b97f4a7c15ull;
  const uint64_t out = chunk_id ^ h;
  return out == 0 ? 1 : out;
}

}  // namespace reprise::store
