#include "store/chunk_store.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "base/logging.h"
#include "store/kv_file.h"
#include "store/namespace_name.h"
#include "store/prefetch_policy.h"
#include "store/redis_tier.h"

namespace reprise::store {
namespace {

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
  std::optional<kv::ChunkLink> LinkOf(kv::ChunkId id) override { return store_->LinkOf(ns_, id); }
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(kv::ChunkId parent) override {
    return store_->Children(ns_, parent);
  }
  std::shared_ptr<const kv::ChunkEntry> FindByContent(kv::ContentHash content) override {
    return store_->FindByContent(ns_, content);
  }
  std::shared_ptr<const kv::ChunkEntry> Peek(kv::ChunkId id) override {
    return store_->Peek(ns_, id);
  }
  std::shared_ptr<const kv::ChunkEntry> PeekByContent(kv::ContentHash content) override {
    return store_->PeekByContent(ns_, content);
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
  e->exact = row.holds_exact_kv();  // KV in a lossy codec is never exact
  e->provenance = row.provenance;
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
  if (options.admit_after_sightings < 1 || options.admit_after_sightings > 1000) {
    return InvalidArgumentError("admission needs 1 to 1000 sightings, not " +
                                std::to_string(options.admit_after_sightings));
  }
  if (options.max_sightings < 2) return InvalidArgumentError("max_sightings must be >= 2");
  REPRISE_RETURN_IF_ERROR(ValidateCostModel(options.costs));
  std::unique_ptr<ChunkStore> s(new ChunkStore(options));
  REPRISE_ASSIGN_OR_RETURN(s->flash_, FlashTier::Open(options));
  // Maintenance opens (no fingerprint, read-only) never load chunks: no remote tier.
  if (!options.remote.url.empty() && options.model_fingerprint != 0 && !options.read_only) {
    REPRISE_ASSIGN_OR_RETURN(s->remote_, RedisTier::Create(options.remote));
  }
  REPRISE_ASSIGN_OR_RETURN(LocalityModel locality, LocalityModel::Create({}));
  MutexLock lock(s->mutex_);
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
    s->pool_ =
        std::make_unique<MemoryPool>(options.pool_bytes, std::make_unique<LruEvictionPolicy>());
    s->flash_policy_ = std::make_unique<LruEvictionPolicy>();
  }
  s->sightings_ = std::make_unique<SightingCounter>(static_cast<size_t>(options.max_sightings));
  if (s->AdmissionActive()) {
    for (const SightingRow& row : s->flash_->RecentSightings(options.max_sightings)) {
      s->sightings_->Restore(row);
    }
  }
  WriteBackSink* sink = s.get();  // a private base: converted here, inside the class
  s->write_back_ = std::make_unique<WriteBack>(sink, options.writeback_batch);
  return s;
}

ChunkStore::~ChunkStore() {
  if (write_back_ != nullptr) EnqueueSightings();  // null when Open failed
  // Finishes the queue while the rest of the store is still here.
  write_back_.reset();
}

double ChunkStore::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::unique_ptr<kv::ChunkCache> ChunkStore::OpenNamespace(std::string name_space) {
  return std::make_unique<NamespaceCache>(this, std::move(name_space));
}

Result<std::unique_ptr<kv::ChunkCache>> ChunkStore::OpenValidNamespace(std::string name_space) {
  REPRISE_RETURN_IF_ERROR(ValidateNamespaceName(name_space));
  return OpenNamespace(std::move(name_space));
}

void ChunkStore::EvictPoolLocked() {
  stats_.pool_evictions += pool_->EvictOverBudget(Now(), &stats_.dropped_unadmitted);
}

void ChunkStore::EnqueueSightings() {
  MutexLock lock(mutex_);
  std::vector<SightingRow> sightings = sightings_->TakeChanged();
  if (!sightings.empty() && flash_->is_persistent()) {
    write_back_->EnqueueAccess(AccessJob{"", {}, std::move(sightings)});
  }
}

bool ChunkStore::AdmissionActive() const { return options_.admit_after_sightings > 1; }

int64_t ChunkStore::NowUs() const { return static_cast<int64_t>(Now() * 1e6); }

void ChunkStore::AdmitLocked(const std::string& ns, kv::ChunkId id) {
  std::shared_ptr<const kv::ChunkEntry> entry = pool_->Admit(ns, id);
  if (!entry) return;
  if (write_back_->Enqueue(WriteJob{ns, entry})) {
    ++stats_.admitted_on_recurrence;
  } else {
    pool_->MarkNotWritten(ns, entry.get());  // persistence went off meanwhile
  }
}

void ChunkStore::SightInPoolLocked(const std::string& ns, const kv::ChunkEntry& entry) {
  const PoolSlot* slot = pool_->Find(ns, entry.id);
  if (slot == nullptr || !slot->awaiting_admission) return;
  if (sightings_->Sight(ns, entry.content, NowUs()) >= options_.admit_after_sightings) {
    AdmitLocked(ns, entry.id);
  }
}

Status ChunkStore::Insert(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry) {
  return InsertChunk(ns, std::move(entry), /*from_remote=*/false);
}

Status ChunkStore::InsertChunk(const std::string& ns, std::shared_ptr<const kv::ChunkEntry> entry,
                               bool from_remote) {
  if (!entry || !entry->kv) return InvalidArgumentError("a chunk needs its KV");
  REPRISE_RETURN_IF_ERROR(ValidateNamespaceName(ns));
  if (static_cast<int64_t>(entry->bytes()) > options_.pool_bytes) {
    return ResourceExhaustedError("a chunk of " + std::to_string(entry->bytes()) +
                                  " bytes exceeds the memory pool");
  }
  // Exact KV is never replaced by approximate KV, and what flash keeps as well as this store
  // can is not written again. The catalog is read before the pool lock; the pool is decided
  // under it; for flash, the write-back's upsert decides for good (FlashTier::WriteBatch), as
  // other processes may write the same chunk meanwhile.
  const std::optional<CatalogRow> row = flash_->Find(ns, entry->id);
  const bool flash_exact = row && row->holds_exact_kv();
  MutexLock lock(mutex_);
  const PoolSlot* slot = pool_->Find(ns, entry->id);
  if ((flash_exact || (slot != nullptr && slot->entry->exact)) && !entry->exact) {
    ++stats_.inexact_kept_out;
    return Status::Ok();
  }
  const bool persistent = flash_->is_persistent();
  // The same exact KV is in memory: nothing to do, unless it still has to reach flash (its
  // write failed, or it awaits admission: this insert is a sighting).
  if (slot != nullptr && slot->entry->exact && (!persistent || slot->persisted || slot->dirty)) {
    return Status::Ok();
  }
  // The file writing it would make: flash holds it already.
  const bool on_flash =
      flash_exact || (row && row->exact && entry->exact &&
                      row->codec == EffectiveKvCodec(options_.codec, entry->kv->head_dim));
  if (on_flash) {
    pool_->Add(ns, std::move(entry), false, true, Now());
    ++ns_stats_[ns].inserts;
    EvictPoolLocked();
    return Status::Ok();
  }
  // Admission control: an undeclared chunk waits in memory until its content recurs.
  bool admitted = true;
  if (persistent && AdmissionActive() && !entry->declared_reusable) {
    admitted = sightings_->Sight(ns, entry->content, NowUs()) >= options_.admit_after_sightings;
  }
  // Queued before it is placed, under the pool lock: the write-back thread marks it written
  // under that lock too, so never before it is in the pool.
  const bool queued =
      persistent && admitted && write_back_->Enqueue(WriteJob{ns, entry, from_remote});
  pool_->Add(ns, std::move(entry), queued, false, Now(), persistent && !admitted);
  ++ns_stats_[ns].inserts;
  EvictPoolLocked();
  return Status::Ok();
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::Find(const std::string& ns, kv::ChunkId id) {
  {
    MutexLock lock(mutex_);
    if (std::shared_ptr<const kv::ChunkEntry> entry = pool_->Use(ns, id, Now())) {
      ++stats_.hits_pool;
      ++ns_stats_[ns].hits;
      ++ns_stats_[ns].hits_pool;
      SightInPoolLocked(ns, *entry);
      return entry;
    }
  }
  std::shared_ptr<const kv::ChunkEntry> entry = LoadIntoPool(ns, flash_->Find(ns, id));
  if (!entry) entry = FetchRemote(ns, id, std::nullopt);
  return entry;
}

bool ChunkStore::Contains(const std::string& ns, kv::ChunkId id, bool require_exact) {
  {
    MutexLock lock(mutex_);
    const PoolSlot* slot = pool_->Find(ns, id);
    if (slot != nullptr && (!require_exact || slot->entry->exact)) return true;
  }
  const std::optional<CatalogRow> row = flash_->Find(ns, id);
  return row.has_value() && (!require_exact || row->holds_exact_kv());
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::Peek(const std::string& ns, kv::ChunkId id) {
  {
    MutexLock lock(mutex_);
    if (const PoolSlot* slot = pool_->Find(ns, id)) return slot->entry;
  }
  const std::optional<CatalogRow> row = flash_->Find(ns, id);
  // The remote tier has no index to peek at: what it holds is fetched (and kept) now.
  return row ? Skeleton(*row) : FetchRemote(ns, id, std::nullopt);
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::PeekByContent(const std::string& ns,
                                                                kv::ContentHash content) {
  {
    MutexLock lock(mutex_);
    if (const PoolSlot* slot = pool_->FindByContent(ns, content)) return slot->entry;
  }
  const std::optional<CatalogRow> row = flash_->FindByContent(ns, content);
  return row ? Skeleton(*row) : FetchRemoteByContent(ns, content);
}

std::optional<kv::ChunkLink> ChunkStore::LinkOf(const std::string& ns, kv::ChunkId id) {
  {
    MutexLock lock(mutex_);
    if (const PoolSlot* slot = pool_->Find(ns, id)) {
      return kv::ChunkLink{slot->entry->parent, slot->entry->content};
    }
  }
  const std::optional<CatalogRow> row = flash_->Find(ns, id);
  if (!row) return std::nullopt;
  return kv::ChunkLink{row->parent_id, row->content_hash};
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::LoadIntoPool(
    const std::string& ns, const std::optional<CatalogRow>& row) {
  std::shared_ptr<const kv::ChunkEntry> entry = row ? flash_->Load(*row) : nullptr;
  MutexLock lock(mutex_);
  if (!entry) {
    ++stats_.misses;
    return nullptr;
  }
  if (const PoolSlot* slot = pool_->Find(ns, entry->id);
      slot != nullptr && slot->entry->exact && !entry->exact) {
    return slot->entry;  // exact KV came into memory meanwhile: it stays, and is the one used
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
    MutexLock lock(mutex_);
    out = pool_->Children(ns, parent);
    for (const auto& entry : out) seen.insert(entry->id);
  }
  for (const CatalogRow& row : flash_->Children(ns, parent)) {
    if (seen.insert(row.chunk_id).second) out.push_back(Skeleton(row));  // KV on Find()
  }
  return out;
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::FindByContent(const std::string& ns,
                                                                kv::ContentHash content) {
  {
    MutexLock lock(mutex_);
    if (std::shared_ptr<const kv::ChunkEntry> entry = pool_->UseByContent(ns, content, Now())) {
      ++stats_.hits_pool;
      ++ns_stats_[ns].hits;
      ++ns_stats_[ns].hits_pool;
      SightInPoolLocked(ns, *entry);
      return entry;
    }
  }
  std::shared_ptr<const kv::ChunkEntry> entry =
      LoadIntoPool(ns, flash_->FindByContent(ns, content));
  if (!entry) entry = FetchRemoteByContent(ns, content);
  return entry;
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::FetchRemote(
    const std::string& ns, kv::ChunkId id, std::optional<kv::ContentHash> content) {
  if (!remote_) return nullptr;
  const Result<std::optional<std::string>> value =
      remote_->Get(RemoteChunkKey(ns, options_.model_fingerprint, id));
  if (!value.ok() || !value->has_value()) {
    MutexLock lock(mutex_);
    ++stats_.remote_misses;
    return nullptr;
  }
  Result<kv::ChunkEntry> checked = CheckRemoteValue(ns, id, content, **value);
  if (!checked.ok()) {
    REPRISE_LOG(kWarning) << "store: the remote value of chunk " << id << " refused ("
                          << checked.status().ToString() << "); a miss";
    MutexLock lock(mutex_);
    ++stats_.remote_bad_values;
    return nullptr;
  }
  auto entry = std::make_shared<const kv::ChunkEntry>(std::move(checked).value());
  {
    MutexLock lock(mutex_);
    ++stats_.remote_hits;
    ++ns_stats_[ns].hits;
  }
  // Kept in the pool and written to flash (under admission) as an insert is; one too large
  // for the pool is used this once.
  InsertChunk(ns, entry, /*from_remote=*/true).IgnoreError();
  return entry;
}

std::shared_ptr<const kv::ChunkEntry> ChunkStore::FetchRemoteByContent(const std::string& ns,
                                                                       kv::ContentHash content) {
  if (!remote_) return nullptr;
  const Result<std::optional<std::string>> value =
      remote_->Get(RemoteContentKey(ns, options_.model_fingerprint, content));
  if (!value.ok() || !value->has_value()) {
    MutexLock lock(mutex_);
    ++stats_.remote_misses;
    return nullptr;
  }
  const std::optional<kv::ChunkId> id = DecodeRemoteChunkId(**value);
  if (!id) {
    MutexLock lock(mutex_);
    ++stats_.remote_bad_values;
    return nullptr;
  }
  return FetchRemote(ns, *id, content);
}

Result<kv::ChunkEntry> ChunkStore::CheckRemoteValue(const std::string& ns, kv::ChunkId id,
                                                    std::optional<kv::ContentHash> content,
                                                    const std::string& value) const {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(value.data()),
                                       value.size());
  REPRISE_ASSIGN_OR_RETURN(const KvFileMetadata meta, ParseKvFileMetadata(bytes));
  if (!meta.has_namespace || meta.name_space != ns) {
    return CorruptError("remote value: a chunk of another namespace");
  }
  REPRISE_ASSIGN_OR_RETURN(kv::ChunkEntry entry,
                           ParseKvFile(bytes, options_.model_fingerprint, id));
  if (content && entry.content != *content) {
    return CorruptError("remote value: a chunk of other content");
  }
  if (entry.content != kv::HashTokens(options_.model_fingerprint, entry.tokens) ||
      entry.id != kv::ChainId(entry.parent, entry.content)) {
    return CorruptError("remote value: its ids are not those of its tokens");
  }
  if (entry.exact && entry.provenance.origin == kv::KvOrigin::kBlended) {
    return CorruptError("remote value: blended KV marked exact");
  }
  const kv::ChunkKv& kv = *entry.kv;
  const auto differs = [](int expected, int got) { return expected > 0 && expected != got; };
  if (kv.num_tokens != static_cast<int>(entry.tokens.size()) ||
      differs(options_.kv_num_layers, kv.num_layers) ||
      differs(options_.kv_num_kv_heads, kv.num_kv_heads) ||
      differs(options_.kv_head_dim, kv.head_dim)) {
    return CorruptError("remote value: another KV shape");
  }
  return entry;
}

void ChunkStore::SendToRemote(std::span<const WriteJob> batch, std::span<const size_t> written) {
  if (!remote_) return;
  int64_t sent = 0, failed = 0;
  for (const size_t i : written) {
    const WriteJob& job = batch[i];
    if (job.from_remote) continue;
    const kv::ChunkEntry& e = *job.entry;
    Result<std::vector<uint8_t>> file =
        SerializeKvFile(e, options_.codec, options_.model_fingerprint, job.name_space);
    if (!file.ok()) {
      ++failed;
      continue;
    }
    // Approximate KV never replaces a value there (it may be another server's exact KV).
    const bool holds_exact =
        HoldsExactKv(e.exact, EffectiveKvCodec(options_.codec, e.kv->head_dim));
    const std::string id = EncodeRemoteChunkId(e.id);
    const RemotePut puts[] = {
        {RemoteChunkKey(job.name_space, options_.model_fingerprint, e.id),
         std::string_view(reinterpret_cast<const char*>(file->data()), file->size()),
         !holds_exact},
        {RemoteContentKey(job.name_space, options_.model_fingerprint, e.content), id,
         !holds_exact}};
    if (remote_->Put(puts).ok()) {
      ++sent;
    } else {
      ++failed;
    }
  }
  MutexLock lock(mutex_);
  stats_.remote_chunks_sent += sent;
  stats_.remote_send_failures += failed;
}

std::vector<kv::ChunkCandidate> ChunkStore::FindCandidates(const std::string& ns,
                                                           std::span<const int32_t> tokens,
                                                           std::string_view /*text*/,
                                                           int max_candidates) {
  std::vector<kv::ChunkCandidate> out;
  if (max_candidates <= 0) return out;
  // The pool's chunks that the catalog does not hold (waiting for write-back, or kept in
  // memory only) and the catalog's rows, ranked together by shared span fingerprints: without
  // the first, a request that comes before the write-back thread has caught up would miss
  // them, and what it finds would depend on timing. A chunk written meanwhile is in both
  // searches: it is listed once. (It is marked written only after its row is committed, so
  // no chunk falls between the two.) Catalog rows come as skeletons (tokens, no KV) unless
  // the pool holds them: the planner loads only those it takes a span from.
  std::set<kv::ChunkId> seen;
  {
    MutexLock lock(mutex_);
    for (const kv::SpanCandidate& c : pool_->SearchUnpersistedSpans(ns, tokens, max_candidates)) {
      const PoolSlot* slot = pool_->Find(ns, c.chunk_id);
      if (slot == nullptr || !seen.insert(c.chunk_id).second) continue;
      out.push_back(kv::ChunkCandidate{c.chunk_id, static_cast<double>(c.num_shared), slot->entry});
    }
  }
  for (auto& [row, num_shared] : flash_->SearchSpans(ns, tokens, max_candidates)) {
    if (!seen.insert(row.chunk_id).second) continue;
    std::shared_ptr<const kv::ChunkEntry> entry;
    {
      MutexLock lock(mutex_);
      if (const PoolSlot* slot = pool_->Find(ns, row.chunk_id)) entry = slot->entry;
    }
    if (!entry) entry = Skeleton(row);
    out.push_back(kv::ChunkCandidate{row.chunk_id, static_cast<double>(num_shared), entry});
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const kv::ChunkCandidate& a, const kv::ChunkCandidate& b) { return a.score > b.score; });
  if (out.size() > static_cast<size_t>(max_candidates))
    out.resize(static_cast<size_t>(max_candidates));
  return out;
}

void ChunkStore::RecordRequest(const std::string& name_space,
                               std::span<const kv::ChunkId> chunk_ids) {
  MutexLock lock(mutex_);
  locality_->RecordRequest(pool_->Infos(name_space, chunk_ids), Now());
  AccessJob job{name_space, std::vector<kv::ChunkId>(chunk_ids.begin(), chunk_ids.end())};
  recent_requests_.push_back(job);
  if (recent_requests_.size() > 4) recent_requests_.erase(recent_requests_.begin());
  job.sightings = sightings_->TakeChanged();
  if (flash_->is_persistent()) write_back_->EnqueueAccess(std::move(job));
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
  if (!options_.prefetch || !flash_->has_catalog() || options_.model_fingerprint == 0) return 0;
  MutexLock prefetch_lock(prefetch_mutex_);
  std::vector<AccessJob> recent;
  int64_t budget;
  {
    MutexLock lock(mutex_);
    recent = recent_requests_;
    budget = pool_->budget_bytes() - pool_->bytes();
  }
  if (budget <= 0 || recent.empty()) return 0;
  // Candidates: chunks often used with the recent requests' chunks, not in the pool; their
  // co-access counts are persisted evidence that survives restarts.
  const std::vector<CoAccessedRow> rows = flash_->CoAccessed(recent);
  std::vector<ChunkInfo> candidates;
  std::vector<size_t> index;
  PrefetchSelection chosen;
  {
    MutexLock lock(mutex_);
    for (size_t i = 0; i < rows.size(); ++i) {
      const CatalogRow& r = rows[i].row;
      if (pool_->Find(rows[i].name_space, r.chunk_id) != nullptr) continue;
      ChunkInfo info;
      info.id = PolicyChunkId(rows[i].name_space, r.chunk_id);
      info.parent = PolicyChunkId(rows[i].name_space, r.parent_id);
      info.content = r.content_hash;
      info.num_tokens = r.num_tokens;
      info.bytes = static_cast<int64_t>(r.file_bytes);
      info.exact = r.exact;
      candidates.push_back(info);
      index.push_back(i);
    }
    chosen = SelectPrefetch(candidates, *locality_, Now(), budget,
                            PrefetchOptions{options_.prefetch_threshold, true});
  }
  // The locality model only knows this process's requests; the catalog's co-access counts
  // carry the semantic locality of earlier runs: c / (c + 1) against the same threshold.
  for (size_t c = 0; c < candidates.size(); ++c) {
    const ChunkInfo& info = candidates[c];
    const int64_t count = rows[index[c]].count;
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
      const CoAccessedRow& candidate = rows[index[c]];
      std::shared_ptr<const kv::ChunkEntry> entry = flash_->Load(candidate.row);
      if (!entry) break;
      MutexLock lock(mutex_);
      pool_->Add(candidate.name_space, std::move(entry), false, true, Now());
      ++stats_.prefetched;
      ++loaded;
      break;
    }
  }
  return loaded;
}

bool ChunkStore::DisablePersistenceLocked(const Status& why) {
  if (!flash_->DisablePersistence(why)) return false;
  StopWritingBackLocked();
  return true;
}

void ChunkStore::StopWritingBackLocked() {
  pool_->ClearDirty();  // now ordinary, evictable entries
  write_back_->Disable();
}

void ChunkStore::PersistBatch(std::span<const WriteJob> batch,
                              std::span<const AccessJob> accesses) {
  const auto start = std::chrono::steady_clock::now();
  FlashBatchResult result = flash_->WriteBatch(batch);
  if (result.failure.ok()) flash_->RecordAccesses(accesses);
  const double ms = MillisecondsSince(start);
  {
    MutexLock lock(mutex_);
    for (size_t i : result.written) pool_->MarkWritten(batch[i].name_space, batch[i].entry.get());
    for (size_t i : result.skipped) {
      pool_->MarkNotWritten(batch[i].name_space, batch[i].entry.get());
    }
    // Flash holds exact KV of these: memory drops its approximate copy, so that lookups find
    // the exact one.
    for (size_t i : result.superseded) {
      const std::string& ns = batch[i].name_space;
      pool_->MarkNotWritten(ns, batch[i].entry.get());
      const PoolSlot* slot = pool_->Find(ns, batch[i].entry->id);
      if (slot != nullptr && slot->entry == batch[i].entry) pool_->Remove(ns, batch[i].entry->id);
      ++stats_.inexact_kept_out;
    }
    stats_.chunks_not_persisted += static_cast<int64_t>(result.skipped.size());
    stats_.chunks_written += static_cast<int64_t>(result.written.size());
    stats_.write_ms_total += ms;
    // Persistence is switched off before the batch ends (WriteBack::Flush waits for it), so
    // a Flush() that returns sees either the batch pending or its failure recorded.
    if (!result.failure.ok()) DisablePersistenceLocked(result.failure);
    EvictPoolLocked();
  }
  SendToRemote(batch, result.written);
  if (!result.written.empty()) EvictFlash().IgnoreError();
}

VictimSelection ChunkStore::ChooseFlashVictims(std::span<const ChunkInfo> chunks,
                                               int64_t bytes_to_free) {
  MutexLock lock(mutex_);
  return flash_policy_->SelectVictims(chunks, bytes_to_free, Now());
}

Status ChunkStore::EvictFlash() {
  REPRISE_ASSIGN_OR_RETURN(const std::vector<PoolKey> evicted,
                           flash_->EvictOverBudget([this](auto chunks, int64_t bytes) {
                             return ChooseFlashVictims(chunks, bytes);
                           }));
  MutexLock lock(mutex_);
  for (const PoolKey& key : evicted) pool_->MarkEvictedFromFlash(key.name_space, key.value);
  return Status::Ok();
}

Status ChunkStore::Flush() {
  EnqueueSightings();
  write_back_->Flush();
  return Status::Ok();
}

StoreStats ChunkStore::Stats() {
  StoreStats s;
  {
    MutexLock lock(mutex_);
    s = stats_;
    s.bytes_in_pool = pool_->bytes();
    s.chunks_in_pool = pool_->num_chunks();
    s.dirty_chunks = pool_->num_dirty();
    s.chunks_awaiting_admission = pool_->num_awaiting_admission();
  }
  flash_->FillStats(s);
  if (remote_) {
    const RemoteTierStats remote = remote_->Stats();
    s.remote_server = remote_->Describe();
    s.remote_connected = remote.connected;
    s.remote_unavailable = remote.unavailable;
    s.remote_bytes_read = remote.bytes_read;
    s.remote_bytes_written = remote.bytes_written;
  }
  return s;
}

kv::ChunkCacheStats ChunkStore::CacheStats(const std::string& ns) {
  MutexLock lock(mutex_);
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
  if (pinned) {
    // A pinned chunk is admitted: written before its catalog row is pinned.
    bool admitted = false;
    {
      MutexLock lock(mutex_);
      const std::vector<kv::ChunkId> waiting =
          chunk_id ? std::vector<kv::ChunkId>{*chunk_id} : pool_->AwaitingAdmission(name_space);
      for (kv::ChunkId id : waiting) {
        const PoolSlot* slot = pool_->Find(name_space, id);
        if (slot == nullptr || !slot->awaiting_admission) continue;
        AdmitLocked(name_space, id);
        admitted = true;
      }
    }
    if (admitted) write_back_->Flush();
  }
  REPRISE_RETURN_IF_ERROR(flash_->SetPinned(name_space, chunk_id, pinned));
  MutexLock lock(mutex_);
  pool_->SetPinned(name_space, chunk_id, pinned);
  return Status::Ok();
}

Result<GcReport> ChunkStore::Gc(const ProgressCallback& progress) {
  if (!flash_->has_catalog() || !flash_->is_persistent()) {
    return UnavailableError("the store is not writable");
  }
  REPRISE_RETURN_IF_ERROR(Flush());
  std::vector<PoolKey> evicted;
  Result<GcReport> report =
      flash_->Gc([this](auto chunks, int64_t bytes) { return ChooseFlashVictims(chunks, bytes); },
                 &evicted, progress);
  MutexLock lock(mutex_);
  for (const PoolKey& key : evicted) pool_->MarkEvictedFromFlash(key.name_space, key.value);
  // Gc loses persistence when it cannot take the lock back: nothing more to write.
  if (!flash_->is_persistent()) StopWritingBackLocked();
  return report;
}

Status ChunkStore::Clear(std::optional<std::string> name_space) {
  REPRISE_RETURN_IF_ERROR(Flush());
  {
    MutexLock lock(mutex_);
    pool_->Clear(name_space);
  }
  return flash_->Clear(name_space);
}

Result<std::vector<CatalogRow>> ChunkStore::List(std::optional<std::string> name_space) {
  return flash_->List(name_space);
}

Result<std::vector<std::string>> ChunkStore::Namespaces() { return flash_->Namespaces(); }

}  // namespace reprise::store
