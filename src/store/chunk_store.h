// ChunkStore: the persistent, hierarchical KV store of docs/design.md §6 — a memory pool over a
// flash tier (one KV file per chunk, a SQLite catalog) — implementing kv::ChunkCache per
// namespace. It composes three parts and holds the policies that span them:
// MemoryPool (memory_pool.h), FlashTier (flash_tier.h) and WriteBack (write_back.h); the
// locality model, the flash eviction policy and prefetch stay here because they weigh the
// pool and flash together.
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
//  - Admission control (admission.h; off unless options.admit_after_sightings > 1): an
//    undeclared chunk is written only once its content recurs (or it is pinned); until
//    then it lives in the pool alone.
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
//  - A remote tier shared with other servers (options.remote, remote_tier.h; optional): the
//    write-back thread sends each chunk it put on flash there too, and lookups by id or content
//    that miss memory and flash ask it. What it returns is checked (CheckRemoteValue) and then
//    kept like an insert (pool, then flash); a bad value is a miss, counted. It never fails or
//    stalls a lookup: an unavailable server is a miss.
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

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/progress.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "kv/chunk_cache.h"
#include "store/admission.h"
#include "store/catalog.h"
#include "store/eviction_policy.h"
#include "store/flash_tier.h"
#include "store/locality.h"
#include "store/memory_pool.h"
#include "store/remote_tier.h"
#include "store/store_options.h"
#include "store/write_back.h"

namespace reprise::store {

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
  // budget. `progress` hears of each file verified.
  Result<GcReport> Gc(const ProgressCallback& progress = {});
  // Removes every chunk of `name_space`, or of the whole store.
  Status Clear(std::optional<std::string> name_space);
  Result<std::vector<CatalogRow>> List(std::optional<std::string> name_space);
  Result<std::vector<std::string>> Namespaces();

  const StoreOptions& options() const { return options_; }

  // kv::ChunkCache operations of a namespace (the views forward here).
  Status Insert(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry);
  std::shared_ptr<const kv::ChunkEntry> Find(const std::string& ns, kv::ChunkId id);
  bool Contains(const std::string& ns, kv::ChunkId id, bool require_exact);
  // kv::ChunkCache::Peek / PeekByContent: the pool's entry (with its KV) or the catalog's row
  // as an entry without KV; nothing loaded or counted. With a remote tier, a chunk found only
  // there is fetched, checked and kept now (it has no index to peek at), and counted as a
  // remote hit.
  std::shared_ptr<const kv::ChunkEntry> Peek(const std::string& ns, kv::ChunkId id);
  std::shared_ptr<const kv::ChunkEntry> PeekByContent(const std::string& ns,
                                                      kv::ContentHash content);
  // A chunk's parent and content from the pool's index or the catalog (no KV loaded), or
  // nullopt.
  std::optional<kv::ChunkLink> LinkOf(const std::string& ns, kv::ChunkId id);
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(const std::string& ns,
                                                              kv::ChunkId parent);
  std::shared_ptr<const kv::ChunkEntry> FindByContent(const std::string& ns,
                                                      kv::ContentHash content);
  // Span candidates: the pool's chunks that the catalog does not hold yet (so a chunk is a
  // candidate from the moment it is inserted, whatever the write-back's progress) and the
  // catalog's rows, ranked together by shared span fingerprints; each chunk once, best first.
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
  // Switches persistence off and stops writing back; true the first time.
  bool DisablePersistenceLocked(const Status& why) REPRISE_REQUIRES(mutex_);
  // Persistence is off: dirty chunks become ordinary ones, the write-back queue is dropped.
  void StopWritingBackLocked() REPRISE_REQUIRES(mutex_);
  // Evicts what exceeds the pool's budget and counts it.
  void EvictPoolLocked() REPRISE_REQUIRES(mutex_);
  // Admission control (admission.h).
  bool AdmissionActive() const;
  int64_t NowUs() const;
  // Queues the sightings counted since the last request for the catalog (Flush, close).
  void EnqueueSightings();
  // A pool chunk awaiting admission is queued for write-back.
  void AdmitLocked(const std::string& ns, kv::ChunkId id) REPRISE_REQUIRES(mutex_);
  // A later prompt found `entry` in the pool: one more sighting when it awaits admission.
  void SightInPoolLocked(const std::string& ns, const kv::ChunkEntry& entry)
      REPRISE_REQUIRES(mutex_);
  // A flash lookup's end: loads the row's chunk into the pool and counts the hit (or miss).
  std::shared_ptr<const kv::ChunkEntry> LoadIntoPool(const std::string& ns,
                                                     const std::optional<CatalogRow>& row);
  // The remote tier's lookups (after memory and flash missed): the chunk with this id (and
  // `content`, when given), checked as a file on flash is and more (CheckRemoteValue), then
  // kept in the pool and queued for flash like an insert; or null (counted as a miss or a
  // bad value). Null at once without a remote tier.
  std::shared_ptr<const kv::ChunkEntry> FetchRemote(const std::string& ns, kv::ChunkId id,
                                                    std::optional<kv::ContentHash> content);
  std::shared_ptr<const kv::ChunkEntry> FetchRemoteByContent(const std::string& ns,
                                                             kv::ContentHash content);
  // Checks a remote value for chunk `id` of `ns`: a well-formed KV file (checksums), of this
  // model (fingerprint), this chunk (id, parent, content hash of its tokens), this namespace,
  // a consistent provenance (blended KV is never exact) and this model's KV shape. Errors:
  // Corrupt saying which check failed.
  Result<kv::ChunkEntry> CheckRemoteValue(const std::string& ns, kv::ChunkId id,
                                          std::optional<kv::ContentHash> content,
                                          const std::string& value) const;
  // Write-back's side: sends the written chunks of a batch that did not come from there.
  void SendToRemote(std::span<const WriteJob> batch, std::span<const size_t> written);
  // Insert, for a chunk from the remote tier too.
  Status InsertChunk(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry,
                     bool from_remote);
  // Flash eviction: the flash policy's choice (a VictimChooser), then the pool's chunks that
  // went are no longer persisted.
  VictimSelection ChooseFlashVictims(std::span<const ChunkInfo> chunks, int64_t bytes_to_free);
  Status EvictFlash();

  const StoreOptions options_;
  std::unique_ptr<FlashTier> flash_;  // set by Open; thread-safe
  std::unique_ptr<RemoteTier> remote_;  // set by Open when options.remote.url is; thread-safe

  Mutex mutex_;  // pool, policies, statistics
  std::unique_ptr<LocalityModel> locality_ REPRISE_GUARDED_BY(mutex_);
  std::unique_ptr<MemoryPool> pool_ REPRISE_GUARDED_BY(mutex_);
  std::unique_ptr<EvictionPolicy> flash_policy_ REPRISE_GUARDED_BY(mutex_);
  std::vector<AccessJob> recent_requests_ REPRISE_GUARDED_BY(mutex_);  // for prefetch
  std::unique_ptr<SightingCounter> sightings_ REPRISE_GUARDED_BY(mutex_);
  Mutex prefetch_mutex_;  // one prefetch pass at a time (write-back thread or caller)
  // This process's counters; Stats() adds the pool's and the flash tier's figures.
  StoreStats stats_ REPRISE_GUARDED_BY(mutex_);
  std::map<std::string, kv::ChunkCacheStats> ns_stats_ REPRISE_GUARDED_BY(mutex_);
  // Last: started when the store is ready, stopped (after finishing its queue) first.
  std::unique_ptr<WriteBack> write_back_;
};

}  // namespace reprise::store
