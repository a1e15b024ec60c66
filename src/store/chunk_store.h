// ChunkStore: the persistent, hierarchical KV store of DESIGN.md §6 — a memory pool over a
// flash tier (one KV file per chunk, a SQLite catalog) — implementing kv::ChunkCache per
// namespace.
//
//  - Memory pool: chunks just produced or loaded, under a byte budget; new chunks are
//    "dirty" until the write-back thread persisted them.
//  - Flash: KV files written to a temporary name, fsynced and renamed, then their catalog
//    rows inserted in one transaction per batch. Opening the store removes rows without files
//    and files without rows. A file that fails its checks is a cache miss: its row and file
//    are dropped and counted, never used.
//  - Lazy write-back: Insert only queues; a background thread writes in batches, so nothing
//    is written on the request's path (write_back.h). Flush() (and the destructor) waits for
//    the queue.
//  - Eviction: the pool and the flash tier each evict by locality x cost (or LRU for
//    ablations); pinned chunks are never evicted. Prefetch loads, in idle time, chunks whose
//    locality passes a threshold: on the write-back thread once its queue is empty after a
//    request (options.prefetch_in_background), never on the caller's thread unless the
//    caller asks (RunIdleWork with prefetch_in_background off).
//  - Failures to persist (disk full, read-only folder) switch persistence off: the store
//    keeps serving from memory (and, read-only, from flash: the catalog is then opened
//    without its -shm, catalog.h), logs it once, and damages nothing already stored. A
//    failure of one chunk's own file (a folder in its place) only skips that chunk.
//  - Damage is contained: a catalog row that cannot be read is dropped with its file; a
//    catalog that is not a usable database is set aside (catalog.db.corrupt-<time>) and
//    rebuilt from the KV files (catalog_rebuild.h). Stats() says so, and counts every chunk
//    dropped as corrupt in the catalog (corrupt_dropped survives restarts).
//  - Privacy: the folder is the user's alone (store_dir.h): a symlink or another user's folder
//    is refused, wider modes are narrowed to 0700, files are 0600.
//
// Several processes on one store (the decision): they SHARE it. Each process that writes
// holds `<dir>/lock` shared for as long as the store is open (store_lock.h), so any number of
// them run, write, evict and gc side by side; SQLite serialises catalog transactions, and
// each process writes its files under temporary names of its own. Only deleting temporaries
// and orphan files — recovery at Open and in Gc(), and rebuilding a damaged catalog — needs
// the lock exclusive, which is granted only when no other process has the store open; a
// process that cannot get it at once skips that deletion (StoreStats / GcReport
// recovery_skipped) and serves as usual: a crashed process's leftovers wait for the next
// process that opens the store alone. Open waits up to 10 s for another process's recovery to
// finish, then serves without persistence. A read-only store (options.read_only or a folder
// that is not writable) takes no lock and deletes nothing.
//
// Thread-safe. Namespace views borrow the store and must not outlive it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/thread_annotations.h"
#include "kv/chunk_cache.h"
#include "store/catalog.h"
#include "store/eviction_cost.h"
#include "store/eviction_policy.h"
#include "store/file_system.h"
#include "store/kv_codec.h"
#include "store/locality.h"
#include "store/memory_pool.h"
#include "store/store_lock.h"
#include "store/write_back.h"

namespace reprise::store {

struct StoreOptions {
  std::string dir;                         // created 0700 when missing
  int64_t pool_bytes = int64_t{512} << 20;  // memory pool budget
  int64_t disk_bytes = int64_t{8} << 30;    // flash budget (KV files)
  KvCodec codec = KvCodec::kF16;
  // Files of another model are never used; 0 opens the store for maintenance only (cache
  // commands): chunks are listed but not loaded.
  uint64_t model_fingerprint = 0;
  CostModel costs{1000.0 * 1024, 10.0, 2.5};
  bool cost_aware = true;   // false: LRU in both tiers (for ablations)
  bool prefetch = true;
  // Prefetch on the write-back thread after each recorded request (RunIdleWork then only
  // asks for it); false: only when RunIdleWork is called, on the caller's thread.
  bool prefetch_in_background = true;
  double prefetch_threshold = 0.25;
  int writeback_batch = 16;
  // Injected for tests: the file system (borrowed; null = POSIX) and the clock (seconds).
  FileSystem* file_system = nullptr;
  std::function<double()> clock;
  bool read_only = false;  // open without writing (cache commands that only read)
};

struct StoreStats {
  int64_t chunks = 0;          // rows in the catalog
  int64_t bytes_on_disk = 0;
  int64_t bytes_in_pool = 0;
  int64_t chunks_in_pool = 0;
  int64_t dirty_chunks = 0;    // waiting for write-back
  int64_t namespaces = 0;
  int64_t corrupt_dropped = 0;
  int64_t hits_pool = 0;
  int64_t hits_flash = 0;
  int64_t misses = 0;
  int64_t pool_evictions = 0;
  int64_t flash_evictions = 0;
  int64_t chunks_written = 0;
  int64_t prefetched = 0;
  double write_ms_total = 0;       // on the write-back thread
  double write_ms_on_caller = 0;   // writes on request threads: 0 by design
  bool persistence_enabled = true;
  std::string persistence_error;   // why persistence is off
  // Catalog health. corrupt_dropped above is persisted in the catalog (all processes, all
  // runs since the catalog was created): chunk files that failed their checks, wrong sizes
  // found at open, and unreadable catalog rows (also counted here:)
  int64_t bad_rows_dropped = 0;  // persisted: catalog rows that could not be read
  int64_t catalog_rebuilds = 0;  // persisted in the rebuilt catalog
  // This open: a damaged catalog was set aside under this name (in the store folder) and
  // rebuilt from the KV files, restoring rows_restored rows.
  bool catalog_rebuilt = false;
  std::string catalog_set_aside;
  int64_t rows_restored = 0;
  // The catalog exists but could not be opened (damaged, and this process may not rebuild
  // it): the store serves from memory only. Empty when fine.
  std::string catalog_error;
  // This process: chunks not persisted because their own file could not be written (e.g. a
  // folder in its place); persistence stays on for the others.
  int64_t chunks_not_persisted = 0;
  // This open: another process had the store open, so leftovers were not deleted.
  bool recovery_skipped = false;
  bool dir_mode_fixed = false;  // the store folder had group/other bits; now 0700
};

struct GcReport {
  int64_t rows_missing_file = 0, orphan_files = 0, corrupt = 0, evicted = 0;
  int64_t bytes_freed = 0;
  // Another process had the store open: temporaries and orphan files were left alone.
  bool recovery_skipped = false;
};

class ChunkStore : private WriteBackSink {
 public:
  // Opens (creating when missing) and recovers the store; a damaged catalog is rebuilt, a
  // folder that cannot be written is served read-only. Errors: InvalidArgument (options; a
  // symlinked store folder), Unavailable (another user's folder), Unimplemented (a catalog
  // of a newer schema), Corrupt (options.read_only and the catalog is damaged: a writable
  // open rebuilds it).
  static Result<std::unique_ptr<ChunkStore>> Open(const StoreOptions& options);
  ~ChunkStore() override;
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // A view of one namespace (one app or API key); lookups never cross namespaces. Inserts
  // into a namespace whose name fails ValidateNamespaceName (namespace_name.h) fail with
  // InvalidArgument; lookups of such names find what is stored under them.
  std::unique_ptr<kv::ChunkCache> OpenNamespace(std::string name_space);
  // OpenNamespace for a name that must be valid. Errors: InvalidArgument.
  Result<std::unique_ptr<kv::ChunkCache>> OpenValidNamespace(std::string name_space);

  // Records that one prompt used these chunks (locality, co-access); cheap, queued.
  void RecordRequest(const std::string& name_space, std::span<const kv::ChunkId> chunk_ids);

  // Idle-time work: prefetch into the pool. With options.prefetch_in_background (the
  // default) it asks the write-back thread for a pass and returns 0 at once (Flush waits for
  // that pass); otherwise it runs the pass on the caller's thread and returns the chunks
  // loaded.
  int RunIdleWork();

  // Waits until every queued chunk is persisted (or persistence is off), and any idle work
  // asked for is done.
  Status Flush();

  StoreStats Stats();
  Status SetPinned(const std::string& name_space, std::optional<kv::ChunkId> chunk_id, bool pinned);
  // Removes orphans, verifies every file's checksums (dropping bad ones), enforces the disk
  // budget.
  Result<GcReport> Gc();
  // Removes every chunk of `name_space`, or of the whole store.
  Status Clear(std::optional<std::string> name_space);
  Result<std::vector<CatalogRow>> List(std::optional<std::string> name_space);
  Result<std::vector<std::string>> Namespaces();

  const StoreOptions& options() const { return options_; }

  // kv::ChunkCache operations of a namespace (the views forward here).
  Status Insert(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry);
  std::shared_ptr<const kv::ChunkEntry> Find(const std::string& ns, kv::ChunkId id);
  bool Contains(const std::string& ns, kv::ChunkId id, bool require_exact);
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(const std::string& ns,
                                                               kv::ChunkId parent);
  std::shared_ptr<const kv::ChunkEntry> FindByContent(const std::string& ns,
                                                      kv::ContentHash content);
  std::vector<kv::ChunkCandidate> FindCandidates(const std::string& ns,
                                                 std::span<const int32_t> tokens,
                                                 std::string_view text, int max_candidates);
  kv::ChunkCacheStats CacheStats(const std::string& ns);

 private:
  explicit ChunkStore(const StoreOptions& options) : options_(options) {}
  double Now() const;
  // WriteBackSink, on the write-back thread: writes a batch's files and catalog rows, then
  // records the accesses; and prefetches.
  void PersistBatch(std::span<const WriteJob> batch, std::span<const AccessJob> accesses) override;
  int PerformIdleWork() override;
  // One prefetch pass; returns the chunks loaded.
  int Prefetch();
  // Switches persistence off and drops pending writes; true the first time (the caller then
  // says so once in the log).
  bool DisablePersistenceLocked(const Status& why) REPRISE_REQUIRES(mutex_);
  // Evicts what exceeds the pool's budget and counts it.
  void EvictPoolLocked() REPRISE_REQUIRES(mutex_);
  // Loads a chunk's file; drops the row and file when they are bad.
  std::shared_ptr<const kv::ChunkEntry> LoadFromFlash(const CatalogRow& row);
  void DropCorrupt(const CatalogRow& row, const Status& why);
  // A flash lookup's end: loads the row's chunk into the pool and counts the hit (or miss).
  std::shared_ptr<const kv::ChunkEntry> LoadIntoPool(const std::string& ns,
                                                     const std::optional<CatalogRow>& row);
  Status EvictFlash();  // enforces disk_bytes (writer thread or Gc)
  // Counts `n` chunks dropped as corrupt: in the catalog when writable, else in memory.
  void CountCorrupt(int64_t n, bool bad_rows);
  // Open's catalog steps (writable store): opens, drops bad rows, and sets aside and rebuilds
  // a damaged catalog when `exclusive`. Fills stats_ fields.
  Status OpenWritableCatalog(bool exclusive);
  std::string PathOf(const std::string& file_name) const { return options_.dir + "/" + file_name; }

  StoreOptions options_;
  std::unique_ptr<FileSystem> owned_fs_;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<Catalog> catalog_;
  std::mutex catalog_mutex_;  // the catalog is used by one thread at a time
  StoreLock lock_;            // held shared while open (writable stores)
  // Held by the writer thread while it writes a batch, and by Gc() while it changes the lock
  // (which is briefly released then).
  std::mutex batch_mutex_;
  int consecutive_chunk_failures_ = 0;  // writer thread only

  std::mutex mutex_;  // pool, policies, statistics
  std::unique_ptr<LocalityModel> locality_ REPRISE_GUARDED_BY(mutex_);
  std::unique_ptr<MemoryPool> pool_ REPRISE_GUARDED_BY(mutex_);
  std::unique_ptr<EvictionPolicy> flash_policy_ REPRISE_GUARDED_BY(mutex_);
  std::vector<AccessJob> recent_requests_ REPRISE_GUARDED_BY(mutex_);  // for prefetch
  std::mutex prefetch_mutex_;  // one prefetch pass at a time (write-back thread or caller)
  StoreStats stats_ REPRISE_GUARDED_BY(mutex_);
  // Drops not persisted in the catalog (read-only store, or the catalog write failed).
  int64_t unpersisted_corrupt_ REPRISE_GUARDED_BY(mutex_) = 0;
  std::map<std::string, kv::ChunkCacheStats> ns_stats_ REPRISE_GUARDED_BY(mutex_);
  // Relaxed reads on the request path; set once by the writer thread under mutex_.
  std::atomic<bool> persistence_{true};
  // Last: started when the store is ready, stopped (after finishing its queue) first.
  std::unique_ptr<WriteBack> write_back_;
};

}  // namespace reprise::store
