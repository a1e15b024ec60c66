#include "store/chunk_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "base/logging.h"
#include "store/catalog_rebuild.h"
#include "store/kv_file.h"
#include "store/namespace_name.h"
#include "store/prefetch_policy.h"
#include "store/recovery.h"
#include "store/store_dir.h"

namespace reprise::store {
namespace {

// Chunk files failing one after another (not for a full disk or a read-only folder, which
// stop persistence at once) before the writer concludes that the folder is the problem.
constexpr int kMaxConsecutiveChunkFailures = 8;

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// A namespace's view: a kv::ChunkCache that forwards to the store.
class NamespaceCache : public kv::ChunkCache {
 public:
  NamespaceCache(ChunkStore* store, std::string ns) : store_(store), ns_(std::move(ns)) {}
  Status Insert(std::shared_ptr<const kv::ChunkEntry> entry) override {
    return store_->Insert(ns_, std::move(entry));
  }
  std::shared_ptr<const kv::ChunkEntry> Find(kv::ChunkId id) override {
    return store_->Find(ns_, id);
  }
  bool Contains(kv::ChunkId id, bool require_exact) override {
    return store_->Contains(ns_, id, require_exact);
  }
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(kv::ChunkId parent) override {
    return store_->Children(ns_, parent);
  }
  std::shared_ptr<const kv::ChunkEntry> FindByContent(kv::ContentHash content) override {
    return store_->FindByContent(ns_, content);
  }
  std::vector<kv::ChunkCandidate> FindCandidates(std::span<const int32_t> tokens,
                                                 std::string_view text,
                                                 int max_candidates) override {
    return store_->FindCandidates(ns_, tokens, text, max_candidates);
  }
  kv::ChunkCacheStats stats() override { return store_->CacheStats(ns_); }
  void RecordUse(std::span<const kv::ChunkId> chunk_ids) override {
    store_->RecordRequest(ns_, chunk_ids);
  }
  int RunIdleWork() override { return store_->RunIdleWork(); }

 private:
  ChunkStore* store_;
  std::string ns_;
};

// A catalog row as an entry without KV (for the prefix walk's token comparison).
std::shared_ptr<const kv::ChunkEntry> Skeleton(const CatalogRow& row) {
  auto e = std::make_shared<kv::ChunkEntry>();
  e->id = row.chunk_id;
  e->parent = row.parent_id;
  e->content = row.content_hash;
  e->exact = row.exact;
  e->tokens = row.tokens;
  return e;
}

}  // namespace

Result<std::unique_ptr<ChunkStore>> ChunkStore::Open(const StoreOptions& options) {
  if (options.dir.empty()) return InvalidArgumentError("no store folder given");
  if (options.pool_bytes <= 0 || options.disk_bytes <= 0) {
    return InvalidArgumentError("store budgets must be positive");
  }
  if (options.writeback_batch < 1) return InvalidArgumentError("write-back batch must be >= 1");
  REPRISE_RETURN_IF_ERROR(ValidateCostModel(options.costs));
  std::unique_ptr<ChunkStore> s(new ChunkStore(options));
  if (options.file_system == nullptr) {
    s->owned_fs_ = NewPosixFileSystem();
    s->fs_ = s->owned_fs_.get();
  } else {
    s->fs_ = options.file_system;
  }
  bool writable = !options.read_only;
  Status why_read_only;
  const auto fall_back_to_read_only = [&](const Status& why) {
    writable = false;
    why_read_only = why;
  };
  if (writable) {
    Status made = s->fs_->CreateDir(options.dir);
    if (!made.ok()) fall_back_to_read_only(made);
  }
  // The folder is private to its user: refuse a symlink or another user's folder, narrow a
  // readable one of ours.
  struct stat info;
  const bool dir_exists = ::lstat(options.dir.c_str(), &info) == 0;
  if (dir_exists) {
    Result<StoreDirCheck> check = CheckStoreDir(options.dir, /*fix_mode=*/true);
    if (!check.ok()) return check.status().WithContext("store");
    if (check->mode_fixed) {
      REPRISE_LOG(kWarning) << "store " << options.dir
                            << ": the folder was readable by other users; now mode 0700";
      std::lock_guard<std::mutex> lock(s->mutex_);
      s->stats_.dir_mode_fixed = true;
    }
  }
  if (writable) {
    Status prepared = PrepareCatalogFiles(options.dir);
    if (prepared.code() == StatusCode::kInvalidArgument) return prepared.WithContext("store");
    if (!prepared.ok()) fall_back_to_read_only(prepared);
  }
  // The lock (chunk_store.h: several processes share a store). Exclusive when we are alone,
  // for recovery; shared afterwards.
  bool exclusive = false;
  if (writable) {
    Result<StoreLock> lock = StoreLock::Open(options.dir);
    if (!lock.ok()) {
      fall_back_to_read_only(lock.status());
    } else {
      s->lock_ = std::move(lock).value();
      Result<bool> got = s->lock_.TryLockExclusive();
      if (!got.ok()) {
        fall_back_to_read_only(got.status());
      } else if (*got) {
        exclusive = true;
      } else {
        Status shared = s->lock_.LockShared(10000);
        if (!shared.ok()) fall_back_to_read_only(shared);
      }
    }
  }
  if (writable) {
    Status opened = s->OpenWritableCatalog(exclusive);
    if (!opened.ok()) {
      if (opened.code() == StatusCode::kUnimplemented ||
          opened.code() == StatusCode::kInvalidArgument) {
        return opened.WithContext(options.dir);
      }
      fall_back_to_read_only(opened);
      s->catalog_.reset();
    }
  }
  const std::string catalog_path = options.dir + "/" + std::string(kCatalogFileName);
  if (!s->catalog_) {
    CatalogOptions read_only;
    read_only.read_only = true;
    Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(catalog_path, read_only);
    if (catalog.ok()) {
      s->catalog_ = std::move(catalog).value();
    } else if (catalog.status().code() != StatusCode::kNotFound) {
      // A damaged catalog we may not rebuild. Opened read-only on purpose (maintenance
      // commands): say so and stop, rather than report an empty store. Otherwise serve from
      // memory, and say why.
      if (options.read_only && catalog.status().code() == StatusCode::kCorrupt) {
        return catalog.status().WithContext(
            "store " + options.dir +
            " (opened read-only; opening it writable sets the catalog aside and rebuilds it)");
      }
      if (why_read_only.ok()) why_read_only = catalog.status();
      std::lock_guard<std::mutex> lock(s->mutex_);
      s->stats_.catalog_error = catalog.status().ToString();
      REPRISE_LOG(kWarning) << "store " << options.dir
                            << ": catalog unusable: " << catalog.status().ToString();
    }
    // No catalog at all: a memory-only store.
  }
  if (writable && exclusive) {
    Result<RecoveryReport> report = RecoverStore(*s->fs_, *s->catalog_, options.dir);
    if (!report.ok()) {
      // Leftovers stay for a later open; the store itself is sound.
      REPRISE_LOG(kWarning) << "store " << options.dir
                            << ": recovery incomplete: " << report.status().ToString();
    } else {
      if (report->num_rows_size_mismatch > 0)
        s->CountCorrupt(report->num_rows_size_mismatch, false);
      if (report->num_rows_missing_file + report->num_rows_size_mismatch +
              report->num_orphan_files_removed + report->num_temp_files_removed >
          0) {
        REPRISE_LOG(kInfo) << "store " << options.dir << ": recovered (rows without files "
                           << report->num_rows_missing_file << ", bad sizes "
                           << report->num_rows_size_mismatch << ", orphan files "
                           << report->num_orphan_files_removed << ", temporaries "
                           << report->num_temp_files_removed << ")";
      }
    }
  } else if (writable) {
    std::lock_guard<std::mutex> lock(s->mutex_);
    s->stats_.recovery_skipped = true;
  }
  if (writable && exclusive) {
    // Downgrade; the kernel drops the exclusive lock first, which is harmless here: nothing
    // of ours is in flight yet.
    Status shared = s->lock_.LockShared(10000);
    if (!shared.ok()) fall_back_to_read_only(shared);
  }
  if (!writable && s->lock_.is_open()) {
    s->lock_.Unlock();
    s->lock_ = StoreLock();
  }
  REPRISE_ASSIGN_OR_RETURN(LocalityModel locality, LocalityModel::Create({}));
  std::lock_guard<std::mutex> lock(s->mutex_);
  s->locality_ = std::make_unique<LocalityModel>(std::move(locality));
  if (options.cost_aware) {
    REPRISE_ASSIGN_OR_RETURN(CostAwareEvictionPolicy pool,
                             CostAwareEvictionPolicy::Create(
                                 s->locality_.get(), {StoreTier::kPool, options.costs, true}));
    REPRISE_ASSIGN_OR_RETURN(CostAwareEvictionPolicy flash,
                             CostAwareEvictionPolicy::Create(
                                 s->locality_.get(), {StoreTier::kFlash, options.costs, true}));
    s->pool_ = std::make_unique<MemoryPool>(
        options.pool_bytes, std::make_unique<CostAwareEvictionPolicy>(std::move(pool)));
    s->flash_policy_ = std::make_unique<CostAwareEvictionPolicy>(std::move(flash));
  } else {
    s->pool_ = std::make_unique<MemoryPool>(options.pool_bytes,
                                            std::make_unique<LruEvictionPolicy>());
    s->flash_policy_ = std::make_unique<LruEvictionPolicy>();
  }
  if (!writable) {
    s->persistence_.store(false, std::memory_order_relaxed);
    s->stats_.persistence_enabled = false;
    s->stats_.persistence_error =
        options.read_only ? "opened read-only"
                          : "the store cannot be written (" + why_read_only.ToString() +
                                "); serving without persistence";
    if (!options.read_only) REPRISE_LOG(kWarning) << "store " << options.dir << ": "
                                                  << s->stats_.persistence_error;
  }
  WriteBackSink* sink = s.get();  // a private base: converted here, inside the class
  s->write_back_ = std::make_unique<WriteBack>(sink, options.writeback_batch);
  return s;
}

Status ChunkStore::OpenWritableCatalog(bool exclusive) {
  const std::string& dir = options_.dir;
  const std::string catalog_path = dir + "/" + std::string(kCatalogFileName);
  // An empty catalog file beside KV files is a lost catalog (deleted, or truncated to
  // nothing), not an empty store: rebuild it rather than delete the files as orphans.
  bool lost = false;
  if (exclusive) {
    Result<uint64_t> size = fs_->FileSize(catalog_path);
    if (size.ok() && *size == 0) {
      Result<std::vector<std::string>> names = fs_->ListDir(dir);
      if (names.ok()) {
        for (const std::string& name : *names) lost = lost || name.ends_with(kKvFileSuffix);
      }
    }
  }
  Status damaged;
  std::vector<std::string> bad_files;
  {
    Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(catalog_path);
    if (catalog.ok()) {
      catalog_ = std::move(catalog).value();
      Result<std::vector<std::string>> dropped = catalog_->DropInvalidRows();
      if (dropped.ok()) {
        bad_files = std::move(dropped).value();
      } else {
        damaged = dropped.status();
      }
    } else {
      damaged = catalog.status();
    }
  }
  if (damaged.ok() && !lost) {
    if (!bad_files.empty()) {
      REPRISE_LOG(kWarning) << "store " << dir << ": dropped " << bad_files.size()
                            << " catalog rows that could not be read";
      CountCorrupt(static_cast<int64_t>(bad_files.size()), true);
      // Their files go now when we are alone; otherwise recovery removes them as orphans later.
      if (exclusive) {
        for (const std::string& f : bad_files) {
          if (f.ends_with(kKvFileSuffix) && f.find('/') == std::string::npos) {
            fs_->Remove(PathOf(f)).IgnoreError();
          }
        }
      }
    }
    return Status::Ok();
  }
  if (!damaged.ok()) {
    catalog_.reset();
    if (damaged.code() != StatusCode::kCorrupt) return damaged;
    if (!exclusive) {
      return damaged.WithContext(
          "catalog damaged; another process has the store open, so it is not rebuilt now");
    }
  }
  // Set a damaged catalog aside, then rebuild from the KV files.
  std::string aside;
  if (!damaged.ok()) {
    REPRISE_ASSIGN_OR_RETURN(aside, SetAsideCatalog(*fs_, dir, static_cast<int64_t>(Now())));
    REPRISE_RETURN_IF_ERROR(PrepareCatalogFiles(dir));
    REPRISE_ASSIGN_OR_RETURN(catalog_, Catalog::Open(catalog_path));
  }
  REPRISE_ASSIGN_OR_RETURN(const CatalogRebuildReport report,
                           RebuildCatalog(*fs_, *catalog_, dir, static_cast<int64_t>(Now() * 1e6)));
  catalog_->AddToCounter("catalog_rebuilds", 1).IgnoreError();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.catalog_rebuilt = true;
    stats_.catalog_set_aside = aside;
    stats_.rows_restored = report.num_rows_restored;
  }
  if (report.num_files_corrupt > 0) CountCorrupt(report.num_files_corrupt, false);
  REPRISE_LOG(kWarning) << "store " << dir << ": the catalog was "
                        << (damaged.ok()
                                ? "lost (empty)"
                                : "damaged (" + damaged.ToString() + "); set aside as " + aside)
                        << "; rebuilt from " << report.num_files_scanned
                        << " KV files: " << report.num_rows_restored << " chunks restored, "
                        << report.num_files_corrupt << " corrupt and "
                        << report.num_files_unattributable
                        << " unattributable (old-format) files removed";
  return Status::Ok();
}

void ChunkStore::CountCorrupt(int64_t n, bool bad_rows) {
  bool persisted = false;
  if (catalog_ && persistence_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    persisted = catalog_->AddToCounter("corrupt_dropped", n).ok();
    if (persisted && bad_rows) catalog_->AddToCounter("bad_rows_dropped", n).IgnoreError();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.corrupt_dropped += n;
  if (bad_rows) stats_.bad_rows_dropped += n;
  if (!persisted) unpersisted_corrupt_ += n;
}

ChunkStore::~ChunkStore() {
  // Finishes the queue while the rest of the store is still here.
  write_back_.reset();
}

double ChunkStore::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<kv::ChunkCache> ChunkStore::OpenNamespace(std::string name_space) {
  return std::make_unique<NamespaceCache>(this, std::move(name_space));
}

Result<std::unique_ptr<kv::ChunkCache>> ChunkStore::OpenValidNamespace(std::string name_space) {
  REPRISE_RETURN_IF_ERROR(ValidateNamespaceName(name_space));
  return OpenNamespace(std::move(name_space));
}

void ChunkStore::EvictPoolLocked() {
  stats_.pool_evictions += pool_->EvictOverBudget(Now());
}

Status ChunkStore::Insert(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry) {
  if (!entry || !entry->kv) return InvalidArgumentError("a chunk needs its KV");
  REPRISE_RETURN_IF_ERROR(ValidateNamespaceName(ns));
  if (static_cast<int64_t>(entry->bytes()) > options_.pool_bytes) {
    return ResourceExhaustedError("a chunk of " + std::to_string(entry->bytes()) +
                                  " bytes exceeds the memory pool");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Queued before it is placed, under the pool lock: the write-back thread marks it written
  // under that lock too, so never before it is in the pool.
  const bool queued = persistence_.load(std::memory_order_relaxed) &&
                      write_back_->Enqueue(WriteJob{ns, entry});
  pool_->Add(ns, std::move(entry), queued, false, Now());
  ++ns_stats_[ns].inserts;
  EvictPoolLocked();
  return Status::Ok();
}

void ChunkStore::DropCorrupt(const CatalogRow& row, const Status& why) {
  if (why.code() == StatusCode::kNotFound) {
    // Not damage: another process evicted or cleared the chunk after we read its row (rows
    // go before files). A plain miss; the stale row goes.
    REPRISE_LOG(kInfo) << "store: chunk file " << row.file_name << " is gone; row dropped";
  } else {
    REPRISE_LOG(kWarning) << "store: chunk file " << row.file_name << " is unusable ("
                          << why.ToString() << "); dropped";
    CountCorrupt(1, false);
  }
  if (!persistence_.load(std::memory_order_relaxed)) return;  // read-only: leave it
  {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    const int64_t ids[] = {row.row_id};
    catalog_->Delete(ids).IgnoreError();
  }
  // Remove also clears an empty folder standing in the file's place (file_system.h).
  fs_->Remove(PathOf(row.file_name)).IgnoreError();
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::LoadFromFlash(const CatalogRow& row) {
  if (options_.model_fingerprint == 0 || row.model_fingerprint != options_.model_fingerprint) {
    return nullptr;  // another model's chunk (or maintenance mode)
  }
  Result<kv::ChunkEntry> read =
      ReadKvFile(*fs_, PathOf(row.file_name), options_.model_fingerprint, row.chunk_id);
  if (!read.ok()) {
    DropCorrupt(row, read.error());
    return nullptr;
  }
  return std::make_shared<const kv::ChunkEntry>(std::move(read).value());
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::Find(const std::string& ns, kv::ChunkId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<const kv::ChunkEntry> entry = pool_->Use(ns, id, Now())) {
      ++stats_.hits_pool;
      ++ns_stats_[ns].hits;
      ++ns_stats_[ns].hits_pool;
      return entry;
    }
  }
  std::optional<CatalogRow> row;
  if (catalog_) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<std::optional<CatalogRow>> found = catalog_->Find(ns, id);
    if (found.ok()) row = std::move(found).value();
  }
  return LoadIntoPool(ns, row);
}

bool ChunkStore::Contains(const std::string& ns, kv::ChunkId id, bool require_exact) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const PoolSlot* slot = pool_->Find(ns, id)) return !require_exact || slot->entry->exact;
  }
  if (!catalog_) return false;
  std::lock_guard<std::mutex> lock(catalog_mutex_);
  Result<std::optional<CatalogRow>> found = catalog_->Find(ns, id);
  return found.ok() && found->has_value() && (!require_exact || (*found)->exact);
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::LoadIntoPool(
    const std::string& ns, const std::optional<CatalogRow>& row) {
  std::shared_ptr<const kv::ChunkEntry> entry = row ? LoadFromFlash(*row) : nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!entry) {
    ++stats_.misses;
    return nullptr;
  }
  pool_->Add(ns, entry, false, true, Now());
  ++stats_.hits_flash;
  ++ns_stats_[ns].hits;
  ++ns_stats_[ns].hits_flash;
  EvictPoolLocked();
  return entry;
}

std::vector<std::shared_ptr<const kv::ChunkEntry>> ChunkStore::Children(const std::string& ns,
                                                                         kv::ChunkId parent) {
  std::vector<std::shared_ptr<const kv::ChunkEntry>> out;
  std::set<kv::ChunkId> seen;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out = pool_->Children(ns, parent);
    for (const auto& entry : out) seen.insert(entry->id);
  }
  if (catalog_) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<std::vector<CatalogRow>> rows = catalog_->Children(ns, parent);
    if (rows.ok()) {
      for (const CatalogRow& row : *rows) {
        if (seen.insert(row.chunk_id).second &&
            row.model_fingerprint == options_.model_fingerprint) {
          out.push_back(Skeleton(row));  // KV on Find()
        }
      }
    }
  }
  return out;
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::FindByContent(const std::string& ns,
                                                                kv::ContentHash content) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<const kv::ChunkEntry> entry = pool_->UseByContent(ns, content, Now())) {
      ++stats_.hits_pool;
      ++ns_stats_[ns].hits;
      ++ns_stats_[ns].hits_pool;
      return entry;
    }
  }
  std::optional<CatalogRow> row;
  if (catalog_) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<std::optional<CatalogRow>> found = catalog_->FindByContent(ns, content);
    if (found.ok()) row = std::move(found).value();
  }
  return LoadIntoPool(ns, row);
}

std::vector<kv::ChunkCandidate> ChunkStore::FindCandidates(const std::string& ns,
                                                           std::span<const int32_t> /*tokens*/,
                                                           std::string_view text,
                                                           int max_candidates) {
  std::vector<kv::ChunkCandidate> out;
  if (text.empty() || max_candidates <= 0) return out;
  // First the pool's chunks that the catalog does not hold (waiting for write-back, or kept
  // in memory only): without them a request that comes before the write-back thread has
  // caught up would miss them, and what it finds would depend on timing. They are few and
  // the newest. A chunk written meanwhile is in both searches: it is listed once. (It is
  // marked written only after its row is committed, so no chunk falls between the two.)
  std::vector<kv::ChunkId> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids = pool_->SearchUnpersistedText(ns, text, max_candidates);
  }
  std::set<kv::ChunkId> seen(ids.begin(), ids.end());
  if (catalog_ && ids.size() < static_cast<size_t>(max_candidates)) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<std::vector<int64_t>> rows = catalog_->SearchText(ns, text, max_candidates);
    if (rows.ok()) {
      for (int64_t row_id : *rows) {
        if (ids.size() == static_cast<size_t>(max_candidates)) break;
        Result<std::optional<CatalogRow>> row = catalog_->FindByRowId(row_id);
        if (row.ok() && *row && (*row)->model_fingerprint == options_.model_fingerprint &&
            seen.insert((*row)->chunk_id).second) {
          ids.push_back((*row)->chunk_id);
        }
      }
    }
  }
  double score = static_cast<double>(ids.size());
  for (kv::ChunkId id : ids) {
    out.push_back(kv::ChunkCandidate{id, score});
    score -= 1.0;  // ranked best first
  }
  return out;
}

void ChunkStore::RecordRequest(const std::string& name_space,
                               std::span<const kv::ChunkId> chunk_ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  locality_->RecordRequest(pool_->Infos(name_space, chunk_ids), Now());
  AccessJob job{name_space, std::vector<kv::ChunkId>(chunk_ids.begin(), chunk_ids.end())};
  recent_requests_.push_back(job);
  if (recent_requests_.size() > 4) recent_requests_.erase(recent_requests_.begin());
  if (persistence_.load(std::memory_order_relaxed)) write_back_->EnqueueAccess(std::move(job));
  if (options_.prefetch && options_.prefetch_in_background) write_back_->RequestIdleWork();
}

int ChunkStore::RunIdleWork() {
  if (options_.prefetch_in_background) {
    write_back_->RequestIdleWork();
    return 0;
  }
  return Prefetch();
}

int ChunkStore::PerformIdleWork() { return Prefetch(); }

int ChunkStore::Prefetch() {
  if (!options_.prefetch || !catalog_ || options_.model_fingerprint == 0) return 0;
  std::lock_guard<std::mutex> prefetch_lock(prefetch_mutex_);
  std::vector<AccessJob> recent;
  int64_t budget;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    recent = recent_requests_;
    budget = pool_->budget_bytes() - pool_->bytes();
  }
  if (budget <= 0 || recent.empty()) return 0;
  // Candidates: chunks often used with the recent requests' chunks, not in the pool.
  std::vector<std::pair<std::string, CatalogRow>> rows;
  std::map<kv::ChunkId, int64_t> co_access;  // persisted evidence, survives restarts
  {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    std::set<kv::ChunkId> seen;
    for (const AccessJob& job : recent) {
      for (size_t i = 0; i < job.ids.size() && i < 16; ++i) {
        Result<std::vector<CoAccessPartner>> partners =
            catalog_->CoAccessPartners(job.name_space, job.ids[i], 8);
        if (!partners.ok()) continue;
        for (const CoAccessPartner& p : *partners) {
          co_access[p.chunk_id] = std::max(co_access[p.chunk_id], p.count);
          if (!seen.insert(p.chunk_id).second) continue;
          Result<std::optional<CatalogRow>> row = catalog_->Find(job.name_space, p.chunk_id);
          if (row.ok() && *row) rows.emplace_back(job.name_space, std::move(**row));
        }
      }
    }
  }
  std::vector<ChunkInfo> candidates;
  std::vector<size_t> index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < rows.size(); ++i) {
      const CatalogRow& r = rows[i].second;
      if (pool_->Find(rows[i].first, r.chunk_id) != nullptr) continue;
      ChunkInfo info;
      info.id = PolicyChunkId(rows[i].first, r.chunk_id);
      info.parent = PolicyChunkId(rows[i].first, r.parent_id);
      info.content = r.content_hash;
      info.num_tokens = r.num_tokens;
      info.bytes = static_cast<int64_t>(r.file_bytes);
      info.exact = r.exact;
      candidates.push_back(info);
      index.push_back(i);
    }
  }
  PrefetchSelection chosen;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chosen = SelectPrefetch(candidates, *locality_, Now(), budget,
                            PrefetchOptions{options_.prefetch_threshold, true});
  }
  // The locality model only knows this process's requests; the catalog's co-access counts
  // carry the semantic locality of earlier runs: c / (c + 1) against the same threshold.
  for (size_t c = 0; c < candidates.size(); ++c) {
    const ChunkInfo& info = candidates[c];
    const int64_t count = co_access[rows[index[c]].second.chunk_id];
    const double score = static_cast<double>(count) / static_cast<double>(count + 1);
    if (!info.exact || score < options_.prefetch_threshold ||
        std::find(chosen.ids.begin(), chosen.ids.end(), info.id) != chosen.ids.end() ||
        chosen.bytes + info.bytes > budget) {
      continue;
    }
    chosen.ids.push_back(info.id);
    chosen.bytes += info.bytes;
  }
  int loaded = 0;
  for (uint64_t id : chosen.ids) {
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (candidates[c].id != id) continue;
      const auto& [ns, row] = rows[index[c]];
      std::shared_ptr<const kv::ChunkEntry> entry = LoadFromFlash(row);
      if (!entry) break;
      std::lock_guard<std::mutex> lock(mutex_);
      pool_->Add(ns, std::move(entry), false, true, Now());
      ++stats_.prefetched;
      ++loaded;
      break;
    }
  }
  return loaded;
}

bool ChunkStore::DisablePersistenceLocked(const Status& why) {
  if (!persistence_.exchange(false)) return false;
  stats_.persistence_enabled = false;
  stats_.persistence_error = why.ToString();
  pool_->ClearDirty();  // now ordinary, evictable entries
  write_back_->Disable();
  return true;
}

void ChunkStore::PersistBatch(std::span<const WriteJob> batch,
                              std::span<const AccessJob> accesses) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<CatalogRow> rows;
  std::vector<size_t> written;
  std::vector<size_t> skipped;  // chunks whose own file failed; the others go on
  Status failure;
  // Not while Gc() changes the lock (store_lock.h: conversions briefly release it).
  std::unique_lock<std::mutex> batch_lock(batch_mutex_);
  for (size_t i = 0; i < batch.size() && failure.ok(); ++i) {
    const kv::ChunkEntry& e = *batch[i].entry;
    const std::string name = KvFileName(batch[i].name_space, e.id);
    Result<KvFileInfo> info = WriteKvFile(*fs_, options_.dir, name, e, options_.codec,
                                          options_.model_fingerprint, batch[i].name_space);
    if (!info.ok()) {
      const StatusCode code = info.status().code();
      // A full disk or a read-only folder stops persistence; anything else is first taken
      // as this chunk's own problem (say, a folder where its file should go): skipped, its
      // obstacle removed when that is safe, and persistence stays on unless it keeps
      // happening.
      if (code == StatusCode::kResourceExhausted || code == StatusCode::kUnavailable ||
          ++consecutive_chunk_failures_ >= kMaxConsecutiveChunkFailures) {
        failure = info.error();
        break;
      }
      REPRISE_LOG(kWarning) << "store " << options_.dir << ": chunk file " << name
                            << " cannot be written (" << info.status().ToString()
                            << "); that chunk stays in memory only";
      fs_->Remove(PathOf(name)).IgnoreError();
      skipped.push_back(i);
      continue;
    }
    consecutive_chunk_failures_ = 0;
    CatalogRow row;
    row.name_space = batch[i].name_space;
    row.chunk_id = e.id;
    row.parent_id = e.parent;
    row.content_hash = e.content;
    row.exact = e.exact;
    row.tokens = e.tokens;
    row.text = e.text;
    row.model_fingerprint = options_.model_fingerprint;
    row.codec = info->codec;
    row.file_name = name;
    row.file_bytes = info->file_bytes;
    row.payload_checksum = info->payload_checksum;
    row.created_us = static_cast<int64_t>(Now() * 1e6);
    row.last_access_us = row.created_us;
    rows.push_back(std::move(row));
    written.push_back(i);
  }
  if (!rows.empty() && catalog_) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<std::vector<int64_t>> ids = catalog_->InsertBatch(rows, OnConflict::kReplace);
    if (!ids.ok()) {
      if (failure.ok()) failure = ids.error();
      written.clear();  // the files are orphans; the next open removes them
    }
  }
  batch_lock.unlock();
  if (catalog_ && failure.ok()) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    for (const AccessJob& job : accesses) {
      catalog_->AddCoAccess(job.name_space, job.ids).IgnoreError();
      std::vector<int64_t> row_ids;
      for (kv::ChunkId id : job.ids) {
        Result<std::optional<CatalogRow>> row = catalog_->Find(job.name_space, id);
        if (row.ok() && *row) row_ids.push_back((*row)->row_id);
      }
      catalog_->RecordAccess(row_ids, static_cast<int64_t>(Now() * 1e6), AccessTier::kPool)
          .IgnoreError();
    }
  }
  const double ms = MillisecondsSince(start);
  bool disabled_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i : written) pool_->MarkWritten(batch[i].name_space, batch[i].entry.get());
    for (size_t i : skipped) pool_->MarkNotWritten(batch[i].name_space, batch[i].entry.get());
    stats_.chunks_not_persisted += static_cast<int64_t>(skipped.size());
    stats_.chunks_written += static_cast<int64_t>(written.size());
    stats_.write_ms_total += ms;
    // Persistence is switched off before the batch ends (WriteBack::Flush waits for it), so
    // a Flush() that returns sees either the batch pending or its failure recorded.
    if (!failure.ok()) disabled_now = DisablePersistenceLocked(failure);
    EvictPoolLocked();
  }
  if (disabled_now) {
    REPRISE_LOG(kWarning) << "store " << options_.dir << ": cannot persist chunks ("
                          << failure.ToString()
                          << "); serving from memory without persistence";
  }
  if (!written.empty()) EvictFlash().IgnoreError();
}

Status ChunkStore::EvictFlash() {
  if (!catalog_ || !persistence_.load(std::memory_order_relaxed)) return Status::Ok();
  std::vector<CatalogRow> rows;
  {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(CatalogStats stats, catalog_->Stats());
    if (stats.file_bytes <= options_.disk_bytes) return Status::Ok();
    REPRISE_ASSIGN_OR_RETURN(rows, catalog_->ListRows(std::nullopt));
  }
  int64_t total = 0;
  std::vector<ChunkInfo> infos;
  for (const CatalogRow& r : rows) {
    ChunkInfo info;
    info.id = PolicyChunkId(r.name_space, r.chunk_id);
    info.parent = PolicyChunkId(r.name_space, r.parent_id);
    info.content = r.content_hash;
    info.num_tokens = r.num_tokens;
    info.bytes = static_cast<int64_t>(r.file_bytes);
    info.exact = r.exact;
    info.pinned = r.pinned;
    infos.push_back(info);
    total += info.bytes;
  }
  VictimSelection victims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    victims = flash_policy_->SelectVictims(infos, total - options_.disk_bytes, Now());
  }
  std::set<uint64_t> chosen(victims.ids.begin(), victims.ids.end());
  std::vector<int64_t> row_ids;
  std::vector<std::string> files;
  for (const CatalogRow& r : rows) {
    if (chosen.count(PolicyChunkId(r.name_space, r.chunk_id))) {
      row_ids.push_back(r.row_id);
      files.push_back(r.file_name);
    }
  }
  {
    // Rows first, then files: a crash in between leaves orphan files, removed at open.
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    REPRISE_RETURN_IF_ERROR(catalog_->Delete(row_ids));
  }
  for (const std::string& f : files) fs_->Remove(PathOf(f)).IgnoreError();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.flash_evictions += static_cast<int64_t>(row_ids.size());
  for (const CatalogRow& r : rows) {
    if (chosen.count(PolicyChunkId(r.name_space, r.chunk_id))) {
      pool_->MarkEvictedFromFlash(r.name_space, r.chunk_id);
    }
  }
  return Status::Ok();
}

Status ChunkStore::Flush() {
  write_back_->Flush();
  return Status::Ok();
}

StoreStats ChunkStore::Stats() {
  StoreStats s;
  int64_t unpersisted = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s = stats_;
    s.bytes_in_pool = pool_->bytes();
    unpersisted = unpersisted_corrupt_;
    s.chunks_in_pool = pool_->num_chunks();
    s.dirty_chunks = pool_->num_dirty();
  }
  if (catalog_) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    Result<CatalogStats> c = catalog_->Stats();
    if (c.ok()) {
      s.chunks = c->num_chunks;
      s.bytes_on_disk = c->file_bytes;
      s.namespaces = c->num_namespaces;
    }
    // The persisted counters (all runs), plus what this process could not persist.
    Result<int64_t> corrupt = catalog_->Counter("corrupt_dropped");
    Result<int64_t> bad_rows = catalog_->Counter("bad_rows_dropped");
    Result<int64_t> rebuilds = catalog_->Counter("catalog_rebuilds");
    if (corrupt.ok()) s.corrupt_dropped = *corrupt + unpersisted;
    if (bad_rows.ok()) s.bad_rows_dropped = std::max(s.bad_rows_dropped, *bad_rows);
    if (rebuilds.ok()) s.catalog_rebuilds = *rebuilds;
  }
  return s;
}

kv::ChunkCacheStats ChunkStore::CacheStats(const std::string& ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  kv::ChunkCacheStats s = ns_stats_[ns];
  const PoolUsage usage = pool_->Usage(ns);
  s.num_chunks = usage.num_chunks;
  s.bytes = usage.bytes;
  s.budget_bytes = options_.pool_bytes;
  s.evictions = stats_.pool_evictions;
  return s;
}

Status ChunkStore::SetPinned(const std::string& name_space, std::optional<kv::ChunkId> chunk_id,
                             bool pinned) {
  if (catalog_ && persistence_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    REPRISE_RETURN_IF_ERROR(catalog_->SetPinned(name_space, chunk_id, pinned));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pool_->SetPinned(name_space, chunk_id, pinned);
  return Status::Ok();
}

Result<GcReport> ChunkStore::Gc() {
  if (!catalog_ || !persistence_.load(std::memory_order_relaxed)) {
    return UnavailableError("the store is not writable");
  }
  REPRISE_RETURN_IF_ERROR(Flush());
  GcReport report;
  std::vector<CatalogRow> rows;
  {
    // Recovery deletes temporaries and orphans: only with the lock exclusive, i.e. when no
    // other process has the store open (chunk_store.h). Our own writer is paused meanwhile.
    std::lock_guard<std::mutex> batch_lock(batch_mutex_);
    Result<bool> exclusive = lock_.is_open() ? lock_.TryLockExclusive() : Result<bool>(false);
    Status recovered;
    if (exclusive.ok() && *exclusive) {
      std::lock_guard<std::mutex> lock(catalog_mutex_);
      Result<RecoveryReport> recovery = RecoverStore(*fs_, *catalog_, options_.dir);
      if (recovery.ok()) {
        report.rows_missing_file =
            recovery->num_rows_missing_file + recovery->num_rows_size_mismatch;
        report.orphan_files = recovery->num_orphan_files_removed + recovery->num_temp_files_removed;
        report.bytes_freed = recovery->bytes_removed;
        if (recovery->num_rows_size_mismatch > 0) {
          catalog_->AddToCounter("corrupt_dropped", recovery->num_rows_size_mismatch).IgnoreError();
        }
      } else {
        recovered = recovery.status();
      }
    } else {
      report.recovery_skipped = true;
    }
    // Back to shared (a failed or successful exclusive attempt left us without a lock).
    if (lock_.is_open()) {
      const Status shared = lock_.LockShared(10000);
      if (!shared.ok()) {
        bool disabled_now;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          disabled_now = DisablePersistenceLocked(shared);
        }
        if (disabled_now) {
          REPRISE_LOG(kWarning) << "store " << options_.dir << ": " << shared.ToString()
                                << "; serving from memory without persistence";
        }
        return shared;
      }
    }
    if (!exclusive.ok()) return exclusive.status();
    REPRISE_RETURN_IF_ERROR(recovered);
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(rows, catalog_->ListRows(std::nullopt));
  }
  for (const CatalogRow& row : rows) {
    Result<std::vector<uint8_t>> bytes = fs_->ReadFile(PathOf(row.file_name));
    Status bad;
    if (!bytes.ok()) {
      bad = bytes.error();
    } else {
      Result<KvFileHeader> header = ParseKvFileHeader(*bytes);
      if (!header.ok()) {
        bad = header.error();
      } else {
        Result<kv::ChunkEntry> parsed = ParseKvFile(*bytes, header->model_fingerprint, row.chunk_id);
        if (!parsed.ok()) bad = parsed.error();
        else if (header->model_fingerprint != row.model_fingerprint) bad = CorruptError("fingerprint differs from the catalog");
      }
    }
    if (!bad.ok()) {
      DropCorrupt(row, bad);
      if (bad.code() == StatusCode::kNotFound) {
        ++report.rows_missing_file;
      } else {
        ++report.corrupt;
        report.bytes_freed += static_cast<int64_t>(row.file_bytes);
      }
    }
  }
  const int64_t before = Stats().flash_evictions;
  REPRISE_RETURN_IF_ERROR(EvictFlash());
  report.evicted = Stats().flash_evictions - before;
  {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    catalog_->Optimize().IgnoreError();
  }
  return report;
}

Status ChunkStore::Clear(std::optional<std::string> name_space) {
  REPRISE_RETURN_IF_ERROR(Flush());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_->Clear(name_space);
  }
  if (!catalog_) return Status::Ok();
  if (!persistence_.load(std::memory_order_relaxed)) {
    return UnavailableError("the store is not writable");
  }
  std::vector<CatalogRow> rows;
  {
    std::lock_guard<std::mutex> lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(rows, catalog_->ListRows(
                                       name_space ? std::optional<std::string_view>(*name_space)
                                                  : std::nullopt));
    std::vector<int64_t> ids;
    for (const CatalogRow& r : rows) ids.push_back(r.row_id);
    REPRISE_RETURN_IF_ERROR(catalog_->Delete(ids));
  }
  for (const CatalogRow& r : rows) fs_->Remove(PathOf(r.file_name)).IgnoreError();
  return Status::Ok();
}

Result<std::vector<CatalogRow>> ChunkStore::List(std::optional<std::string> name_space) {
  if (!catalog_) return std::vector<CatalogRow>();
  std::lock_guard<std::mutex> lock(catalog_mutex_);
  if (name_space) return catalog_->ListRows(std::string_view(*name_space));
  return catalog_->ListRows(std::nullopt);
}

Result<std::vector<std::string>> ChunkStore::Namespaces() {
  if (!catalog_) return std::vector<std::string>();
  std::lock_guard<std::mutex> lock(catalog_mutex_);
  return catalog_->ListNamespaces();
}

}  // namespace reprise::store
