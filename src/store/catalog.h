// Catalog: the flash tier's metadata index in SQLite (docs/design.md §6) — which chunks are on
// flash, where their KV files are, how they hang in the prefix tree, their access statistics,
// co-access counts and the span fingerprints of their tokens (the sub-chunk candidate index).
// KV tensors and chunk text are not here (kv_file.h).
//
// Storage: one database file (the store uses `<dir>/catalog.db`, kCatalogFileName) in WAL
// mode with synchronous=NORMAL. NORMAL syncs the WAL at checkpoints rather than at every
// commit: a power loss can lose the last commits but never corrupts the database. That is
// the right trade for a cache index, because the store writes and fsyncs a KV file before its
// row and deletes a row before its file: a lost insert leaves an orphan file and a lost delete
// a row without a file, and recovery turns both into plain cache misses (recovery.h). Never
// wrong KV: a file's checksums are verified when it is read.
//
// Lookups (Find, FindByContent, Children, SearchSpans, ...) use a reader connection and
// mutations a writer connection, so that WAL lets lookups proceed while the write-back thread
// commits a batch. Statements are prepared once at Open.
//
// Rows are keyed by (namespace, chunk_id); chunk ids, parents and content hashes are the u64
// values of kv/chunk.h. Times are caller-supplied microseconds (inject the clock).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/chunk.h"
#include "store/admission.h"
#include "store/kv_codec.h"

namespace reprise::store {

inline constexpr std::string_view kCatalogFileName = "catalog.db";

enum class AccessTier : uint8_t { kPool, kFlash };

// What Insert does when (namespace, chunk_id) already has a row.
enum class OnConflict : uint8_t {
  kFail,     // InvalidArgument; in a batch, nothing of the batch is inserted
  kKeep,     // keep the existing row and return its row id (the caller drops its new file
             // unless it has the row's name, as KvFileName gives)
  kReplace,  // overwrite every column of the existing row, keeping its row id
};

struct CatalogRow {
  int64_t row_id = 0;  // assigned by Insert (ignored there)
  std::string name_space;
  kv::ChunkId chunk_id = 0;
  kv::ChunkId parent_id = kv::kRootChunkId;
  kv::ContentHash content_hash = 0;
  // Computed exactly: a full prefill of the chunk's path. The file holds exact KV only when its
  // codec is lossless too (holds_exact_kv).
  bool exact = false;
  int32_t num_tokens = 0;       // set by lookups; Insert stores tokens.size()
  std::vector<int32_t> tokens;  // empty in ListRows results
  uint64_t model_fingerprint = 0;
  KvCodec codec = KvCodec::kF16;
  std::string file_name;  // relative to the store folder
  uint64_t file_bytes = 0;
  uint64_t payload_checksum = 0;
  bool pinned = false;
  int64_t created_us = 0;
  int64_t last_access_us = 0;
  int64_t access_count = 0;
  int64_t pool_hits = 0;
  int64_t flash_hits = 0;
  kv::KvProvenance provenance;

  bool holds_exact_kv() const { return HoldsExactKv(exact, codec); }
};

// What UpsertBatch did with one row.
struct UpsertResult {
  int64_t row_id = 0;
  bool written = false;  // false: the existing row, holding exact KV, was kept
  // The replaced row's file when its name differs from the new row's (the caller removes it).
  std::string displaced_file;
};

struct CatalogStats {
  int64_t num_chunks = 0;
  int64_t file_bytes = 0;
  int64_t num_namespaces = 0;
  int64_t num_pinned = 0;
};

// A row sharing span fingerprints with a query (SearchSpans).
struct SpanMatch {
  int64_t row_id = 0;
  int num_shared = 0;
};

struct CoAccessPartner {
  kv::ChunkId chunk_id = 0;
  int64_t count = 0;
};

struct CatalogOptions {
  // Open without writing: mutations fail with Unavailable; the schema must be current. A WAL
  // database needs its -shm file even to be read; when that cannot be created (a read-only
  // folder, a full disk) the catalog is opened immutable instead (sqlite_db.h), seeing what
  // was checkpointed into the database file.
  bool read_only = false;
  // With read_only: open immutable right away.
  bool immutable = false;
  int busy_timeout_ms = 5000;
  // SQLite page cache of the lookup connection.
  int reader_cache_bytes = 64 << 20;
  // AddCoAccess counts pairs among at most this many chunks of one prompt.
  int max_co_access_chunks = 64;
};

class Catalog {
 public:
  // Opens or creates the database at `path` and migrates it to kCatalogSchemaVersion.
  // Errors: NotFound (read-only and missing), Corrupt (not a database), Unimplemented (schema
  // newer than this build), Unavailable (read-only and needing migration), IoError.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& path,
                                               const CatalogOptions& options = {});
  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Inserts one row and indexes its span fingerprints; returns the row id.
  // Errors: InvalidArgument (conflict under kFail), Unavailable (read-only or busy),
  // ResourceExhausted (disk full), IoError.
  Result<int64_t> Insert(const CatalogRow& row, OnConflict on_conflict = OnConflict::kFail);
  // Inserts all rows in ONE transaction — all or nothing — and returns their row ids in order.
  Result<std::vector<int64_t>> InsertBatch(std::span<const CatalogRow> rows,
                                           OnConflict on_conflict = OnConflict::kFail);

  // Inserts each row, or replaces the row of its (namespace, chunk_id) — unless that row holds
  // exact KV and the new one does not: exact KV is never replaced by approximate KV. One
  // transaction for the batch, the comparison inside it, so this holds between processes
  // sharing the catalog too. Errors: as InsertBatch.
  Result<std::vector<UpsertResult>> UpsertBatch(std::span<const CatalogRow> rows);

  // The row of chunk `chunk_id`, or nullopt. Errors: Corrupt for a row that cannot be read.
  Result<std::optional<CatalogRow>> Find(std::string_view name_space, kv::ChunkId chunk_id);
  Result<std::optional<CatalogRow>> FindByRowId(int64_t row_id);
  // A row with this content hash — exact ones first, then the most recently used — or nullopt.
  Result<std::optional<CatalogRow>> FindByContent(std::string_view name_space,
                                                  kv::ContentHash content);
  // The rows whose parent is `parent`, most recently used first, at most `max_rows`.
  Result<std::vector<CatalogRow>> Children(std::string_view name_space, kv::ChunkId parent,
                                           int max_rows = 256);

  // Removes rows (and their span fingerprints and co-access pairs) in one transaction; unknown ids
  // are skipped. The caller removes the files afterwards.
  Status Delete(std::span<const int64_t> row_ids);

  // For each row: last access = time_us, access_count + 1, and one hit for `tier`.
  Status RecordAccess(std::span<const int64_t> row_ids, int64_t time_us, AccessTier tier);

  // Counts one co-access for every pair of distinct chunks among `chunk_ids` (the chunks one
  // prompt used), at most options.max_co_access_chunks of them (the first ones).
  Status AddCoAccess(std::string_view name_space, std::span<const kv::ChunkId> chunk_ids);
  Result<int64_t> CoAccessCount(std::string_view name_space, kv::ChunkId a, kv::ChunkId b);
  // The chunks most often used together with `chunk_id`, highest count first.
  Result<std::vector<CoAccessPartner>> CoAccessPartners(std::string_view name_space,
                                                        kv::ChunkId chunk_id, int limit);

  // Admission control's sightings (admission.h), one transaction: each row's count becomes
  // the larger of the stored and the given one (so two processes that both counted never
  // lower it), its time the later. Then only the `keep_rows` most recently seen rows stay.
  Status RecordSightings(std::span<const SightingRow> rows, int64_t keep_rows);
  // The `limit` most recently seen rows, latest first.
  Result<std::vector<SightingRow>> RecentSightings(int64_t limit);
  // Forgets the sightings of `name_space`, or every sighting.
  Status ClearSightings(std::optional<std::string_view> name_space);

  // Pins or unpins one chunk, or every chunk of the namespace when `chunk_id` is nullopt.
  // Errors: NotFound when the given chunk has no row.
  Status SetPinned(std::string_view name_space, std::optional<kv::ChunkId> chunk_id, bool pinned);

  // The rows of the namespace sharing any of `fingerprints` (kv::SpanFingerprints of a query
  // span), most shared first, then by row id; at most `limit`. A fingerprint held by more
  // than `max_rows_per_fingerprint` rows of the namespace is boilerplate and is skipped.
  // Every row is indexed by Insert (rows of catalogs older than schema version 3 at Open).
  Result<std::vector<SpanMatch>> SearchSpans(std::string_view name_space,
                                             std::span<const uint64_t> fingerprints,
                                             int max_rows_per_fingerprint, int limit);

  // Removes the rows that cannot be read back (an unknown codec, a bad token count, a token
  // blob of the wrong size) and returns their file names, for the caller to remove. Reads
  // skip such rows meanwhile (num_bad_rows_skipped). Errors: those of Delete.
  Result<std::vector<std::string>> DropInvalidRows();
  // Rows that lookups and listings skipped because they could not be read, since Open.
  int64_t num_bad_rows_skipped() const;

  // Persistent counters in the meta table (e.g. "corrupt_dropped"), 0 until first added.
  Status AddToCounter(std::string_view key, int64_t delta);
  Result<int64_t> Counter(std::string_view key);

  // Every row of the namespace, or of all namespaces when nullopt, in row id order, without
  // tokens. Rows that cannot be read are skipped (DropInvalidRows).
  Result<std::vector<CatalogRow>> ListRows(std::optional<std::string_view> name_space);
  Result<std::vector<std::string>> ListNamespaces();
  Result<CatalogStats> Stats();

  // Refreshes SQLite's statistics (PRAGMA optimize): for idle time; lookups work without it.
  Status Optimize();

 private:
  struct Connections;
  explicit Catalog(std::unique_ptr<Connections> connections, const CatalogOptions& options);

  Result<int64_t> InsertLocked(const CatalogRow& row, OnConflict on_conflict);
  // Writes the span fingerprints of `tokens` for `row_id` (replacing what it had).
  Status IndexSpansLocked(int64_t row_id, std::span<const int32_t> tokens, bool replace);
  // Indexes the rows a migration to schema version 3 found, once.
  Status BackfillSpansLocked();

  std::unique_ptr<Connections> connections_;
  const CatalogOptions options_;
};

}  // namespace reprise::store
