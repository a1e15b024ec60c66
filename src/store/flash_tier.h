// FlashTier: the store's flash tier (docs/design.md §6) — one KV file per chunk in the store
// folder and the SQLite catalog that indexes them — with everything that touches them:
//
//  - Open: the folder checks (store_dir.h), the lock (store_lock.h; chunk_store.h says how
//    processes share a store), the catalog (a damaged one set aside and rebuilt from the KV
//    files, catalog_rebuild.h) and recovery (recovery.h), under the lock held exclusive.
//  - Reads: lookups return catalog rows (no KV); Load reads a row's file, and a file that
//    fails its checks is a miss: its row and file are dropped and counted as corrupt.
//  - Writes: a batch's files written to temporary names, fsynced and renamed, then their rows
//    in one transaction (WriteBatch, from the write-back thread).
//  - Eviction: EvictOverBudget keeps the files under the disk budget; which chunks go is the
//    caller's choice (a VictimChooser: the store's flash eviction policy).
//  - Persistence: on while the folder can be written. A full disk, a read-only folder or a
//    lost lock switch it off for good (DisablePersistence): the tier keeps serving reads and
//    damages nothing already stored.
//  - Maintenance: Gc (recovery, every file verified, the budget enforced), Clear, pins,
//    listings, and the counters and health that StoreStats reports.
//
// Thread-safe: the catalog is used under one lock; writes and Gc's lock changes under
// another (a batch is never written while Gc converts the lock, which briefly releases it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "kv/chunk.h"
#include "store/catalog.h"
#include "store/eviction_policy.h"
#include "store/file_system.h"
#include "store/pool_key.h"
#include "store/store_lock.h"
#include "store/store_options.h"
#include "store/write_back.h"

namespace reprise::store {

// Chooses which of `chunks` go to free `bytes_to_free` (an EvictionPolicy's SelectVictims).
using VictimChooser =
    std::function<VictimSelection(std::span<const ChunkInfo> chunks, int64_t bytes_to_free)>;

// What became of a WriteBatch.
struct FlashBatchResult {
  std::vector<size_t> written;  // indices into the batch: file and row in place
  std::vector<size_t> skipped;  // their own file failed (persistence stays on)
  // The catalog already holds exact KV for these, and they are not exact: not written (the
  // caller drops them from memory, so that lookups find the exact KV).
  std::vector<size_t> superseded;
  // Persistence must stop (disk full, read-only folder, catalog write failed); the caller
  // says so through DisablePersistence. Ok otherwise.
  Status failure;
};

// A prefetch candidate: a chunk used together with a recent request's chunks.
struct CoAccessedRow {
  std::string name_space;
  CatalogRow row;
  int64_t count = 0;  // co-access count in the catalog (all runs)
};

class FlashTier {
 public:
  // Opens (creating when missing) and recovers the flash tier of options.dir; a damaged
  // catalog is rebuilt, a folder that cannot be written is served read-only, a catalog that
  // cannot be opened at all leaves a memory-only store. Errors: those of ChunkStore::Open.
  static Result<std::unique_ptr<FlashTier>> Open(const StoreOptions& options);
  ~FlashTier();
  FlashTier(const FlashTier&) = delete;
  FlashTier& operator=(const FlashTier&) = delete;

  bool has_catalog() const { return catalog_ != nullptr; }
  bool is_persistent() const { return persistent_.load(std::memory_order_relaxed); }
  // Switches persistence off for good and logs why; true the first time.
  bool DisablePersistence(const Status& why);

  // Lookups: rows only, no KV, no statistics. Rows of another model are returned (Load
  // refuses them) except by Children and SearchSpans, which keep this model's only.
  std::optional<CatalogRow> Find(const std::string& name_space, kv::ChunkId id);
  std::optional<CatalogRow> FindByContent(const std::string& name_space, kv::ContentHash content);
  std::vector<CatalogRow> Children(const std::string& name_space, kv::ChunkId parent);
  // This model's rows (with tokens) sharing a span with `tokens`, most shared span
  // fingerprints first (Catalog::SearchSpans), with that count.
  std::vector<std::pair<CatalogRow, int>> SearchSpans(const std::string& name_space,
                                                      std::span<const int32_t> tokens,
                                                      int max_results);
  // Chunks used together with the first chunks of `recent` requests, not deduplicated
  // against the pool.
  std::vector<CoAccessedRow> CoAccessed(std::span<const AccessJob> recent);
  // The row's chunk with its KV, or null: another model's chunk, maintenance mode
  // (fingerprint 0), or a bad file (then dropped with its row and counted).
  std::shared_ptr<const kv::ChunkEntry> Load(const CatalogRow& row);

  // The write-back thread's side: writes the batch's files and rows.
  FlashBatchResult WriteBatch(std::span<const WriteJob> batch);
  // Records which chunks the prompts used (access statistics, co-access counts) and the
  // admission sightings they carry.
  void RecordAccesses(std::span<const AccessJob> accesses);
  // The `limit` most recently seen admission sightings in the catalog (empty without one).
  std::vector<SightingRow> RecentSightings(int64_t limit);
  // Evicts chunks chosen by `choose` until the files fit options.disk_bytes; returns them.
  Result<std::vector<PoolKey>> EvictOverBudget(const VictimChooser& choose);

  // Maintenance. Gc: removes orphans (only when no other process has the store open),
  // verifies every file (dropping bad ones), enforces the disk budget (evicted chunks are
  // added to `evicted`). Errors: Unavailable (not writable); the lock's error when it cannot
  // be taken back after recovery (persistence is then off); those of the catalog. `progress`
  // hears of each file verified.
  Result<GcReport> Gc(const VictimChooser& choose, std::vector<PoolKey>* evicted,
                      const ProgressCallback& progress = {});
  Status Clear(const std::optional<std::string>& name_space);
  Status SetPinned(const std::string& name_space, std::optional<kv::ChunkId> id, bool pinned);
  Result<std::vector<CatalogRow>> List(const std::optional<std::string>& name_space);
  Result<std::vector<std::string>> Namespaces();

  // Fills the flash tier's fields of `stats`: catalog figures, corruption counters, catalog
  // health, persistence, flash evictions.
  void FillStats(StoreStats& stats);

 private:
  explicit FlashTier(const StoreOptions& options) : options_(options) {}
  double Now() const;
  std::string PathOf(const std::string& file_name) const { return options_.dir + "/" + file_name; }
  // Open's catalog steps (writable store): opens, drops bad rows, and sets aside and rebuilds
  // a damaged catalog when `exclusive`.
  Status OpenWritableCatalog(bool exclusive);
  // Counts `n` chunks dropped as corrupt: in the catalog when writable, else in memory.
  void CountCorrupt(int64_t n, bool bad_rows);
  // Drops a row whose file is bad or gone (a gone file is not counted as corrupt).
  void DropBadRow(const CatalogRow& row, const Status& why);

  StoreOptions options_;
  std::unique_ptr<FileSystem> owned_fs_;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<Catalog> catalog_;
  std::mutex catalog_mutex_;  // the catalog is used by one thread at a time
  StoreLock lock_;            // held shared while open (writable stores)
  // Held while a batch is written, and by Gc() while it changes the lock.
  std::mutex batch_mutex_;
  int consecutive_chunk_failures_ = 0;  // under batch_mutex_

  // Relaxed reads on the request path; switched off once, under stats_mutex_.
  std::atomic<bool> persistent_{true};
  std::mutex stats_mutex_;
  // This tier's fields of StoreStats (FillStats adds the catalog's figures).
  StoreStats stats_ REPRISE_GUARDED_BY(stats_mutex_);
  // Drops not persisted in the catalog (read-only store, or the catalog write failed).
  int64_t unpersisted_corrupt_ REPRISE_GUARDED_BY(stats_mutex_) = 0;
};

}  // namespace reprise::store
