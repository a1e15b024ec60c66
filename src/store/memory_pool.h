// MemoryPool: the store's memory tier (docs/design.md §6) — the chunks just produced, loaded from
// flash or prefetched, under a byte budget.
//
// Indexes, all hashed: by (namespace, chunk id), by (namespace, content hash) and by
// (namespace, parent), so that Find, FindByContent and Children cost one hash lookup plus the
// handful of matching chunks, not a scan of the pool; and a span fingerprint index per
// namespace (kv/span_fingerprint_index.h) over the chunks the catalog does not hold.
//
// Each chunk carries four flags:
//  - dirty: inserted and waiting for the write-back thread; never evicted (it would be
//    lost), cleared when written (or skipped, or persistence stops);
//  - awaiting admission: kept in memory only until it recurs (admission control,
//    admission.h); Admit makes it dirty; evicted like any clean chunk, and then lost;
//  - persisted: it has a catalog row and a KV file; a chunk without one is in the span
//    index, so a candidate search finds it before write-back catches up;
//  - pinned: never evicted.
// Eviction: when the pool exceeds its budget, EvictOverBudget asks the eviction policy
// (eviction_policy.h; it is told every placement and use through Touch) for victims among
// the clean, unpinned chunks.
//
// Thread-compatible: ChunkStore uses it under its pool lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/chunk.h"
#include "kv/chunk_cache.h"
#include "kv/span_fingerprint_index.h"
#include "store/eviction_policy.h"
#include "store/locality.h"
#include "store/pool_key.h"

namespace reprise::store {

struct PoolSlot {
  std::shared_ptr<const kv::ChunkEntry> entry;
  bool dirty = false;      // waiting for write-back
  bool persisted = false;  // has a catalog row and a file
  bool pinned = false;
  bool awaiting_admission = false;  // not written unless admitted (admission.h)
  int64_t bytes = 0;
};

// What the pool holds of one namespace.
struct PoolUsage {
  int64_t num_chunks = 0;
  int64_t bytes = 0;
};

class MemoryPool {
 public:
  // `policy` chooses victims (owned). Requires: budget_bytes > 0, policy not null.
  MemoryPool(int64_t budget_bytes, std::unique_ptr<EvictionPolicy> policy);
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Adds `entry` (not null), or replaces the chunk of the same id, keeping its pin and, when
  // it was dirty, its dirty flag. Counts as a use at `now_s`. Does not evict.
  // `awaiting_admission` (ignored when dirty): kept in memory until Admit.
  void Add(const std::string& name_space, std::shared_ptr<const kv::ChunkEntry> entry, bool dirty,
           bool persisted, double now_s, bool awaiting_admission = false);
  // A chunk awaiting admission becomes dirty (to be written back); returns its entry, or
  // null when it is absent or not awaiting admission.
  std::shared_ptr<const kv::ChunkEntry> Admit(const std::string& name_space, kv::ChunkId id);
  // The chunks of `name_space` awaiting admission (a scan: for maintenance commands).
  std::vector<kv::ChunkId> AwaitingAdmission(const std::string& name_space) const;
  // Removes a chunk; nothing when it is absent.
  void Remove(const std::string& name_space, kv::ChunkId id);
  // Removes every chunk of `name_space`, or every chunk.
  void Clear(const std::optional<std::string>& name_space);

  // The chunk, or null. Valid until the pool changes.
  const PoolSlot* Find(const std::string& name_space, kv::ChunkId id) const;
  // Find, counted as a use at `now_s` (eviction recency).
  std::shared_ptr<const kv::ChunkEntry> Use(const std::string& name_space, kv::ChunkId id,
                                            double now_s);
  // A chunk with this content — an exact one if any, else the latest placed — or null.
  // Valid until the pool changes.
  const PoolSlot* FindByContent(const std::string& name_space, kv::ContentHash content) const;
  // FindByContent, counted as a use at `now_s`.
  std::shared_ptr<const kv::ChunkEntry> UseByContent(const std::string& name_space,
                                                     kv::ContentHash content, double now_s);
  // The chunks whose parent is `parent`.
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(const std::string& name_space,
                                                              kv::ChunkId parent) const;
  // Chunks not in the catalog sharing a span with `tokens`, best first
  // (kv::SpanFingerprintIndex, one per namespace).
  std::vector<kv::SpanCandidate> SearchUnpersistedSpans(const std::string& name_space,
                                                        std::span<const int32_t> tokens,
                                                        int max_results) const;
  // The policies' view of these chunks (those in the pool; others are skipped).
  std::vector<ChunkInfo> Infos(const std::string& name_space,
                               std::span<const kv::ChunkId> ids) const;

  // Write-back's outcome for `entry` (ignored when the pool now holds another entry under
  // its id): written (persisted), or not written (its own file failed; stays in memory).
  void MarkWritten(const std::string& name_space, const kv::ChunkEntry* entry);
  void MarkNotWritten(const std::string& name_space, const kv::ChunkEntry* entry);
  // Flash evicted the chunk: it is no longer persisted.
  void MarkEvictedFromFlash(const std::string& name_space, kv::ChunkId id);
  // Persistence stopped: dirty chunks become ordinary, evictable ones.
  void ClearDirty();
  // Pins or unpins one chunk, or every chunk of the namespace when `id` is nullopt.
  void SetPinned(const std::string& name_space, std::optional<kv::ChunkId> id, bool pinned);

  // Evicts clean, unpinned chunks until the pool fits its budget (or none is left to evict);
  // returns how many went. Those of them that were awaiting admission (never written: gone
  // for good) are added to `*unadmitted` when it is not null.
  int EvictOverBudget(double now_s, int64_t* unadmitted = nullptr);

  int64_t budget_bytes() const { return budget_bytes_; }
  int64_t bytes() const { return bytes_; }
  int64_t num_chunks() const { return static_cast<int64_t>(slots_.size()); }
  int64_t num_dirty() const { return num_dirty_; }
  int64_t num_awaiting_admission() const { return num_awaiting_admission_; }
  PoolUsage Usage(const std::string& name_space) const;

 private:
  static ChunkInfo InfoOf(const std::string& name_space, const PoolSlot& slot);
  void Unindex(const PoolKey& key, const PoolSlot& slot);
  void SetDirty(PoolSlot& slot, bool dirty);
  void SetAwaitingAdmission(PoolSlot& slot, bool awaiting);
  void SetPersisted(const PoolKey& key, PoolSlot& slot, bool persisted);
  void RemoveKey(const PoolKey& key);

  const int64_t budget_bytes_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::unordered_map<PoolKey, PoolSlot, PoolKeyHash> slots_;  // key value: chunk id
  // key value: content hash / parent id -> chunk ids, in order of placement.
  std::unordered_map<PoolKey, std::vector<kv::ChunkId>, PoolKeyHash> by_content_;
  std::unordered_map<PoolKey, std::vector<kv::ChunkId>, PoolKeyHash> by_parent_;
  std::unordered_map<std::string, PoolUsage> usage_;
  std::unordered_map<std::string, kv::SpanFingerprintIndex> unpersisted_spans_;
  int64_t bytes_ = 0;
  int64_t num_dirty_ = 0;
  int64_t num_awaiting_admission_ = 0;
};

}  // namespace reprise::store
