// Catalog rebuild: when the catalog is damaged beyond use (not a database, truncated, pages
// that fail SQLite's checks), the store sets it aside and rebuilds a fresh one from the KV
// files, whose headers and payload prefix carry everything a row needs (kv_file.h, version 2:
// namespace, chunk id, parent, content hash, tokens, text, codec, model fingerprint,
// exactness). Lost with the old catalog: pins, access statistics and co-access counts.
//
// Requires: nothing else uses the folder meanwhile (the store holds its lock exclusively).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "store/catalog.h"
#include "store/file_system.h"

namespace reprise::store {

struct CatalogRebuildReport {
  int64_t num_files_scanned = 0;
  int64_t num_rows_restored = 0;
  // Files removed: unreadable headers or payload prefixes (counted as corrupt by the store).
  int64_t num_files_corrupt = 0;
  // Files removed that were sound but cannot be attributed: version 1 files (no namespace)
  // and files whose name is not KvFileName(namespace, chunk id, holds exact KV).
  int64_t num_files_unattributable = 0;
};

// Renames `dir`/catalog.db to `dir`/catalog.db.corrupt-<time_s> (and its -wal alongside, so
// that the copy stays inspectable) and removes its -shm; returns the new file name. A name
// already taken gets a counter. Errors: those of the FileSystem.
Result<std::string> SetAsideCatalog(FileSystem& fs, const std::string& dir, int64_t time_s);

// Inserts a row for every KV file of `dir` (created and last used at `now_us`) into `catalog`,
// which should be empty, and removes the files that cannot be used. Temporaries are left to
// recovery. Errors: those of the catalog and the FileSystem.
Result<CatalogRebuildReport> RebuildCatalog(FileSystem& fs, Catalog& catalog,
                                            const std::string& dir, int64_t now_us);

}  // namespace reprise::store
