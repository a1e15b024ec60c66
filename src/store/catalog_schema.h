// The catalog's SQLite schema and its migrations (docs/design.md §6).
//
// The schema version lives in the `meta` table (key 'schema_version'). A migration is the
// SQL that takes the schema from version N-1 to N; MigrateCatalog runs the missing steps in
// order, each in its own transaction together with the version update, so that a crash
// leaves the database at some complete version. Steps are never edited once released: a
// change is a new step.
//
// Version 1: tables meta, chunks (unique (namespace, chunk_id), index (namespace,
//            content_hash)), co_access (+ index by chunk_b), the keyword index (FTS5 table
//            chunk_text with rowid = chunks.row_id, chunk_terms, meta 'num_texts'), and a
//            trigger that removes a chunk's text and co-access pairs with its row.
// Version 2: index (namespace, parent_id, last_access_us) for prefix-tree children, most
//            recent first; hit counts per tier (pool_hits, flash_hits).
// Version 3: chunk_spans (span fingerprint -> row id; kv/span_fingerprints.h), the sub-chunk
//            candidate index, with its own delete trigger; rows of older catalogs are indexed
//            at Open (meta 'spans_backfill_pending').
// Version 4: the keyword index is dropped (chunk_text, chunk_terms, meta 'num_texts'): span
//            fingerprints replaced it as the planner's candidate index. The version-1
//            trigger is replaced by one that removes co-access pairs only.
// Version 5: kv_origin, recompute_ratio, check_layer: how each chunk's KV was made
//            (kv::KvProvenance); older rows read as unknown.
#pragma once

#include <span>
#include <string_view>

#include "base/status.h"
#include "store/sqlite_db.h"

namespace reprise::store {

inline constexpr int kCatalogSchemaVersion = 6;

struct CatalogMigration {
  int to_version = 0;
  std::string_view description;
  std::string_view sql;
};

// All steps, in order: element i takes the schema to version i + 1.
std::span<const CatalogMigration> CatalogMigrations();

// The schema version of `db`: 0 for a database without a catalog. Errors: IoError, Corrupt.
Result<int> ReadCatalogSchemaVersion(SqliteDb& db);

// Runs the steps that take `db` to `target_version`. Requires: 1 <= target_version <=
// kCatalogSchemaVersion. Errors: Unimplemented when the database is newer than
// `target_version` (written by a newer Reprise); SQLite errors.
Status MigrateCatalog(SqliteDb& db, int target_version);

}  // namespace reprise::store
