// Admission control (docs/design.md §6): which chunks the store writes to flash. A store that
// writes every chunk fills with one-off ones (a question, a document retrieved once), and
// their eviction pressure pushes out the chunks that recur; warm-cache gains then decay
// within a few dozen new queries. With StoreOptions::admit_after_sightings = N > 1 a chunk is
// written only when
//  - its content has been seen N times in the namespace (inserted after a prompt computed
//    it, or found in the memory pool by a later prompt), or
//  - the app declared it reusable (kv::ChunkEntry::declared_reusable: a system prompt, a
//    document, a skill), or
//  - it is pinned.
// Until then it is served from the memory pool like any chunk, and lost when the pool evicts
// it. Sightings are counted by content hash (the same text at another position counts),
// bounded in memory, and persisted in the catalog by the write-back thread, so that
// one-request processes (the CLI) admit what recurs across runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/chunk.h"
#include "store/pool_key.h"

namespace reprise::store {

// How often a content was seen in a namespace's prompts (also a catalog row).
struct SightingRow {
  std::string name_space;
  kv::ContentHash content = 0;
  int64_t count = 0;
  int64_t last_seen_us = 0;
};

// Sighting counts per (namespace, content), at most `capacity` of them: past that, the least
// recently seen half is forgotten (a chunk seen once long ago starts again from zero).
// Thread-compatible.
class SightingCounter {
 public:
  explicit SightingCounter(size_t capacity);

  // One more sighting at `now_us`; returns the count.
  int64_t Sight(const std::string& name_space, kv::ContentHash content, int64_t now_us);
  int64_t Count(const std::string& name_space, kv::ContentHash content) const;
  // What an earlier run recorded: the larger count and the later time win.
  void Restore(const SightingRow& row);
  // The rows sighted since the last call (their current counts), for persisting.
  std::vector<SightingRow> TakeChanged();

  size_t size() const { return counts_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Sighting {
    int64_t count = 0;
    int64_t last_seen_us = 0;
    bool changed = false;
  };
  void ForgetOldest();

  const size_t capacity_;
  std::unordered_map<PoolKey, Sighting, PoolKeyHash> counts_;
  std::vector<PoolKey> changed_;
};

}  // namespace reprise::store
