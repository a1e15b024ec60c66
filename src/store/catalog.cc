#include "store/catalog.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "kv/span_fingerprint_index.h"
#include "kv/span_fingerprints.h"
#include "store/catalog_schema.h"
#include "store/sqlite_db.h"

namespace reprise::store {
namespace {

// Column lists of a full row; the "no tokens" form reads NULL in place of the blob.
#define REPRISE_CATALOG_COLUMNS                                                             \
  "row_id, namespace, chunk_id, parent_id, content_hash, exact, num_tokens, "               \
  "model_fingerprint, codec, file_name, file_bytes, payload_checksum, pinned, created_us, " \
  "last_access_us, access_count, pool_hits, flash_hits, kv_origin, recompute_ratio, "       \
  "check_layer, "
constexpr std::string_view kRowColumns = REPRISE_CATALOG_COLUMNS "tokens";
constexpr std::string_view kRowColumnsNoTokens = REPRISE_CATALOG_COLUMNS "NULL";
#undef REPRISE_CATALOG_COLUMNS

// Parameters ?1..?21 in this order, shared by the INSERT and the replacing UPDATE.
constexpr std::string_view kInsertSql =
    "INSERT INTO chunks (namespace, chunk_id, parent_id, content_hash, exact, num_tokens, "
    "model_fingerprint, codec, file_name, file_bytes, payload_checksum, pinned, created_us, "
    "last_access_us, access_count, pool_hits, flash_hits, kv_origin, recompute_ratio, "
    "check_layer, tokens) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
    "?19, ?20, ?21)";
constexpr std::string_view kReplaceSql =
    "UPDATE chunks SET parent_id = ?3, content_hash = ?4, exact = ?5, num_tokens = ?6, "
    "model_fingerprint = ?7, codec = ?8, file_name = ?9, file_bytes = ?10, "
    "payload_checksum = ?11, pinned = ?12, created_us = ?13, last_access_us = ?14, "
    "access_count = ?15, pool_hits = ?16, flash_hits = ?17, kv_origin = ?18, "
    "recompute_ratio = ?19, check_layer = ?20, tokens = ?21 "
    "WHERE namespace = ?1 AND chunk_id = ?2";

std::vector<uint8_t> EncodeTokens(std::span<const int32_t> tokens) {
  std::vector<uint8_t> out(tokens.size() * 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint32_t value = static_cast<uint32_t>(tokens[i]);
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(value >> (8 * b));
  }
  return out;
}

Status BindRow(SqliteStatement& s, const CatalogRow& row) {
  if (row.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("catalog row: too many tokens");
  }
  REPRISE_RETURN_IF_ERROR(s.BindText(1, row.name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, row.chunk_id));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(3, row.parent_id));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(4, row.content_hash));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(5, row.exact ? 1 : 0));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(6, static_cast<int64_t>(row.tokens.size())));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(7, row.model_fingerprint));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(8, static_cast<int64_t>(row.codec)));
  REPRISE_RETURN_IF_ERROR(s.BindText(9, row.file_name));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(10, row.file_bytes));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(11, row.payload_checksum));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(12, row.pinned ? 1 : 0));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(13, row.created_us));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(14, row.last_access_us));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(15, row.access_count));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(16, row.pool_hits));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(17, row.flash_hits));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(18, static_cast<int64_t>(row.provenance.origin)));
  REPRISE_RETURN_IF_ERROR(s.BindDouble(19, row.provenance.recompute_ratio));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(20, row.provenance.check_layer));
  return s.BindBlob(21, EncodeTokens(row.tokens));
}

// Reads the columns of kRowColumns (or kRowColumnsNoTokens) from the current row.
Result<CatalogRow> ReadRow(const SqliteStatement& s) {
  CatalogRow row;
  row.row_id = s.ColumnInt64(0);
  row.name_space = s.ColumnText(1);
  row.chunk_id = s.ColumnUint64(2);
  row.parent_id = s.ColumnUint64(3);
  row.content_hash = s.ColumnUint64(4);
  row.exact = s.ColumnInt64(5) != 0;
  const int64_t num_tokens = s.ColumnInt64(6);
  const int64_t codec = s.ColumnInt64(8);
  if (num_tokens < 0 || num_tokens > std::numeric_limits<int32_t>::max() || codec < 0 ||
      codec > 255 || !IsKnownKvCodec(static_cast<uint8_t>(codec))) {
    return CorruptError("catalog row " + std::to_string(row.row_id) + ": bad token count or codec");
  }
  row.num_tokens = static_cast<int32_t>(num_tokens);
  row.model_fingerprint = s.ColumnUint64(7);
  row.codec = static_cast<KvCodec>(codec);
  row.file_name = s.ColumnText(9);
  row.file_bytes = s.ColumnUint64(10);
  row.payload_checksum = s.ColumnUint64(11);
  row.pinned = s.ColumnInt64(12) != 0;
  row.created_us = s.ColumnInt64(13);
  row.last_access_us = s.ColumnInt64(14);
  row.access_count = s.ColumnInt64(15);
  row.pool_hits = s.ColumnInt64(16);
  row.flash_hits = s.ColumnInt64(17);
  const int64_t origin = s.ColumnInt64(18);
  const double ratio = s.ColumnDouble(19);
  const int64_t check_layer = s.ColumnInt64(20);
  if (origin < 0 || origin > kv::kMaxKvOrigin || !(ratio >= 0.0 && ratio <= 1.0) ||
      check_layer < -1 || check_layer > std::numeric_limits<int32_t>::max()) {
    return CorruptError("catalog row " + std::to_string(row.row_id) + ": bad provenance");
  }
  row.provenance = kv::KvProvenance{static_cast<kv::KvOrigin>(origin), static_cast<float>(ratio),
                                    static_cast<int32_t>(check_layer)};
  if (!s.ColumnIsNull(21)) {
    const std::span<const uint8_t> blob = s.ColumnBlob(21);
    if (blob.size() != static_cast<size_t>(num_tokens) * 4) {
      return CorruptError("catalog row " + std::to_string(row.row_id) + ": token blob of " +
                          std::to_string(blob.size()) + " bytes for " + std::to_string(num_tokens) +
                          " tokens");
    }
    row.tokens.resize(static_cast<size_t>(num_tokens));
    for (size_t i = 0; i < row.tokens.size(); ++i) {
      const uint32_t value = static_cast<uint32_t>(blob[4 * i]) |
                             (static_cast<uint32_t>(blob[4 * i + 1]) << 8) |
                             (static_cast<uint32_t>(blob[4 * i + 2]) << 16) |
                             (static_cast<uint32_t>(blob[4 * i + 3]) << 24);
      row.tokens[i] = static_cast<int32_t>(value);
    }
  }
  return row;
}

// Runs a bound statement and collects its rows. A row that cannot be read is skipped and
// counted in `num_skipped`, so that one bad row never hides the others.
Result<std::vector<CatalogRow>> CollectRows(SqliteStatement& s, std::atomic<int64_t>* num_skipped) {
  ScopedReset reset(s);
  std::vector<CatalogRow> rows;
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
    if (!has_row) return rows;
    Result<CatalogRow> row = ReadRow(s);
    if (!row.ok()) {
      num_skipped->fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    rows.push_back(std::move(row).value());
  }
}

// The condition of rows ReadRow rejects, in SQL.
std::string InvalidRowCondition() {
  std::string codecs;
  for (int value = 0; value < 256; ++value) {
    if (!IsKnownKvCodec(static_cast<uint8_t>(value))) continue;
    if (!codecs.empty()) codecs += ", ";
    codecs += std::to_string(value);
  }
  return "typeof(num_tokens) != 'integer' OR num_tokens < 0 OR num_tokens > 2147483647 OR "
         "typeof(codec) != 'integer' OR codec NOT IN (" +
         codecs + ") OR (tokens IS NOT NULL AND length(tokens) != num_tokens * 4)";
}

Result<std::optional<CatalogRow>> CollectOne(SqliteStatement& s) {
  ScopedReset reset(s);
  REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
  if (!has_row) return std::optional<CatalogRow>();
  REPRISE_ASSIGN_OR_RETURN(CatalogRow row, ReadRow(s));
  return std::optional<CatalogRow>(std::move(row));
}

Status ReadOnlyError() { return UnavailableError("catalog is open read-only"); }

// A database file shorter than its header says is truncated (SQLite notices only when it
// reads a missing page, and then only for that query). In WAL mode the database file changes
// only at checkpoints, so without a WAL a sound file is never shorter than its header's page
// count. With a non-empty WAL nothing is concluded: a checkpoint cut short (by a crash) may
// have written page 1 and not yet the last pages, which the WAL still holds. Ok also when the
// file is missing, empty or too short to have a header (SQLite judges those).
Status CheckNotTruncated(const std::string& path) {
  if (std::FILE* wal = std::fopen((path + "-wal").c_str(), "rb")) {
    std::fseek(wal, 0, SEEK_END);
    const long wal_bytes = std::ftell(wal);
    std::fclose(wal);
    if (wal_bytes != 0) return Status::Ok();
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return Status::Ok();
  uint8_t header[100];
  const size_t got = std::fread(header, 1, sizeof(header), file);
  std::fseek(file, 0, SEEK_END);
  const long size = std::ftell(file);
  std::fclose(file);
  if (got < sizeof(header) || size < 0) return Status::Ok();
  if (std::memcmp(header, "SQLite format 3", 16) != 0) return Status::Ok();
  const auto u32 = [&](size_t at) {
    return (uint32_t{header[at]} << 24) | (uint32_t{header[at + 1]} << 16) |
           (uint32_t{header[at + 2]} << 8) | uint32_t{header[at + 3]};
  };
  uint64_t page_size = (uint64_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t num_pages = u32(28);
  // The page count is valid only when the change counter matches "version valid for".
  if (num_pages == 0 || u32(24) != u32(92)) return Status::Ok();
  if (static_cast<uint64_t>(size) < uint64_t{num_pages} * page_size) {
    return CorruptError("catalog " + path + " is truncated: " + std::to_string(size) +
                        " bytes, its header says " + std::to_string(num_pages) + " pages of " +
                        std::to_string(page_size));
  }
  return Status::Ok();
}

}  // namespace

struct Catalog::Connections {
  std::atomic<int64_t> bad_rows_skipped{0};
  Mutex write_mutex;
  SqliteDb writer REPRISE_GUARDED_BY(write_mutex);  // not open when read-only
  struct {
    SqliteStatement find_row_id, insert, replace, delete_row, record_access, co_access_add, pin_one,
        pin_namespace, add_counter, span_insert, span_clear;
  } w REPRISE_GUARDED_BY(write_mutex);

  Mutex read_mutex;
  SqliteDb reader REPRISE_GUARDED_BY(read_mutex);
  struct {
    SqliteStatement find, find_row, find_content, children, co_count, co_partners, list_all,
        list_namespace, namespaces, stats, begin, commit, counter, invalid_rows, span_rows;
  } r REPRISE_GUARDED_BY(read_mutex);
};

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path,
                                               const CatalogOptions& options) {
  REPRISE_RETURN_IF_ERROR(CheckNotTruncated(path));
  auto c = std::make_unique<Connections>();
  SqliteOpenOptions open_options;
  open_options.busy_timeout_ms = options.busy_timeout_ms;
  if (!options.read_only) {
    MutexLock lock(c->write_mutex);
    REPRISE_ASSIGN_OR_RETURN(c->writer, SqliteDb::Open(path, open_options));
    // journal_mode answers with a row, which Exec ignores; WAL persists in the file.
    REPRISE_RETURN_IF_ERROR(c->writer.Exec(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY"));
    REPRISE_RETURN_IF_ERROR(MigrateCatalog(c->writer, kCatalogSchemaVersion));
    auto& w = c->w;
    SqliteDb& db = c->writer;
    REPRISE_ASSIGN_OR_RETURN(w.find_row_id,
                             db.Prepare("SELECT row_id, exact, codec, file_name FROM chunks WHERE "
                                        "namespace = ?1 AND chunk_id = ?2"));
    REPRISE_ASSIGN_OR_RETURN(w.insert, db.Prepare(kInsertSql));
    REPRISE_ASSIGN_OR_RETURN(w.replace, db.Prepare(kReplaceSql));
    REPRISE_ASSIGN_OR_RETURN(w.delete_row, db.Prepare("DELETE FROM chunks WHERE row_id = ?1"));
    REPRISE_ASSIGN_OR_RETURN(
        w.record_access, db.Prepare("UPDATE chunks SET last_access_us = MAX(last_access_us, ?2), "
                                    "access_count = access_count + 1, pool_hits = pool_hits + ?3, "
                                    "flash_hits = flash_hits + ?4 WHERE row_id = ?1"));
    REPRISE_ASSIGN_OR_RETURN(
        w.co_access_add,
        db.Prepare("INSERT INTO co_access (namespace, chunk_a, chunk_b, count) "
                   "VALUES (?1, ?2, ?3, 1) ON CONFLICT (namespace, chunk_a, chunk_b) "
                   "DO UPDATE SET count = count + 1"));
    REPRISE_ASSIGN_OR_RETURN(
        w.pin_one,
        db.Prepare("UPDATE chunks SET pinned = ?3 WHERE namespace = ?1 AND chunk_id = ?2"));
    REPRISE_ASSIGN_OR_RETURN(w.pin_namespace,
                             db.Prepare("UPDATE chunks SET pinned = ?2 WHERE namespace = ?1"));
    REPRISE_ASSIGN_OR_RETURN(
        w.add_counter, db.Prepare("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) "
                                  "DO UPDATE SET value = value + excluded.value"));
    REPRISE_ASSIGN_OR_RETURN(
        w.span_insert,
        db.Prepare("INSERT OR IGNORE INTO chunk_spans (fingerprint, row_id) VALUES (?1, ?2)"));
    REPRISE_ASSIGN_OR_RETURN(w.span_clear, db.Prepare("DELETE FROM chunk_spans WHERE row_id = ?1"));
  }

  MutexLock lock(c->read_mutex);
  // Opens the lookup connection and reads the schema version (the first real read, where a
  // WAL database needs its -shm).
  const auto open_reader = [&](bool immutable) -> Result<int> {
    c->read_mutex.AssertHeld();  // the lock above
    SqliteOpenOptions reader_options = open_options;
    reader_options.read_only = true;
    reader_options.immutable = immutable;
    REPRISE_ASSIGN_OR_RETURN(c->reader, SqliteDb::Open(path, reader_options));
    // A larger page cache keeps the indexes of a 100k-chunk catalog in memory (reads through
    // pread rather than mmap, so that an I/O error is an error, not a SIGBUS).
    REPRISE_RETURN_IF_ERROR(
        c->reader.Exec("PRAGMA query_only = 1; PRAGMA cache_size = -" +
                       std::to_string(std::max(options.reader_cache_bytes, 0) / 1024)));
    return ReadCatalogSchemaVersion(c->reader);
  };
  Result<int> read_version = open_reader(options.read_only && options.immutable);
  if (!read_version.ok() && options.read_only && !options.immutable &&
      read_version.status().code() != StatusCode::kNotFound &&
      read_version.status().code() != StatusCode::kCorrupt) {
    // A WAL catalog whose -shm cannot be created: read the database file alone.
    Result<int> immutable_version = open_reader(true);
    if (immutable_version.ok()) read_version = immutable_version;
  }
  if (!read_version.ok()) return read_version.status();
  const int version = *read_version;
  SqliteDb& db = c->reader;
  if (version > kCatalogSchemaVersion) {
    return UnimplementedError("catalog " + path + " has schema version " + std::to_string(version) +
                              ", newer than this build's " + std::to_string(kCatalogSchemaVersion));
  }
  if (version < kCatalogSchemaVersion) {
    return UnavailableError("catalog " + path + " has schema version " + std::to_string(version) +
                            " and is open read-only, so it cannot be migrated");
  }
  auto& r = c->r;
  const std::string columns(kRowColumns);
  REPRISE_ASSIGN_OR_RETURN(
      r.span_rows,
      db.Prepare("SELECT s.row_id FROM chunk_spans s JOIN chunks c ON c.row_id = s.row_id "
                 "WHERE s.fingerprint = ?1 AND c.namespace = ?2 LIMIT ?3"));
  REPRISE_ASSIGN_OR_RETURN(
      r.find,
      db.Prepare("SELECT " + columns + " FROM chunks WHERE namespace = ?1 AND chunk_id = ?2"));
  REPRISE_ASSIGN_OR_RETURN(r.find_row,
                           db.Prepare("SELECT " + columns + " FROM chunks WHERE row_id = ?1"));
  REPRISE_ASSIGN_OR_RETURN(r.find_content,
                           db.Prepare("SELECT " + columns +
                                      " FROM chunks WHERE namespace = ?1 AND content_hash = ?2 "
                                      "ORDER BY (exact <> 0 AND codec = 0) DESC, exact DESC, "
                                      "last_access_us DESC LIMIT 1"));
  REPRISE_ASSIGN_OR_RETURN(r.children,
                           db.Prepare("SELECT " + columns +
                                      " FROM chunks WHERE namespace = ?1 AND parent_id = ?2 "
                                      "ORDER BY last_access_us DESC LIMIT ?3"));
  REPRISE_ASSIGN_OR_RETURN(r.co_count,
                           db.Prepare("SELECT count FROM co_access WHERE namespace = ?1 AND "
                                      "chunk_a = ?2 AND chunk_b = ?3"));
  REPRISE_ASSIGN_OR_RETURN(
      r.co_partners,
      db.Prepare("SELECT chunk_b, count FROM co_access WHERE namespace = ?1 AND chunk_a = ?2 "
                 "UNION ALL "
                 "SELECT chunk_a, count FROM co_access WHERE namespace = ?1 AND chunk_b = ?2 "
                 "ORDER BY 2 DESC LIMIT ?3"));
  REPRISE_ASSIGN_OR_RETURN(r.begin, db.Prepare("BEGIN"));
  REPRISE_ASSIGN_OR_RETURN(r.commit, db.Prepare("COMMIT"));
  const std::string no_tokens(kRowColumnsNoTokens);
  REPRISE_ASSIGN_OR_RETURN(r.list_all,
                           db.Prepare("SELECT " + no_tokens + " FROM chunks ORDER BY row_id"));
  REPRISE_ASSIGN_OR_RETURN(
      r.list_namespace,
      db.Prepare("SELECT " + no_tokens + " FROM chunks WHERE namespace = ?1 ORDER BY row_id"));
  REPRISE_ASSIGN_OR_RETURN(r.namespaces,
                           db.Prepare("SELECT DISTINCT namespace FROM chunks ORDER BY namespace"));
  REPRISE_ASSIGN_OR_RETURN(r.counter, db.Prepare("SELECT value FROM meta WHERE key = ?1"));
  REPRISE_ASSIGN_OR_RETURN(r.invalid_rows,
                           db.Prepare("SELECT row_id, file_name FROM chunks WHERE " +
                                      InvalidRowCondition() + " ORDER BY row_id"));
  REPRISE_ASSIGN_OR_RETURN(
      r.stats, db.Prepare("SELECT COUNT(*), COALESCE(SUM(file_bytes), 0), "
                          "COUNT(DISTINCT namespace), COALESCE(SUM(pinned), 0) FROM chunks"));
  std::unique_ptr<Catalog> catalog(new Catalog(std::move(c), options));
  if (!options.read_only) {
    MutexLock write_lock(catalog->connections_->write_mutex);
    REPRISE_RETURN_IF_ERROR(catalog->BackfillSpansLocked().WithContext("catalog " + path));
  }
  return catalog;
}

Status Catalog::IndexSpansLocked(int64_t row_id, std::span<const int32_t> tokens, bool replace) {
  connections_->write_mutex.AssertHeld();
  auto& w = connections_->w;
  if (replace) {
    REPRISE_RETURN_IF_ERROR(w.span_clear.BindInt64(1, row_id));
    REPRISE_RETURN_IF_ERROR(w.span_clear.Run());
  }
  for (const uint64_t f : kv::SpanFingerprints(tokens)) {
    REPRISE_RETURN_IF_ERROR(w.span_insert.BindUint64(1, f));
    REPRISE_RETURN_IF_ERROR(w.span_insert.BindInt64(2, row_id));
    REPRISE_RETURN_IF_ERROR(w.span_insert.Run());
  }
  return Status::Ok();
}

Status Catalog::BackfillSpansLocked() {
  connections_->write_mutex.AssertHeld();
  SqliteDb& db = connections_->writer;
  REPRISE_ASSIGN_OR_RETURN(
      const int64_t pending,
      db.QueryInt64(
          "SELECT COALESCE(MAX(value), 0) FROM meta WHERE key = 'spans_backfill_pending'"));
  if (pending == 0) return Status::Ok();
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db));
  REPRISE_ASSIGN_OR_RETURN(
      SqliteStatement unindexed,
      db.Prepare("SELECT " + std::string(kRowColumns) +
                 " FROM chunks WHERE row_id NOT IN (SELECT row_id FROM chunk_spans)"));
  REPRISE_ASSIGN_OR_RETURN(std::vector<CatalogRow> rows,
                           CollectRows(unindexed, &connections_->bad_rows_skipped));
  for (const CatalogRow& row : rows) {
    REPRISE_RETURN_IF_ERROR(IndexSpansLocked(row.row_id, row.tokens, /*replace=*/false));
  }
  REPRISE_RETURN_IF_ERROR(
      db.Exec("UPDATE meta SET value = 0 WHERE key = 'spans_backfill_pending'"));
  return transaction.Commit();
}

Catalog::Catalog(std::unique_ptr<Connections> connections, const CatalogOptions& options)
    : connections_(std::move(connections)), options_(options) {}

Catalog::~Catalog() = default;

Result<int64_t> Catalog::InsertLocked(const CatalogRow& row, OnConflict on_conflict) {
  connections_->write_mutex.AssertHeld();
  auto& w = connections_->w;
  SqliteDb& db = connections_->writer;
  std::optional<int64_t> existing;
  {
    ScopedReset reset(w.find_row_id);
    REPRISE_RETURN_IF_ERROR(w.find_row_id.BindText(1, row.name_space));
    REPRISE_RETURN_IF_ERROR(w.find_row_id.BindUint64(2, row.chunk_id));
    REPRISE_ASSIGN_OR_RETURN(const bool found, w.find_row_id.Step());
    if (found) existing = w.find_row_id.ColumnInt64(0);
  }
  int64_t row_id = 0;
  if (existing) {
    if (on_conflict == OnConflict::kKeep) return *existing;
    if (on_conflict == OnConflict::kFail) {
      return InvalidArgumentError("catalog: chunk " + std::to_string(row.chunk_id) +
                                  " of namespace '" + row.name_space + "' already exists");
    }
    REPRISE_RETURN_IF_ERROR(BindRow(w.replace, row));
    REPRISE_RETURN_IF_ERROR(w.replace.Run());
    row_id = *existing;
    REPRISE_RETURN_IF_ERROR(IndexSpansLocked(row_id, row.tokens, /*replace=*/true));
  } else {
    REPRISE_RETURN_IF_ERROR(BindRow(w.insert, row));
    REPRISE_RETURN_IF_ERROR(w.insert.Run());
    row_id = db.last_insert_rowid();
    REPRISE_RETURN_IF_ERROR(IndexSpansLocked(row_id, row.tokens, /*replace=*/false));
  }
  return row_id;
}

Result<std::vector<UpsertResult>> Catalog::UpsertBatch(std::span<const CatalogRow> rows) {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  auto& w = connections_->w;
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                           SqliteTransaction::Begin(connections_->writer));
  std::vector<UpsertResult> results;
  results.reserve(rows.size());
  for (const CatalogRow& row : rows) {
    UpsertResult result;
    bool keep = false;
    {
      ScopedReset reset(w.find_row_id);
      REPRISE_RETURN_IF_ERROR(w.find_row_id.BindText(1, row.name_space));
      REPRISE_RETURN_IF_ERROR(w.find_row_id.BindUint64(2, row.chunk_id));
      REPRISE_ASSIGN_OR_RETURN(const bool found, w.find_row_id.Step());
      if (found) {
        result.row_id = w.find_row_id.ColumnInt64(0);
        const int64_t codec = w.find_row_id.ColumnInt64(2);
        const bool existing_exact =
            IsKnownKvCodec(static_cast<uint8_t>(codec)) &&
            HoldsExactKv(w.find_row_id.ColumnInt64(1) != 0, static_cast<KvCodec>(codec));
        keep = existing_exact && !row.holds_exact_kv();
        std::string file = w.find_row_id.ColumnText(3);
        if (!keep && file != row.file_name) result.displaced_file = std::move(file);
      }
    }
    if (!keep) {
      REPRISE_ASSIGN_OR_RETURN(result.row_id, InsertLocked(row, OnConflict::kReplace));
      result.written = true;
    }
    results.push_back(std::move(result));
  }
  REPRISE_RETURN_IF_ERROR(transaction.Commit());
  return results;
}

Result<int64_t> Catalog::Insert(const CatalogRow& row, OnConflict on_conflict) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                           InsertBatch(std::span<const CatalogRow>(&row, 1), on_conflict));
  return ids.front();
}

Result<std::vector<int64_t>> Catalog::InsertBatch(std::span<const CatalogRow> rows,
                                                  OnConflict on_conflict) {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                           SqliteTransaction::Begin(connections_->writer));
  std::vector<int64_t> ids;
  ids.reserve(rows.size());
  for (const CatalogRow& row : rows) {
    REPRISE_ASSIGN_OR_RETURN(const int64_t id, InsertLocked(row, on_conflict));
    ids.push_back(id);
  }
  REPRISE_RETURN_IF_ERROR(transaction.Commit());
  return ids;
}

Result<std::optional<CatalogRow>> Catalog::Find(std::string_view name_space, kv::ChunkId chunk_id) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.find;
  REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, chunk_id));
  return CollectOne(s);
}

Result<std::optional<CatalogRow>> Catalog::FindByRowId(int64_t row_id) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.find_row;
  REPRISE_RETURN_IF_ERROR(s.BindInt64(1, row_id));
  return CollectOne(s);
}

Result<std::optional<CatalogRow>> Catalog::FindByContent(std::string_view name_space,
                                                         kv::ContentHash content) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.find_content;
  REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, content));
  return CollectOne(s);
}

Result<std::vector<CatalogRow>> Catalog::Children(std::string_view name_space, kv::ChunkId parent,
                                                  int max_rows) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.children;
  REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, parent));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(3, std::max(max_rows, 0)));
  return CollectRows(s, &connections_->bad_rows_skipped);
}

Status Catalog::Delete(std::span<const int64_t> row_ids) {
  if (options_.read_only) return ReadOnlyError();
  if (row_ids.empty()) return Status::Ok();
  MutexLock lock(connections_->write_mutex);
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                           SqliteTransaction::Begin(connections_->writer));
  SqliteStatement& s = connections_->w.delete_row;
  for (const int64_t row_id : row_ids) {
    REPRISE_RETURN_IF_ERROR(s.BindInt64(1, row_id));
    REPRISE_RETURN_IF_ERROR(s.Run());
  }
  return transaction.Commit();
}

Status Catalog::RecordAccess(std::span<const int64_t> row_ids, int64_t time_us, AccessTier tier) {
  if (options_.read_only) return ReadOnlyError();
  if (row_ids.empty()) return Status::Ok();
  MutexLock lock(connections_->write_mutex);
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                           SqliteTransaction::Begin(connections_->writer));
  SqliteStatement& s = connections_->w.record_access;
  for (const int64_t row_id : row_ids) {
    REPRISE_RETURN_IF_ERROR(s.BindInt64(1, row_id));
    REPRISE_RETURN_IF_ERROR(s.BindInt64(2, time_us));
    REPRISE_RETURN_IF_ERROR(s.BindInt64(3, tier == AccessTier::kPool ? 1 : 0));
    REPRISE_RETURN_IF_ERROR(s.BindInt64(4, tier == AccessTier::kFlash ? 1 : 0));
    REPRISE_RETURN_IF_ERROR(s.Run());
  }
  return transaction.Commit();
}

Status Catalog::AddCoAccess(std::string_view name_space, std::span<const kv::ChunkId> chunk_ids) {
  if (options_.read_only) return ReadOnlyError();
  const size_t limit = static_cast<size_t>(std::max(options_.max_co_access_chunks, 0));
  std::vector<kv::ChunkId> ids(chunk_ids.begin(),
                               chunk_ids.begin() + std::min(chunk_ids.size(), limit));
  // Pairs are stored once, smaller id first (as u64), whatever the prompt order.
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.size() < 2) return Status::Ok();
  MutexLock lock(connections_->write_mutex);
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction,
                           SqliteTransaction::Begin(connections_->writer));
  SqliteStatement& s = connections_->w.co_access_add;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = i + 1; j < ids.size(); ++j) {
      REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
      REPRISE_RETURN_IF_ERROR(s.BindUint64(2, ids[i]));
      REPRISE_RETURN_IF_ERROR(s.BindUint64(3, ids[j]));
      REPRISE_RETURN_IF_ERROR(s.Run());
    }
  }
  return transaction.Commit();
}

Status Catalog::RecordSightings(std::span<const SightingRow> rows, int64_t keep_rows) {
  if (options_.read_only) return ReadOnlyError();
  if (rows.empty()) return Status::Ok();
  MutexLock lock(connections_->write_mutex);
  SqliteDb& db = connections_->writer;
  REPRISE_ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db));
  REPRISE_ASSIGN_OR_RETURN(
      SqliteStatement upsert,
      db.Prepare("INSERT INTO sightings (namespace, content_hash, count, last_seen_us) "
                 "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (namespace, content_hash) DO UPDATE SET "
                 "count = MAX(count, excluded.count), "
                 "last_seen_us = MAX(last_seen_us, excluded.last_seen_us)"));
  for (const SightingRow& row : rows) {
    REPRISE_RETURN_IF_ERROR(upsert.BindText(1, row.name_space));
    REPRISE_RETURN_IF_ERROR(upsert.BindUint64(2, row.content));
    REPRISE_RETURN_IF_ERROR(upsert.BindInt64(3, row.count));
    REPRISE_RETURN_IF_ERROR(upsert.BindInt64(4, row.last_seen_us));
    REPRISE_RETURN_IF_ERROR(upsert.Run());
  }
  REPRISE_ASSIGN_OR_RETURN(const int64_t num_rows, db.QueryInt64("SELECT COUNT(*) FROM sightings"));
  if (num_rows > keep_rows) {
    REPRISE_RETURN_IF_ERROR(
        db.Exec("DELETE FROM sightings WHERE rowid IN (SELECT rowid FROM sightings ORDER BY "
                "last_seen_us LIMIT " +
                std::to_string(num_rows - std::max<int64_t>(keep_rows, 0)) + ")"));
  }
  return transaction.Commit();
}

Result<std::vector<SightingRow>> Catalog::RecentSightings(int64_t limit) {
  MutexLock lock(connections_->read_mutex);
  REPRISE_ASSIGN_OR_RETURN(
      SqliteStatement s,
      connections_->reader.Prepare("SELECT namespace, content_hash, count, last_seen_us FROM "
                                   "sightings ORDER BY last_seen_us DESC LIMIT ?1"));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(1, limit));
  std::vector<SightingRow> rows;
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
    if (!has_row) return rows;
    rows.push_back({s.ColumnText(0), s.ColumnUint64(1), s.ColumnInt64(2), s.ColumnInt64(3)});
  }
}

Status Catalog::ClearSightings(std::optional<std::string_view> name_space) {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  SqliteDb& db = connections_->writer;
  if (!name_space) return db.Exec("DELETE FROM sightings");
  REPRISE_ASSIGN_OR_RETURN(SqliteStatement s,
                           db.Prepare("DELETE FROM sightings WHERE namespace = ?1"));
  REPRISE_RETURN_IF_ERROR(s.BindText(1, *name_space));
  return s.Run();
}

Result<int64_t> Catalog::CoAccessCount(std::string_view name_space, kv::ChunkId a, kv::ChunkId b) {
  if (a > b) std::swap(a, b);
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.co_count;
  ScopedReset reset(s);
  REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, a));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(3, b));
  REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
  return has_row ? s.ColumnInt64(0) : int64_t{0};
}

Result<std::vector<CoAccessPartner>> Catalog::CoAccessPartners(std::string_view name_space,
                                                               kv::ChunkId chunk_id, int limit) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.co_partners;
  ScopedReset reset(s);
  REPRISE_RETURN_IF_ERROR(s.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(s.BindUint64(2, chunk_id));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(3, std::max(limit, 0)));
  std::vector<CoAccessPartner> partners;
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
    if (!has_row) return partners;
    partners.push_back({s.ColumnUint64(0), s.ColumnInt64(1)});
  }
}

Status Catalog::SetPinned(std::string_view name_space, std::optional<kv::ChunkId> chunk_id,
                          bool pinned) {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  auto& w = connections_->w;
  if (chunk_id) {
    REPRISE_RETURN_IF_ERROR(w.pin_one.BindText(1, name_space));
    REPRISE_RETURN_IF_ERROR(w.pin_one.BindUint64(2, *chunk_id));
    REPRISE_RETURN_IF_ERROR(w.pin_one.BindInt64(3, pinned ? 1 : 0));
    REPRISE_RETURN_IF_ERROR(w.pin_one.Run());
    if (connections_->writer.changes() == 0) {
      return NotFoundError("catalog: no chunk " + std::to_string(*chunk_id) + " in namespace '" +
                           std::string(name_space) + "'");
    }
    return Status::Ok();
  }
  REPRISE_RETURN_IF_ERROR(w.pin_namespace.BindText(1, name_space));
  REPRISE_RETURN_IF_ERROR(w.pin_namespace.BindInt64(2, pinned ? 1 : 0));
  return w.pin_namespace.Run();
}

Result<std::vector<SpanMatch>> Catalog::SearchSpans(std::string_view name_space,
                                                    std::span<const uint64_t> fingerprints,
                                                    int max_rows_per_fingerprint, int limit) {
  std::vector<SpanMatch> out;
  if (limit <= 0 || fingerprints.empty() || max_rows_per_fingerprint < 1) return out;
  MutexLock lock(connections_->read_mutex);
  // One read transaction (one snapshot) for the whole search.
  REPRISE_RETURN_IF_ERROR(connections_->r.begin.Run());
  std::unordered_map<uint64_t, int> counts;  // row id -> shared fingerprints
  Status status = Status::Ok();
  SqliteStatement& s = connections_->r.span_rows;
  std::vector<int64_t> rows;
  for (const uint64_t f : fingerprints) {
    ScopedReset reset(s);
    rows.clear();
    if (status = s.BindUint64(1, f); !status.ok()) break;
    if (status = s.BindText(2, name_space); !status.ok()) break;
    if (status = s.BindInt64(3, int64_t{max_rows_per_fingerprint} + 1); !status.ok()) break;
    while (true) {
      Result<bool> has_row = s.Step();
      if (!has_row.ok()) {
        status = has_row.status();
        break;
      }
      if (!*has_row) break;
      rows.push_back(s.ColumnInt64(0));
    }
    if (!status.ok()) break;
    if (rows.size() > static_cast<size_t>(max_rows_per_fingerprint)) continue;  // boilerplate
    for (const int64_t row : rows) ++counts[static_cast<uint64_t>(row)];
  }
  const Status ended = connections_->r.commit.Run();
  if (!status.ok()) return status;
  if (!ended.ok()) return ended;
  for (const kv::SpanCandidate& c : kv::RankSpanCandidates(counts, limit)) {
    out.push_back({static_cast<int64_t>(c.chunk_id), c.num_shared});
  }
  return out;
}

Status Catalog::Optimize() {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  return connections_->writer.Exec("PRAGMA optimize");
}

Result<std::vector<CatalogRow>> Catalog::ListRows(std::optional<std::string_view> name_space) {
  MutexLock lock(connections_->read_mutex);
  if (!name_space) return CollectRows(connections_->r.list_all, &connections_->bad_rows_skipped);
  SqliteStatement& s = connections_->r.list_namespace;
  REPRISE_RETURN_IF_ERROR(s.BindText(1, *name_space));
  return CollectRows(s, &connections_->bad_rows_skipped);
}

Result<std::vector<std::string>> Catalog::DropInvalidRows() {
  if (options_.read_only) return ReadOnlyError();
  std::vector<int64_t> row_ids;
  std::vector<std::string> files;
  {
    MutexLock lock(connections_->read_mutex);
    SqliteStatement& s = connections_->r.invalid_rows;
    ScopedReset reset(s);
    while (true) {
      REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
      if (!has_row) break;
      row_ids.push_back(s.ColumnInt64(0));
      files.push_back(s.ColumnText(1));
    }
  }
  REPRISE_RETURN_IF_ERROR(Delete(row_ids));
  return files;
}

int64_t Catalog::num_bad_rows_skipped() const {
  return connections_->bad_rows_skipped.load(std::memory_order_relaxed);
}

Status Catalog::AddToCounter(std::string_view key, int64_t delta) {
  if (options_.read_only) return ReadOnlyError();
  MutexLock lock(connections_->write_mutex);
  SqliteStatement& s = connections_->w.add_counter;
  REPRISE_RETURN_IF_ERROR(s.BindText(1, key));
  REPRISE_RETURN_IF_ERROR(s.BindInt64(2, delta));
  return s.Run();
}

Result<int64_t> Catalog::Counter(std::string_view key) {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.counter;
  ScopedReset reset(s);
  REPRISE_RETURN_IF_ERROR(s.BindText(1, key));
  REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
  return has_row ? s.ColumnInt64(0) : int64_t{0};
}

Result<std::vector<std::string>> Catalog::ListNamespaces() {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.namespaces;
  ScopedReset reset(s);
  std::vector<std::string> names;
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
    if (!has_row) return names;
    names.push_back(s.ColumnText(0));
  }
}

Result<CatalogStats> Catalog::Stats() {
  MutexLock lock(connections_->read_mutex);
  SqliteStatement& s = connections_->r.stats;
  ScopedReset reset(s);
  REPRISE_ASSIGN_OR_RETURN(const bool has_row, s.Step());
  CatalogStats stats;
  if (!has_row) return stats;
  stats.num_chunks = s.ColumnInt64(0);
  stats.file_bytes = s.ColumnInt64(1);
  stats.num_namespaces = s.ColumnInt64(2);
  stats.num_pinned = s.ColumnInt64(3);
  return stats;
}

}  // namespace reprise::store
