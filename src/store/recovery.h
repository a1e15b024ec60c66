// Recovery: makes the catalog and the KV files in the store folder agree again after a crash,
// a power loss or files removed behind the store's back (docs/design.md §6). Run at open, before
// the store serves lookups or writes.
//
// The write order (file durable before its row; row deleted before its file) means a crash
// can leave only: a KV file without a row (an insert that did not commit, or a delete whose
// file removal did not run), a stray temporary (`*.rpkv.tmp`), or — after a power loss that
// rolled back a committed delete (catalog.h, synchronous=NORMAL) — a row whose file is gone.
// RecoverStore removes each of them. A file whose size differs from its row is removed with
// its row. Checksums are not read here; they are verified lazily when a file is read.
//
// Only names ending in kKvFileSuffix or kKvFileSuffix + kTempFileSuffix are touched, so the
// catalog's own files and anything else in the folder are left alone.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "store/catalog.h"
#include "store/file_system.h"

namespace reprise::store {

struct RecoveryReport {
  int64_t num_rows_checked = 0;
  int64_t num_rows_missing_file = 0;     // rows removed: no file
  int64_t num_rows_size_mismatch = 0;    // rows removed with their file: wrong size
  int64_t num_orphan_files_removed = 0;  // KV files without a row
  int64_t num_temp_files_removed = 0;    // leftover temporaries
  int64_t bytes_removed = 0;             // of removed files (orphans, temporaries, wrong size)
};

// Requires: nothing else writes `dir` or `catalog` meanwhile — another process's temporary or
// freshly renamed file looks exactly like a crash's leftover. ChunkStore runs it only under
// the store lock held exclusively (store_lock.h). Errors: those of the catalog and
// the file system; a file that cannot be removed fails the call (the rows were already
// removed, so a later run finishes the job).
Result<RecoveryReport> RecoverStore(FileSystem& fs, Catalog& catalog, const std::string& dir);

}  // namespace reprise::store
