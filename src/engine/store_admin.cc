// StoreAdmin (include/reprise/store_admin.h) over store::ChunkStore.
#include "reprise/store_admin.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "engine/store_settings.h"
#include "kv/chunk.h"
#include "store/chunk_store.h"
#include "store/namespace_name.h"
#include "store/store_dir.h"

namespace reprise {
namespace {

// The catalog's rows by (namespace, chunk id), with their file bytes.
using RowBytes = std::map<std::pair<std::string, uint64_t>, int64_t>;

Result<RowBytes> ListRowBytes(store::ChunkStore& store) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<store::CatalogRow> rows, store.List(std::nullopt));
  RowBytes out;
  for (const store::CatalogRow& r : rows) {
    out[{r.name_space, r.chunk_id}] = static_cast<int64_t>(r.file_bytes);
  }
  return out;
}

}  // namespace

reprise::Status ValidateNamespaceName(std::string_view name) {
  return store::ValidateNamespaceName(name);
}

Result<std::string> ChooseCacheDir(const CacheDirEnvironment& environment) {
  store::CacheDirSources sources;
  sources.xdg_cache_home = environment.xdg_cache_home;
  sources.home = environment.home;
  sources.passwd_home = environment.passwd_home;
  sources.xdg_runtime_dir = environment.xdg_runtime_dir;
  return store::ChooseCacheDir(sources);
}

Result<std::unique_ptr<StoreAdmin>> StoreAdmin::Open(const StoreAdminOptions& options) {
  if (options.dir.empty()) return InvalidArgumentError("no store folder given");
  store::StoreOptions store_options;
  store_options.dir = options.dir;
  REPRISE_ASSIGN_OR_RETURN(store_options.disk_bytes,
                           engine::BudgetMibToBytes(options.disk_mb, "the flash budget"));
  store_options.read_only = options.read_only;
  std::error_code ec;
  if (options.read_only && !std::filesystem::exists(options.dir + "/catalog.db", ec)) {
    return NotFoundError("no store at " + options.dir);
  }
  std::unique_ptr<StoreAdmin> admin(new StoreAdmin());
  REPRISE_ASSIGN_OR_RETURN(admin->store_, store::ChunkStore::Open(store_options));
  admin->dir_ = options.dir;
  admin->read_only_ = options.read_only;
  return admin;
}

StoreAdmin::~StoreAdmin() = default;

int64_t StoreAdmin::disk_budget_bytes() const { return store_->options().disk_bytes; }

Result<StoreStatus> StoreAdmin::Status(const std::optional<std::string>& name_space) {
  const store::StoreStats s = store_->Stats();
  StoreStatus out;
  out.chunks = s.chunks;
  out.bytes_on_disk = s.bytes_on_disk;
  out.bytes_in_memory = s.bytes_in_pool;
  out.namespaces = s.namespaces;
  out.corrupt_dropped = s.corrupt_dropped;
  out.bad_rows_dropped = s.bad_rows_dropped;
  out.catalog_rebuilds = s.catalog_rebuilds;
  out.catalog_rebuilt = s.catalog_rebuilt;
  out.catalog_set_aside = s.catalog_set_aside;
  out.rows_restored = s.rows_restored;
  out.recovery_skipped = s.recovery_skipped;
  out.dir_mode_fixed = s.dir_mode_fixed;
  out.catalog_error = s.catalog_error;
  if (name_space && s.catalog_error.empty()) {
    REPRISE_ASSIGN_OR_RETURN(std::vector<store::CatalogRow> rows, store_->List(name_space));
    out.chunks = static_cast<int64_t>(rows.size());
    out.bytes_on_disk = 0;
    for (const store::CatalogRow& r : rows) out.bytes_on_disk += static_cast<int64_t>(r.file_bytes);
  }
  return out;
}

Result<std::vector<StoredChunk>> StoreAdmin::List(const std::optional<std::string>& name_space) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<store::CatalogRow> rows, store_->List(name_space));
  std::vector<StoredChunk> out;
  out.reserve(rows.size());
  for (const store::CatalogRow& r : rows) {
    StoredChunk c;
    c.name_space = r.name_space;
    c.chunk_id = r.chunk_id;
    c.parent_id = r.parent_id;
    c.tokens = r.num_tokens;
    c.bytes = static_cast<int64_t>(r.file_bytes);
    // Exact only when it is what a prefill computes, bit for bit: computed exactly and kept
    // in a lossless codec.
    c.exact = r.holds_exact_kv();
    c.made = kv::DescribeProvenance(r.provenance);
    if (!r.exact && r.provenance.origin == kv::KvOrigin::kComputed) {
      c.made += " after approximate KV";
    }
    if (!store::IsLosslessKvCodec(r.codec)) {
      c.made += std::string(", kept lossy (") + std::string(KvCodecName(r.codec)) + ")";
    }
    c.pinned = r.pinned;
    c.codec = r.codec;
    c.accesses = r.access_count;
    out.push_back(std::move(c));
  }
  return out;
}

reprise::Status StoreAdmin::SetPinned(const std::string& name_space,
                                      std::optional<uint64_t> chunk_id, bool pinned) {
  if (read_only_) return InvalidArgumentError("the store was opened read-only");
  return store_->SetPinned(name_space, chunk_id, pinned);
}

Result<StoreGcReport> StoreAdmin::Gc(const StoreProgress& progress) {
  if (read_only_) return InvalidArgumentError("the store was opened read-only");
  REPRISE_ASSIGN_OR_RETURN(RowBytes before, ListRowBytes(*store_));
  ProgressCallback report;
  if (progress) {
    report = [&progress](const ProgressUpdate& u) { progress(u.done, u.total); };
  }
  REPRISE_ASSIGN_OR_RETURN(store::GcReport r, store_->Gc(report));
  REPRISE_ASSIGN_OR_RETURN(RowBytes after, ListRowBytes(*store_));
  StoreGcReport out;
  out.rows_missing_file = r.rows_missing_file;
  out.orphan_files = r.orphan_files;
  out.corrupt = r.corrupt;
  out.evicted = r.evicted;
  out.bytes_freed = r.bytes_freed;
  out.recovery_skipped = r.recovery_skipped;
  // Eviction is gc's only reason to drop rows when none was bad; then the bytes of the rows
  // that left the catalog are exactly the bytes evicted.
  for (const auto& [key, bytes] : before) {
    if (!after.count(key)) out.catalog_bytes_dropped += bytes;
  }
  out.evicted_bytes = r.corrupt == 0 && r.rows_missing_file == 0 ? out.catalog_bytes_dropped : -1;
  return out;
}

reprise::Status StoreAdmin::Clear(const std::optional<std::string>& name_space) {
  if (read_only_) return InvalidArgumentError("the store was opened read-only");
  return store_->Clear(name_space);
}

}  // namespace reprise
