// The store's settings (StoreOptions) and reports (StoreStats, GcReport): shared by
// ChunkStore and the tiers it composes (memory_pool.h, flash_tier.h, write_back.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "store/eviction_cost.h"
#include "store/file_system.h"
#include "store/kv_codec.h"
#include "store/remote_tier.h"

namespace reprise::store {

struct StoreOptions {
  std::string dir;                          // created 0700 when missing
  int64_t pool_bytes = int64_t{512} << 20;  // memory pool budget
  int64_t disk_bytes = int64_t{8} << 30;    // flash budget (KV files)
  KvCodec codec = KvCodec::kF16;
  // Files of another model are never used; 0 opens the store for maintenance only (cache
  // commands): chunks are listed but not loaded.
  uint64_t model_fingerprint = 0;
  CostModel costs{1000.0 * 1024, 10.0, 2.5};
  bool cost_aware = true;  // false: LRU in both tiers (for ablations)
  bool prefetch = true;
  // Prefetch on the write-back thread after each recorded request (RunIdleWork then only
  // asks for it); false: only when RunIdleWork is called, on the caller's thread.
  bool prefetch_in_background = true;
  double prefetch_threshold = 0.25;
  int writeback_batch = 16;
  // Admission control (admission.h): a chunk is written to flash once its content has been
  // seen this many times in the namespace, or at once when declared reusable or pinned.
  // 1: every chunk is written (no admission control).
  int admit_after_sightings = 1;
  // Sighting counts kept (in memory and in the catalog); the least recently seen go first.
  int64_t max_sightings = 32768;
  // Injected for tests: the file system (borrowed; null = POSIX) and the clock (seconds).
  FileSystem* file_system = nullptr;
  std::function<double()> clock;
  bool read_only = false;  // open without writing (cache commands that only read)
  // A remote tier shared with other servers (remote_tier.h; remote.url empty: none). Chunks
  // written back to flash are sent there too; lookups that miss memory and flash ask it.
  RemoteOptions remote;
  // The KV shape of this model: a remote chunk of another shape is a bad value (0: not
  // checked; the loader checks the shape again before use).
  int kv_num_layers = 0;
  int kv_num_kv_heads = 0;
  int kv_head_dim = 0;
};

struct StoreStats {
  int64_t chunks = 0;  // rows in the catalog
  int64_t bytes_on_disk = 0;
  int64_t bytes_in_pool = 0;
  int64_t chunks_in_pool = 0;
  int64_t dirty_chunks = 0;  // waiting for write-back
  int64_t namespaces = 0;
  int64_t corrupt_dropped = 0;
  int64_t hits_pool = 0;
  int64_t hits_flash = 0;
  int64_t misses = 0;
  int64_t pool_evictions = 0;
  int64_t flash_evictions = 0;
  int64_t chunks_written = 0;
  int64_t prefetched = 0;
  // Admission control (this process): chunks kept in memory only until they recur (now in
  // the pool), admitted when they did, and dropped by the pool before they recurred (never
  // written: the flash writes and evictions they did not cause).
  int64_t chunks_awaiting_admission = 0;
  int64_t admitted_on_recurrence = 0;
  int64_t dropped_unadmitted = 0;
  double write_ms_total = 0;      // on the write-back thread
  double write_ms_on_caller = 0;  // writes on request threads: 0 by design
  bool persistence_enabled = true;
  std::string persistence_error;  // why persistence is off
  // Catalog health. corrupt_dropped above is persisted in the catalog (all processes, all
  // runs since the catalog was created): chunk files that failed their checks, wrong sizes
  // found at open, and unreadable catalog rows (also counted here:)
  int64_t bad_rows_dropped = 0;  // persisted: catalog rows that could not be read
  int64_t catalog_rebuilds = 0;  // persisted in the rebuilt catalog
  // This open: a damaged catalog was set aside under this name (in the store folder) and
  // rebuilt from the KV files, restoring rows_restored rows.
  bool catalog_rebuilt = false;
  std::string catalog_set_aside;
  int64_t rows_restored = 0;
  // The catalog exists but could not be opened (damaged, and this process may not rebuild
  // it): the store serves from memory only. Empty when fine.
  std::string catalog_error;
  // This process: chunks not persisted because their own file could not be written (e.g. a
  // folder in its place); persistence stays on for the others.
  int64_t chunks_not_persisted = 0;
  // This process: inserts of approximate KV refused because the store holds exact KV of the
  // same chunk (exact KV is never replaced by approximate KV), in memory or on flash.
  int64_t inexact_kept_out = 0;
  // This open: another process had the store open, so leftovers were not deleted.
  bool recovery_skipped = false;
  bool dir_mode_fixed = false;  // the store folder had group/other bits; now 0700
  // The remote tier (this process; all 0 without one). remote_hits: chunks fetched from it
  // that passed every check; remote_misses: lookups it could not serve (no such key, or the
  // server unavailable); remote_bad_values: values that failed a check (never used);
  // remote_unavailable: operations that gave up (down, timed out, backing off, busy);
  // remote_chunks_sent / remote_send_failures: write-back's chunks sent or not (refused by a
  // full server, or the server unavailable).
  std::string remote_server;  // its address without credentials; empty: no remote tier
  bool remote_connected = false;
  int64_t remote_hits = 0;
  int64_t remote_misses = 0;
  int64_t remote_bad_values = 0;
  int64_t remote_unavailable = 0;
  int64_t remote_chunks_sent = 0;
  int64_t remote_send_failures = 0;
  int64_t remote_bytes_read = 0;
  int64_t remote_bytes_written = 0;
};

struct GcReport {
  int64_t rows_missing_file = 0, orphan_files = 0, corrupt = 0, evicted = 0;
  int64_t bytes_freed = 0;
  // Another process had the store open: temporaries and orphan files were left alone.
  bool recovery_skipped = false;
};

}  // namespace reprise::store
