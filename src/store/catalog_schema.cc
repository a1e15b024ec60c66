#include "store/catalog_schema.h"

#include "base/check.h"

namespace reprise::store {
namespace {

// u64 ids and hashes are stored as the int64 with the same bits.
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY NOT NULL,
  value INTEGER NOT NULL
);
CREATE TABLE chunks (
  row_id INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  chunk_id INTEGER NOT NULL,
  parent_id INTEGER NOT NULL,
  content_hash INTEGER NOT NULL,
  exact INTEGER NOT NULL,
  num_tokens INTEGER NOT NULL,
  model_fingerprint INTEGER NOT NULL,
  codec INTEGER NOT NULL,
  file_name TEXT NOT NULL,
  file_bytes INTEGER NOT NULL,
  payload_checksum INTEGER NOT NULL,
  pinned INTEGER NOT NULL DEFAULT 0,
  created_us INTEGER NOT NULL,
  last_access_us INTEGER NOT NULL,
  access_count INTEGER NOT NULL DEFAULT 0,
  tokens BLOB NOT NULL
);
CREATE UNIQUE INDEX chunks_by_id ON chunks (namespace, chunk_id);
CREATE INDEX chunks_by_content ON chunks (namespace, content_hash);
CREATE TABLE co_access (
  namespace TEXT NOT NULL,
  chunk_a INTEGER NOT NULL,
  chunk_b INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (namespace, chunk_a, chunk_b)
) WITHOUT ROWID;
CREATE INDEX co_access_by_b ON co_access (namespace, chunk_b);
CREATE VIRTUAL TABLE chunk_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE chunk_terms (
  term TEXT PRIMARY KEY NOT NULL,
  num_docs INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('num_texts', 0);
CREATE TRIGGER chunks_after_delete AFTER DELETE ON chunks BEGIN
  DELETE FROM chunk_text WHERE rowid = old.row_id;
  DELETE FROM co_access WHERE namespace = old.namespace AND chunk_a = old.chunk_id;
  DELETE FROM co_access WHERE namespace = old.namespace AND chunk_b = old.chunk_id;
END;
)sql";

constexpr std::string_view kVersion2 = R"sql(
CREATE INDEX chunks_by_parent ON chunks (namespace, parent_id, last_access_us);
ALTER TABLE chunks ADD COLUMN pool_hits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN flash_hits INTEGER NOT NULL DEFAULT 0;
)sql";

// The span fingerprints of each row's tokens (kv/span_fingerprints.h), the candidate index
// of sub-chunk matching. Rows written before this version are indexed by Catalog::Open, in
// C++, while 'spans_backfill_pending' is 1.
constexpr std::string_view kVersion3 = R"sql(
CREATE TABLE chunk_spans (
  fingerprint INTEGER NOT NULL,
  row_id INTEGER NOT NULL,
  PRIMARY KEY (fingerprint, row_id)
) WITHOUT ROWID;
CREATE INDEX chunk_spans_by_row ON chunk_spans (row_id);
CREATE TRIGGER chunks_after_delete_spans AFTER DELETE ON chunks BEGIN
  DELETE FROM chunk_spans WHERE row_id = old.row_id;
END;
INSERT INTO meta (key, value) VALUES ('spans_backfill_pending', 1)
  ON CONFLICT (key) DO UPDATE SET value = 1;
)sql";

constexpr std::string_view kVersion4 = R"sql(
DROP TRIGGER chunks_after_delete;
CREATE TRIGGER chunks_after_delete AFTER DELETE ON chunks BEGIN
  DELETE FROM co_access WHERE namespace = old.namespace AND chunk_a = old.chunk_id;
  DELETE FROM co_access WHERE namespace = old.namespace AND chunk_b = old.chunk_id;
END;
DROP TABLE chunk_text;
DROP TABLE chunk_terms;
DELETE FROM meta WHERE key = 'num_texts';
)sql";

// How each chunk's KV was made (kv::KvProvenance); rows of older catalogs are unknown (0).
constexpr std::string_view kVersion5 = R"sql(
ALTER TABLE chunks ADD COLUMN kv_origin INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN recompute_ratio REAL NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN check_layer INTEGER NOT NULL DEFAULT -1;
)sql";

// Admission control (admission.h): how often each content was seen in a prompt, for the
// chunks not (yet) written; counts survive restarts, so a chunk a CLI run saw once is
// admitted when the next run sees it again. Bounded: the least recently seen rows are
// trimmed (Catalog::TrimSightings).
constexpr std::string_view kVersion6 = R"sql(
CREATE TABLE sightings (
  namespace TEXT NOT NULL,
  content_hash INTEGER NOT NULL,
  count INTEGER NOT NULL,
  last_seen_us INTEGER NOT NULL,
  PRIMARY KEY (namespace, content_hash)
);
CREATE INDEX sightings_by_time ON sightings (last_seen_us);
)sql";

constexpr CatalogMigration kMigrations[] = {
    {1, "chunks, co_access, FTS5 keyword index", kVersion1},
    {2, "prefix-tree children index; hit counts per tier", kVersion2},
    {3, "span fingerprint index for sub-chunk candidates", kVersion3},
    {4, "keyword index dropped", kVersion4},
    {5, "KV provenance per chunk", kVersion5},
    {6, "sightings for admission control", kVersion6},
};
static_assert(std::size(kMigrations) == kCatalogSchemaVersion);

}  // namespace

std::span<const CatalogMigration> CatalogMigrations() { return kMigrations; }

Result<int> ReadCatalogSchemaVersion(SqliteDb& db) {
  REPRISE_ASSIGN_OR_RETURN(
      const int64_t has_meta,
      db.QueryInt64("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'"));
  if (has_meta == 0) return 0;
  REPRISE_ASSIGN_OR_RETURN(const int64_t version,
                           db.QueryInt64("SELECT value FROM meta WHERE key = 'schema_version'"));
  if (version < 0 || version > 1000000) {
    return CorruptError("catalog schema version " + std::to_string(version));
  }
  return static_cast<int>(version);
}

Status MigrateCatalog(SqliteDb& db, int target_version) {
  REPRISE_CHECK(target_version >= 1 && target_version <= kCatalogSchemaVersion) << target_version;
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db));
    // Read inside the write transaction: another process may have migrated meanwhile.
    REPRISE_ASSIGN_OR_RETURN(const int version, ReadCatalogSchemaVersion(db));
    if (version > target_version) {
      return UnimplementedError("catalog schema version " + std::to_string(version) +
                                " is newer than this build's " + std::to_string(target_version));
    }
    if (version == target_version) return transaction.Commit();
    const CatalogMigration& step = kMigrations[version];
    REPRISE_RETURN_IF_ERROR(db.Exec(step.sql).WithContext("catalog migration to version " +
                                                          std::to_string(step.to_version)));
    REPRISE_RETURN_IF_ERROR(db.Exec("INSERT INTO meta (key, value) VALUES ('schema_version', " +
                                    std::to_string(step.to_version) +
                                    ") ON CONFLICT (key) DO UPDATE SET value = excluded.value"));
    REPRISE_RETURN_IF_ERROR(transaction.Commit());
  }
}

}  // namespace reprise::store
