// MemoryChunkCache: a ChunkCache held in memory under a byte budget, evicting the least
// recently used entries. The persistent store (flash + pool) replaces it when a store is
// configured.
//
// Thread-safe: one mutex guards everything.
#pragma once

#include <list>
#include <unordered_map>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "kv/chunk_cache.h"
#include "kv/span_fingerprint_index.h"

namespace reprise::kv {

class MemoryChunkCache : public ChunkCache {
 public:
  explicit MemoryChunkCache(int64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  Status Insert(std::shared_ptr<const ChunkEntry> entry) override;
  std::shared_ptr<const ChunkEntry> Find(ChunkId id) override;
  std::shared_ptr<const ChunkEntry> Peek(ChunkId id) override;
  std::shared_ptr<const ChunkEntry> PeekByContent(ContentHash content) override;
  std::optional<ChunkLink> LinkOf(ChunkId id) override;
  bool Contains(ChunkId id, bool require_exact) override;
  std::vector<std::shared_ptr<const ChunkEntry>> Children(ChunkId parent) override;
  std::shared_ptr<const ChunkEntry> FindByContent(ContentHash content) override;
  // Every chunk sharing a span with `tokens` (span_fingerprint_index.h); `text` is not used.
  std::vector<ChunkCandidate> FindCandidates(std::span<const int32_t> tokens, std::string_view text,
                                             int max_candidates) override;
  ChunkCacheStats stats() override;

 private:
  struct Slot {
    std::shared_ptr<const ChunkEntry> entry;
    std::list<ChunkId>::iterator lru;  // position in lru_ (front = most recent)
  };
  void Touch(Slot& slot) REPRISE_REQUIRES(mutex_);
  // The slot FindByContent uses: exact entries first; or null.
  Slot* BestByContent(ContentHash content) REPRISE_REQUIRES(mutex_);
  void Erase(ChunkId id) REPRISE_REQUIRES(mutex_);
  void EvictToBudget() REPRISE_REQUIRES(mutex_);

  const int64_t budget_bytes_;
  Mutex mutex_;
  std::unordered_map<ChunkId, Slot> slots_ REPRISE_GUARDED_BY(mutex_);
  std::list<ChunkId> lru_ REPRISE_GUARDED_BY(mutex_);
  std::unordered_multimap<ChunkId, ChunkId> children_ REPRISE_GUARDED_BY(mutex_);
  std::unordered_multimap<ContentHash, ChunkId> by_content_ REPRISE_GUARDED_BY(mutex_);
  SpanFingerprintIndex spans_ REPRISE_GUARDED_BY(mutex_) =
      std::move(SpanFingerprintIndex::Create()).value();
  int64_t bytes_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t evictions_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t inserts_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t hits_ REPRISE_GUARDED_BY(mutex_) = 0;
};

}  // namespace reprise::kv
