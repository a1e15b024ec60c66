#include "store/flash_tier.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>

#include "base/logging.h"
#include "kv/span_fingerprints.h"
#include "store/catalog_rebuild.h"
#include "store/kv_file.h"
#include "store/recovery.h"
#include "store/store_dir.h"

namespace reprise::store {
namespace {

// Chunk files failing one after another (not for a full disk or a read-only folder, which
// stop persistence at once) before the writer concludes that the folder is the problem.
constexpr int kMaxConsecutiveChunkFailures = 8;

}  // namespace

Result<std::unique_ptr<FlashTier>> FlashTier::Open(const StoreOptions& options) {
  std::unique_ptr<FlashTier> s(new FlashTier(options));
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
      MutexLock lock(s->stats_mutex_);
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
      MutexLock lock(s->stats_mutex_);
      s->stats_.catalog_error = catalog.status().ToString();
      REPRISE_LOG(kWarning) << "store " << options.dir
                            << ": catalog unusable: " << catalog.status().ToString();
    }
    // No catalog at all: a memory-only store.
  }
  if (writable && exclusive) {
    Result<RecoveryReport> report = [&] {
      MutexLock lock(s->catalog_mutex_);
      return RecoverStore(*s->fs_, *s->catalog_, options.dir);
    }();
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
    MutexLock lock(s->stats_mutex_);
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
  if (!writable) {
    s->persistent_.store(false, std::memory_order_relaxed);
    MutexLock lock(s->stats_mutex_);
    s->stats_.persistence_enabled = false;
    s->stats_.persistence_error = options.read_only
                                      ? "opened read-only"
                                      : "the store cannot be written (" + why_read_only.ToString() +
                                            "); serving without persistence";
    if (!options.read_only)
      REPRISE_LOG(kWarning) << "store " << options.dir << ": " << s->stats_.persistence_error;
  }
  return s;
}

FlashTier::~FlashTier() = default;

double FlashTier::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool FlashTier::DisablePersistence(const Status& why) {
  {
    MutexLock lock(stats_mutex_);
    if (!persistent_.exchange(false)) return false;
    stats_.persistence_enabled = false;
    stats_.persistence_error = why.ToString();
  }
  REPRISE_LOG(kWarning) << "store " << options_.dir << ": cannot persist chunks (" << why.ToString()
                        << "); serving from memory without persistence";
  return true;
}

Status FlashTier::OpenWritableCatalog(bool exclusive) {
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
      MutexLock lock(catalog_mutex_);
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
  CatalogRebuildReport report;
  {
    MutexLock lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(
        report, RebuildCatalog(*fs_, *catalog_, dir, static_cast<int64_t>(Now() * 1e6)));
    catalog_->AddToCounter("catalog_rebuilds", 1).IgnoreError();
  }
  {
    MutexLock lock(stats_mutex_);
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

void FlashTier::CountCorrupt(int64_t n, bool bad_rows) {
  bool persisted = false;
  if (catalog_ && persistent_.load(std::memory_order_relaxed)) {
    MutexLock lock(catalog_mutex_);
    persisted = catalog_->AddToCounter("corrupt_dropped", n).ok();
    if (persisted && bad_rows) catalog_->AddToCounter("bad_rows_dropped", n).IgnoreError();
  }
  MutexLock lock(stats_mutex_);
  stats_.corrupt_dropped += n;
  if (bad_rows) stats_.bad_rows_dropped += n;
  if (!persisted) unpersisted_corrupt_ += n;
}

void FlashTier::DropBadRow(const CatalogRow& row, const Status& why) {
  if (why.code() == StatusCode::kNotFound) {
    // Not damage: another process evicted or cleared the chunk after we read its row (rows
    // go before files). A plain miss; the stale row goes.
    REPRISE_LOG(kInfo) << "store: chunk file " << row.file_name << " is gone; row dropped";
  } else {
    REPRISE_LOG(kWarning) << "store: chunk file " << row.file_name << " is unusable ("
                          << why.ToString() << "); dropped";
    CountCorrupt(1, false);
  }
  if (!persistent_.load(std::memory_order_relaxed)) return;  // read-only: leave it
  {
    MutexLock lock(catalog_mutex_);
    const int64_t ids[] = {row.row_id};
    catalog_->Delete(ids).IgnoreError();
  }
  // Remove also clears an empty folder standing in the file's place (file_system.h).
  fs_->Remove(PathOf(row.file_name)).IgnoreError();
}

std::optional<CatalogRow> FlashTier::Find(const std::string& name_space, kv::ChunkId id) {
  if (!catalog_) return std::nullopt;
  MutexLock lock(catalog_mutex_);
  Result<std::optional<CatalogRow>> found = catalog_->Find(name_space, id);
  return found.ok() ? std::move(found).value() : std::nullopt;
}

std::optional<CatalogRow> FlashTier::FindByContent(const std::string& name_space,
                                                   kv::ContentHash content) {
  if (!catalog_) return std::nullopt;
  MutexLock lock(catalog_mutex_);
  Result<std::optional<CatalogRow>> found = catalog_->FindByContent(name_space, content);
  return found.ok() ? std::move(found).value() : std::nullopt;
}

std::vector<CatalogRow> FlashTier::Children(const std::string& name_space, kv::ChunkId parent) {
  std::vector<CatalogRow> out;
  if (!catalog_) return out;
  MutexLock lock(catalog_mutex_);
  Result<std::vector<CatalogRow>> rows = catalog_->Children(name_space, parent);
  if (!rows.ok()) return out;
  for (CatalogRow& row : *rows) {
    if (row.model_fingerprint == options_.model_fingerprint) out.push_back(std::move(row));
  }
  return out;
}

std::vector<std::pair<CatalogRow, int>> FlashTier::SearchSpans(const std::string& name_space,
                                                               std::span<const int32_t> tokens,
                                                               int max_results) {
  // A fingerprint held by more rows than this is boilerplate (a template's markers).
  constexpr int kMaxRowsPerFingerprint = 256;
  std::vector<std::pair<CatalogRow, int>> out;
  if (!catalog_ || max_results <= 0) return out;
  const std::vector<uint64_t> fingerprints = kv::SpanFingerprints(tokens);
  if (fingerprints.empty()) return out;
  MutexLock lock(catalog_mutex_);
  Result<std::vector<SpanMatch>> matches =
      catalog_->SearchSpans(name_space, fingerprints, kMaxRowsPerFingerprint, max_results);
  if (!matches.ok()) return out;
  for (const SpanMatch& match : *matches) {
    Result<std::optional<CatalogRow>> row = catalog_->FindByRowId(match.row_id);
    if (row.ok() && *row && (*row)->model_fingerprint == options_.model_fingerprint) {
      out.emplace_back(std::move(**row), match.num_shared);
    }
  }
  return out;
}

std::vector<CoAccessedRow> FlashTier::CoAccessed(std::span<const AccessJob> recent) {
  std::vector<CoAccessedRow> out;
  if (!catalog_) return out;
  MutexLock lock(catalog_mutex_);
  std::map<std::pair<std::string, kv::ChunkId>, size_t> index_of;
  for (const AccessJob& job : recent) {
    for (size_t i = 0; i < job.ids.size() && i < 16; ++i) {
      Result<std::vector<CoAccessPartner>> partners =
          catalog_->CoAccessPartners(job.name_space, job.ids[i], 8);
      if (!partners.ok()) continue;
      for (const CoAccessPartner& p : *partners) {
        auto [it, is_new] = index_of.try_emplace({job.name_space, p.chunk_id}, out.size());
        if (!is_new) {
          if (it->second < out.size()) {
            out[it->second].count = std::max(out[it->second].count, p.count);
          }
          continue;
        }
        Result<std::optional<CatalogRow>> row = catalog_->Find(job.name_space, p.chunk_id);
        if (row.ok() && *row) {
          out.push_back(CoAccessedRow{job.name_space, std::move(**row), p.count});
        } else {
          it->second = SIZE_MAX;  // no row: not a candidate
        }
      }
    }
  }
  return out;
}

std::shared_ptr<const kv::ChunkEntry> FlashTier::Load(const CatalogRow& row) {
  if (options_.model_fingerprint == 0 || row.model_fingerprint != options_.model_fingerprint) {
    return nullptr;  // another model's chunk (or maintenance mode)
  }
  Result<kv::ChunkEntry> read =
      ReadKvFile(*fs_, PathOf(row.file_name), options_.model_fingerprint, row.chunk_id);
  if (!read.ok()) {
    DropBadRow(row, read.error());
    return nullptr;
  }
  return std::make_shared<const kv::ChunkEntry>(std::move(read).value());
}

FlashBatchResult FlashTier::WriteBatch(std::span<const WriteJob> batch) {
  FlashBatchResult result;
  std::vector<CatalogRow> rows;
  std::vector<size_t>& written = result.written;
  std::vector<size_t>& skipped = result.skipped;  // their own file failed; the others go on
  Status& failure = result.failure;
  // Not while Gc() changes the lock (store_lock.h: conversions briefly release it).
  MutexLock batch_lock(batch_mutex_);
  std::vector<size_t> row_batch_index;  // rows[j] is of batch[row_batch_index[j]]
  for (size_t i = 0; i < batch.size() && failure.ok(); ++i) {
    const kv::ChunkEntry& e = *batch[i].entry;
    const bool holds_exact =
        e.kv != nullptr && HoldsExactKv(e.exact, EffectiveKvCodec(options_.codec, e.kv->head_dim));
    if (!holds_exact) {
      // Not worth a file when the catalog keeps exact KV of it (UpsertBatch would refuse the
      // row; it decides for good, inside its transaction).
      const std::optional<CatalogRow> existing = Find(batch[i].name_space, e.id);
      if (existing && existing->holds_exact_kv()) {
        result.superseded.push_back(i);
        continue;
      }
    }
    const std::string name = KvFileName(batch[i].name_space, e.id, holds_exact);
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
    row.provenance = e.provenance;
    row.tokens = e.tokens;
    row.model_fingerprint = options_.model_fingerprint;
    row.codec = info->codec;
    row.file_name = name;
    row.file_bytes = info->file_bytes;
    row.payload_checksum = info->payload_checksum;
    row.created_us = static_cast<int64_t>(Now() * 1e6);
    row.last_access_us = row.created_us;
    rows.push_back(std::move(row));
    row_batch_index.push_back(i);
  }
  if (rows.empty()) return result;
  if (!catalog_) {
    written = std::move(row_batch_index);
    return result;
  }
  Result<std::vector<UpsertResult>> upserted = [&] {
    MutexLock lock(catalog_mutex_);
    return catalog_->UpsertBatch(rows);
  }();
  if (!upserted.ok()) {
    if (failure.ok()) failure = upserted.error();
    return result;  // the files are orphans; the next open removes them
  }
  for (size_t j = 0; j < rows.size(); ++j) {
    const UpsertResult& u = (*upserted)[j];
    if (u.written) {
      written.push_back(row_batch_index[j]);
    } else {
      // Another process wrote exact KV of it meanwhile: this file is no row's.
      fs_->Remove(PathOf(rows[j].file_name)).IgnoreError();
      result.superseded.push_back(row_batch_index[j]);
    }
    // A replaced row's file of another name (inexact KV replaced by exact) is no row's now.
    if (!u.displaced_file.empty()) fs_->Remove(PathOf(u.displaced_file)).IgnoreError();
  }
  return result;
}

void FlashTier::RecordAccesses(std::span<const AccessJob> accesses) {
  if (!catalog_ || !is_persistent()) return;
  MutexLock lock(catalog_mutex_);
  for (const AccessJob& job : accesses) {
    if (!job.sightings.empty()) {
      catalog_->RecordSightings(job.sightings, options_.max_sightings).IgnoreError();
    }
    if (job.ids.empty()) continue;
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

std::vector<SightingRow> FlashTier::RecentSightings(int64_t limit) {
  if (!catalog_) return {};
  MutexLock lock(catalog_mutex_);
  Result<std::vector<SightingRow>> rows = catalog_->RecentSightings(limit);
  return rows.ok() ? std::move(*rows) : std::vector<SightingRow>();
}

Result<std::vector<PoolKey>> FlashTier::EvictOverBudget(const VictimChooser& choose) {
  std::vector<PoolKey> evicted;
  if (!catalog_ || !is_persistent()) return evicted;
  std::vector<CatalogRow> rows;
  {
    MutexLock lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(CatalogStats stats, catalog_->Stats());
    if (stats.file_bytes <= options_.disk_bytes) return evicted;
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
  const VictimSelection victims = choose(infos, total - options_.disk_bytes);
  std::set<uint64_t> chosen(victims.ids.begin(), victims.ids.end());
  std::vector<int64_t> row_ids;
  std::vector<std::string> files;
  for (const CatalogRow& r : rows) {
    if (chosen.count(PolicyChunkId(r.name_space, r.chunk_id))) {
      row_ids.push_back(r.row_id);
      files.push_back(r.file_name);
      evicted.push_back(PoolKey{r.name_space, r.chunk_id});
    }
  }
  {
    // Rows first, then files: a crash in between leaves orphan files, removed at open.
    MutexLock lock(catalog_mutex_);
    REPRISE_RETURN_IF_ERROR(catalog_->Delete(row_ids));
  }
  for (const std::string& f : files) fs_->Remove(PathOf(f)).IgnoreError();
  MutexLock lock(stats_mutex_);
  stats_.flash_evictions += static_cast<int64_t>(row_ids.size());
  return evicted;
}

Result<GcReport> FlashTier::Gc(const VictimChooser& choose, std::vector<PoolKey>* evicted,
                               const ProgressCallback& progress) {
  if (!catalog_ || !is_persistent()) return UnavailableError("the store is not writable");
  GcReport report;
  std::vector<CatalogRow> rows;
  {
    // Recovery deletes temporaries and orphans: only with the lock exclusive, i.e. when no
    // other process has the store open (chunk_store.h). Our own writer is paused meanwhile.
    MutexLock batch_lock(batch_mutex_);
    Result<bool> exclusive = lock_.is_open() ? lock_.TryLockExclusive() : Result<bool>(false);
    Status recovered;
    if (exclusive.ok() && *exclusive) {
      MutexLock lock(catalog_mutex_);
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
        DisablePersistence(shared);
        return shared;
      }
    }
    if (!exclusive.ok()) return exclusive.status();
    REPRISE_RETURN_IF_ERROR(recovered);
    MutexLock lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(rows, catalog_->ListRows(std::nullopt));
  }
  const auto total = static_cast<int64_t>(rows.size());
  int64_t verified = 0;
  for (const CatalogRow& row : rows) {
    ReportProgress(progress, "verifying chunk files", verified++, total, "files");
    Result<std::vector<uint8_t>> bytes = fs_->ReadFile(PathOf(row.file_name));
    Status bad;
    if (!bytes.ok()) {
      bad = bytes.error();
    } else {
      Result<KvFileHeader> header = ParseKvFileHeader(*bytes);
      if (!header.ok()) {
        bad = header.error();
      } else {
        Result<kv::ChunkEntry> parsed =
            ParseKvFile(*bytes, header->model_fingerprint, row.chunk_id);
        if (!parsed.ok())
          bad = parsed.error();
        else if (header->model_fingerprint != row.model_fingerprint)
          bad = CorruptError("fingerprint differs from the catalog");
      }
    }
    if (!bad.ok()) {
      DropBadRow(row, bad);
      if (bad.code() == StatusCode::kNotFound) {
        ++report.rows_missing_file;
      } else {
        ++report.corrupt;
        report.bytes_freed += static_cast<int64_t>(row.file_bytes);
      }
    }
  }
  ReportProgress(progress, "verifying chunk files", total, total, "files");
  REPRISE_ASSIGN_OR_RETURN(std::vector<PoolKey> gone, EvictOverBudget(choose));
  report.evicted = static_cast<int64_t>(gone.size());
  evicted->insert(evicted->end(), gone.begin(), gone.end());
  {
    MutexLock lock(catalog_mutex_);
    catalog_->Optimize().IgnoreError();
  }
  return report;
}

Status FlashTier::Clear(const std::optional<std::string>& name_space) {
  if (!catalog_) return Status::Ok();
  if (!is_persistent()) {
    return UnavailableError("the store is not writable");
  }
  std::vector<CatalogRow> rows;
  {
    MutexLock lock(catalog_mutex_);
    REPRISE_ASSIGN_OR_RETURN(
        rows, catalog_->ListRows(name_space ? std::optional<std::string_view>(*name_space)
                                            : std::nullopt));
    std::vector<int64_t> ids;
    for (const CatalogRow& r : rows) ids.push_back(r.row_id);
    REPRISE_RETURN_IF_ERROR(catalog_->Delete(ids));
    REPRISE_RETURN_IF_ERROR(catalog_->ClearSightings(
        name_space ? std::optional<std::string_view>(*name_space) : std::nullopt));
  }
  for (const CatalogRow& r : rows) fs_->Remove(PathOf(r.file_name)).IgnoreError();
  return Status::Ok();
}

Status FlashTier::SetPinned(const std::string& name_space, std::optional<kv::ChunkId> id,
                            bool pinned) {
  if (!catalog_ || !is_persistent()) return Status::Ok();
  MutexLock lock(catalog_mutex_);
  return catalog_->SetPinned(name_space, id, pinned);
}

Result<std::vector<CatalogRow>> FlashTier::List(const std::optional<std::string>& name_space) {
  if (!catalog_) return std::vector<CatalogRow>();
  MutexLock lock(catalog_mutex_);
  if (name_space) return catalog_->ListRows(std::string_view(*name_space));
  return catalog_->ListRows(std::nullopt);
}

Result<std::vector<std::string>> FlashTier::Namespaces() {
  if (!catalog_) return std::vector<std::string>();
  MutexLock lock(catalog_mutex_);
  return catalog_->ListNamespaces();
}

void FlashTier::FillStats(StoreStats& s) {
  int64_t unpersisted = 0;
  {
    MutexLock lock(stats_mutex_);
    s.corrupt_dropped = stats_.corrupt_dropped;
    s.bad_rows_dropped = stats_.bad_rows_dropped;
    s.catalog_rebuilt = stats_.catalog_rebuilt;
    s.catalog_set_aside = stats_.catalog_set_aside;
    s.rows_restored = stats_.rows_restored;
    s.catalog_error = stats_.catalog_error;
    s.recovery_skipped = stats_.recovery_skipped;
    s.dir_mode_fixed = stats_.dir_mode_fixed;
    s.persistence_enabled = stats_.persistence_enabled;
    s.persistence_error = stats_.persistence_error;
    s.flash_evictions = stats_.flash_evictions;
    unpersisted = unpersisted_corrupt_;
  }
  if (!catalog_) return;
  MutexLock lock(catalog_mutex_);
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

}  // namespace reprise::store
