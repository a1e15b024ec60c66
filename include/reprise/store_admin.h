// StoreAdmin: looks after a persistent KV store folder (EngineOptions::store_dir) without
// loading a model — what `reprise cache` does, for apps too: how much it holds, which chunks,
// pin what must stay, repair and trim it, delete a namespace's chunks (a user who signs out).
//
// A store may be open in other processes at the same time (engines serving from it): every
// operation here is safe beside them; an admin that finds the store in use does not clean up
// leftover files (StoreStatus::recovery_skipped). Thread-compatible: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/engine.h"
#include "reprise/status.h"

namespace reprise {

namespace store {
class ChunkStore;
}  // namespace store

struct StoreAdminOptions {
  std::string dir;  // the store folder; required
  // The flash budget Gc enforces, in MiB (1 .. 2^40).
  int64_t disk_mb = 8192;
  // Only look (Status, List): nothing is created, repaired or deleted; the folder must hold a
  // store already (else NotFound).
  bool read_only = false;
};

// The store at one moment.
struct StoreStatus {
  int64_t chunks = 0;  // in the catalog (all namespaces)
  int64_t bytes_on_disk = 0;
  int64_t bytes_in_memory = 0;  // this handle's pool (an admin keeps none)
  int64_t namespaces = 0;
  // Health, persisted in the catalog (every process and run since it was made): chunk files
  // that failed their checks and were dropped, unreadable catalog rows dropped, catalog
  // rebuilds.
  int64_t corrupt_dropped = 0;
  int64_t bad_rows_dropped = 0;
  int64_t catalog_rebuilds = 0;
  // This open: a damaged catalog was set aside under this name (in the folder) and rebuilt
  // from the KV files, restoring rows_restored rows.
  bool catalog_rebuilt = false;
  std::string catalog_set_aside;
  int64_t rows_restored = 0;
  // Another process had the store open: leftovers (temporary and orphan files) were not
  // cleaned up.
  bool recovery_skipped = false;
  bool dir_mode_fixed = false;  // the folder's permissions were narrowed to the owner
  // The catalog exists but cannot be read: the store is not usable. Empty when fine.
  std::string catalog_error;
};

// One stored chunk (a catalog row).
struct StoredChunk {
  std::string name_space;
  uint64_t chunk_id = 0;   // the chunk's id: its content and the path of chunks before it
  uint64_t parent_id = 0;  // the chunk before it on its path (0 = the root)
  int tokens = 0;
  int64_t bytes = 0;  // of its file
  // Exact KV: bit for bit what a prefill of its path computes (not blended, not after blended
  // KV, not kept in a lossy codec).
  bool exact = false;
  // How its KV was made and kept ("computed", "blended r=0.25 @layer 1", "computed after
  // approximate KV", "computed, kept lossy (int8-hadamard)", ...).
  std::string made;
  bool pinned = false;
  KvCodec codec = KvCodec::kF16;
  int64_t accesses = 0;
};

// What Gc did.
struct StoreGcReport {
  int64_t rows_missing_file = 0;  // catalog rows whose file was gone or bad: dropped
  int64_t orphan_files = 0;       // files no row named: deleted
  int64_t corrupt = 0;            // files that failed their checks: dropped
  int64_t evicted = 0;            // chunks evicted to meet the flash budget
  // The catalog bytes of the evicted chunks; -1 (unknown) when bad rows were dropped too.
  int64_t evicted_bytes = 0;
  int64_t catalog_bytes_dropped = 0;  // of every row gc removed, for any reason
  int64_t bytes_freed = 0;            // by the repairs (not the eviction)
  bool recovery_skipped = false;      // another process had the store open: leftovers stayed
};

// Ok, or InvalidArgument saying what is wrong with `name` as a namespace name: it must be
// non-empty, at most 128 bytes of valid UTF-8, without control characters.
reprise::Status ValidateNamespaceName(std::string_view name);

// Where a user's cache folder is looked for (the caller reads its environment). Empty = unset.
struct CacheDirEnvironment {
  std::string xdg_cache_home;
  std::string home;
  std::string passwd_home;  // the home folder in the password database
  std::string xdg_runtime_dir;
};

// The user's Reprise cache folder (the default store is `<it>/store`, calibrations beside):
// $XDG_CACHE_HOME/reprise, else $HOME/.cache/reprise, else <passwd home>/.cache/reprise, else
// $XDG_RUNTIME_DIR/reprise — never a shared, predictable folder such as /tmp; relative values
// are ignored. It is not created. Errors: Unavailable, saying what to set, when none is usable.
Result<std::string> ChooseCacheDir(const CacheDirEnvironment& environment);

// Gc's progress: `done` of `total` files checked.
using StoreProgress = std::function<void(int64_t done, int64_t total)>;

class StoreAdmin {
 public:
  // Opens (creating unless read_only) the store in options.dir. Errors: InvalidArgument (no
  // folder, a budget out of range), NotFound (read_only and no store there), IoError,
  // Corrupt (a catalog that cannot be read or rebuilt).
  static Result<std::unique_ptr<StoreAdmin>> Open(const StoreAdminOptions& options);
  ~StoreAdmin();
  StoreAdmin(const StoreAdmin&) = delete;
  StoreAdmin& operator=(const StoreAdmin&) = delete;

  const std::string& dir() const { return dir_; }
  int64_t disk_budget_bytes() const;

  // Counts and health of the whole store, or of one namespace (chunks and bytes_on_disk
  // then count that namespace's rows only).
  Result<StoreStatus> Status(const std::optional<std::string>& name_space = std::nullopt);
  // The stored chunks of one namespace, or of all.
  Result<std::vector<StoredChunk>> List(
      const std::optional<std::string>& name_space = std::nullopt);
  // Pins (or unpins) one chunk, or every chunk of a namespace: pinned chunks are never
  // evicted. Errors: NotFound (no such chunk), InvalidArgument (read-only).
  reprise::Status SetPinned(const std::string& name_space, std::optional<uint64_t> chunk_id,
                            bool pinned);
  // Verifies every file, drops bad rows and deletes orphans, then evicts down to the flash
  // budget. Errors: InvalidArgument (read-only), IoError.
  Result<StoreGcReport> Gc(const StoreProgress& progress = {});
  // Deletes the chunks of one namespace, or of every namespace. Errors: InvalidArgument
  // (read-only), IoError.
  reprise::Status Clear(const std::optional<std::string>& name_space);

 private:
  StoreAdmin() = default;
  std::string dir_;
  bool read_only_ = false;
  std::unique_ptr<store::ChunkStore> store_;
};

}  // namespace reprise
