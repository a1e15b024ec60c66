// ChunkCache: where cached chunks live between requests — the interface the reuse path
// reads through, implemented in memory here (MemoryChunkCache) and by the persistent store.
//
// Lookups by prefix-tree id (exact prefix reuse), by content hash (the same chunk anywhere)
// and by shared span fingerprints (candidates for sub-chunk matches). Entries are returned as
// shared pointers: a caller may keep using an entry after the cache evicted it.
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/chunk.h"

namespace reprise::kv {

struct ChunkCandidate {
  ChunkId id = 0;
  double score = 0.0;
  // The entry, for its tokens; its `kv` may be null (a store lists candidates from its
  // catalog): Find() the one that is used. Null when the implementation does not say.
  std::shared_ptr<const ChunkEntry> entry;
};

struct ChunkCacheStats {
  int64_t num_chunks = 0;
  int64_t bytes = 0;
  int64_t budget_bytes = 0;
  int64_t evictions = 0;
  int64_t inserts = 0;
  int64_t hits = 0;        // successful Find/FindByContent calls
  int64_t hits_pool = 0;   // of which served from memory
  int64_t hits_flash = 0;  // of which loaded from flash (persistent stores)
};

class ChunkCache {
 public:
  virtual ~ChunkCache() = default;

  // Adds the entry with `entry.id`, or replaces the cached one — unless that one is exact: an
  // exact entry is never replaced (by approximate KV, or by the same exact KV again). The
  // comparison and the insert are one atomic step, whatever other sessions insert meanwhile.
  // Errors: ResourceExhausted when the entry alone exceeds the budget; implementation-specific
  // I/O errors.
  virtual Status Insert(std::shared_ptr<const ChunkEntry> entry) = 0;

  // The entry with this prefix-tree id, its KV loaded (from flash when it is not in memory),
  // counted as a hit and a use; or null. For using a chunk (KvLoader); planning peeks.
  virtual std::shared_ptr<const ChunkEntry> Find(ChunkId id) = 0;

  // Planning's lookups, from the index alone: the entry's id, links, exactness and tokens; its
  // `kv` is set only when the entry is already in memory (a reference), else null. Nothing is
  // loaded, no hit counted, no recency changed. Peek: by prefix-tree id; PeekByContent: the
  // entry FindByContent would return.
  virtual std::shared_ptr<const ChunkEntry> Peek(ChunkId id) = 0;
  virtual std::shared_ptr<const ChunkEntry> PeekByContent(ContentHash content) = 0;

  // Whether an entry with this id is cached (with exact KV, when `require_exact`), from the
  // index alone: no KV is loaded, no hit counted, no recency changed. For deciding what to
  // store after a request, which is not a use of the chunk.
  virtual bool Contains(ChunkId id, bool require_exact) = 0;

  // The parent and content of the entry with this id, from the index alone (no KV loaded,
  // no hit counted), or nullopt when no such entry is cached.
  virtual std::optional<ChunkLink> LinkOf(ChunkId id) = 0;

  // The entries whose parent is `parent` (for the longest common token prefix inside the
  // first chunk that misses the tree). Their `kv` may be null (not loaded): Find() the one
  // that is used.
  virtual std::vector<std::shared_ptr<const ChunkEntry>> Children(ChunkId parent) = 0;

  // An entry with this content (the most recently used one, exact ones first), or null.
  virtual std::shared_ptr<const ChunkEntry> FindByContent(ContentHash content) = 0;

  // The entries that share a span of kGuaranteedSpanTokens tokens or more with `tokens`
  // (span_fingerprints.h), and some sharing shorter ones, best first, at most
  // `max_candidates`; no KV is loaded and no hit counted. `text` is the span's text, for an
  // implementation that indexes words; may be empty, and the planner passes none (neither
  // implementation here reads it).
  virtual std::vector<ChunkCandidate> FindCandidates(std::span<const int32_t> tokens,
                                                     std::string_view text, int max_candidates) = 0;

  virtual ChunkCacheStats stats() = 0;

  // Tells the cache which chunks one prompt used, in order (locality statistics). Cheap; the
  // default does nothing.
  virtual void RecordUse(std::span<const ChunkId> /*chunk_ids*/) {}

  // Work for idle moments (e.g. prefetching into memory); returns how many chunks it loaded.
  virtual int RunIdleWork() { return 0; }
};

}  // namespace reprise::kv
