#include "store/catalog_rebuild.h"

#include <algorithm>
#include <set>
#include <vector>

#include "store/kv_file.h"

namespace reprise::store {

Result<std::string> SetAsideCatalog(FileSystem& fs, const std::string& dir, int64_t time_s) {
  REPRISE_ASSIGN_OR_RETURN(const std::vector<std::string> listed, fs.ListDir(dir));
  const std::set<std::string> names(listed.begin(), listed.end());
  const std::string catalog(kCatalogFileName);
  std::string aside = catalog + ".corrupt-" + std::to_string(time_s);
  for (int n = 1; names.count(aside) != 0 || names.count(aside + "-wal") != 0; ++n) {
    aside = catalog + ".corrupt-" + std::to_string(time_s) + "-" + std::to_string(n);
  }
  if (names.count(catalog) != 0) {
    REPRISE_RETURN_IF_ERROR(fs.Rename(dir + "/" + catalog, dir + "/" + aside));
  }
  // A stale WAL must never be applied to the new database of the same name.
  if (names.count(catalog + "-wal") != 0) {
    REPRISE_RETURN_IF_ERROR(fs.Rename(dir + "/" + catalog + "-wal", dir + "/" + aside + "-wal"));
  }
  if (names.count(catalog + "-shm") != 0) {
    const Status removed = fs.Remove(dir + "/" + catalog + "-shm");
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  REPRISE_RETURN_IF_ERROR(fs.SyncDir(dir));
  return aside;
}

Result<CatalogRebuildReport> RebuildCatalog(FileSystem& fs, Catalog& catalog,
                                            const std::string& dir, int64_t now_us) {
  CatalogRebuildReport report;
  REPRISE_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
  std::sort(names.begin(), names.end());
  std::vector<CatalogRow> batch;
  std::vector<std::string> remove;
  const auto flush = [&]() -> Status {
    if (batch.empty()) return Status::Ok();
    // A chunk with both an exact file and an inexact one (a crash between the exact row's
    // commit and the old file's removal) keeps the exact one; the other file is removed.
    REPRISE_ASSIGN_OR_RETURN(const std::vector<UpsertResult> upserted, catalog.UpsertBatch(batch));
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!upserted[i].written) {
        remove.push_back(batch[i].file_name);
      } else if (!upserted[i].displaced_file.empty()) {
        remove.push_back(upserted[i].displaced_file);  // a row of this rebuild, replaced
      } else {
        ++report.num_rows_restored;
      }
    }
    batch.clear();
    return Status::Ok();
  };
  for (const std::string& name : names) {
    if (!name.ends_with(kKvFileSuffix)) continue;
    ++report.num_files_scanned;
    Result<KvFileMetadata> meta = ReadKvFileMetadata(fs, dir + "/" + name);
    if (!meta.ok()) {
      if (meta.status().code() == StatusCode::kNotFound) continue;
      if (meta.status().code() != StatusCode::kCorrupt) return meta.status();
      ++report.num_files_corrupt;
      remove.push_back(name);
      continue;
    }
    if (!meta->has_namespace ||
        KvFileName(meta->name_space, meta->header.chunk_id,
                   HoldsExactKv(meta->header.exact, meta->header.codec)) != name) {
      ++report.num_files_unattributable;
      remove.push_back(name);
      continue;
    }
    CatalogRow row;
    row.name_space = meta->name_space;
    row.chunk_id = meta->header.chunk_id;
    row.parent_id = meta->header.parent_id;
    row.content_hash = meta->header.content_hash;
    row.exact = meta->header.exact;
    row.provenance = meta->provenance;
    row.tokens = std::move(meta->tokens);
    row.model_fingerprint = meta->header.model_fingerprint;
    row.codec = meta->header.codec;
    row.file_name = name;
    row.file_bytes = meta->file_bytes;
    row.payload_checksum = meta->header.payload_checksum;
    row.created_us = now_us;
    row.last_access_us = now_us;
    batch.push_back(std::move(row));
    if (batch.size() >= 256) REPRISE_RETURN_IF_ERROR(flush());
  }
  REPRISE_RETURN_IF_ERROR(flush());
  for (const std::string& name : remove) {
    const Status removed = fs.Remove(dir + "/" + name);
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  if (!remove.empty()) REPRISE_RETURN_IF_ERROR(fs.SyncDir(dir));
  return report;
}

}  // namespace reprise::store
