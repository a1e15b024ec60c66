// KvLoader: brings in the KV of a plan's sources — the step between pure planning
// (reuse_planner.h) and placing the KV in a session (docs/design.md §5-7).
//
// A source the planner found in memory is taken by reference; the others are read through
// the cache (ChunkCache::Find: from flash into the memory pool) on one background thread, in
// the order the prompt first uses them, so that a caller placing the first source's KV
// overlaps the read of the next. Every source is counted as a use (Find) once.
//
// Nothing is used that the plan did not expect: a source's KV must come with the planned id,
// content hash and tokens (the index a plan came from may disagree with a chunk's file), the
// model's shape, and one K and V row per token. A source that fails (evicted since planning,
// a damaged file, a catalog row that disagrees with its file) is reported by id, never used:
// the caller plans again without it.
//
// One loader serves one prompt, on the thread that made it (Wait is not for several threads).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "kv/chunk_cache.h"
#include "kv/kv_cache.h"
#include "reuse/reuse_planner.h"

namespace reprise::reuse {

// Whether `loaded` is the KV `planned` promised, in the session's layout `shape` (its layers,
// KV heads and head dim; the capacity is not a chunk's).
bool IsPlannedKv(const kv::ChunkEntry& planned, const kv::ChunkEntry& loaded,
                 const kv::KvShape& shape);

class KvLoader {
 public:
  // Starts at once: memory sources are resolved here, the reads start in the background.
  // Borrows `cache`, which must outlive the loader (null only for a plan without sources);
  // copies what it needs of `plan`.
  KvLoader(kv::ChunkCache* cache, const ReusePlan& plan, const kv::KvShape& shape);
  // Waits for the background reads (they are not interrupted: each is one file).
  ~KvLoader();
  KvLoader(const KvLoader&) = delete;
  KvLoader& operator=(const KvLoader&) = delete;

  // Blocks until source `index` (into the plan's sources) is in: its KV, or null when it
  // failed. Requires: 0 <= index < number of sources.
  std::shared_ptr<const kv::ChunkKv> Wait(int index);
  // Blocks until every source is in; the ids of those that failed.
  std::vector<kv::ChunkId> WaitAll();

  // Sources that were in memory when planned, and those read through the cache.
  int num_from_memory() const { return num_from_memory_; }
  int num_read() const { return static_cast<int>(read_order_.size()); }
  // How long Wait and WaitAll blocked in all: the reading the caller's work did not hide.
  double wait_ms() const { return wait_ms_; }

 private:
  struct Slot {
    std::shared_ptr<const kv::ChunkEntry> planned;
    std::shared_ptr<const kv::ChunkKv> kv;  // set when loaded and verified
    bool used = false;                      // some token of the prompt comes from it
    bool done = false;
  };
  void ReadAll();

  kv::ChunkCache* cache_;
  const kv::KvShape shape_;
  std::vector<int> read_order_;  // sources to read, by first use in the prompt
  int num_from_memory_ = 0;
  double wait_ms_ = 0.0;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Slot> slots_ REPRISE_GUARDED_BY(mutex_);
  std::thread reader_;  // last: started once everything above is set
};

}  // namespace reprise::reuse
