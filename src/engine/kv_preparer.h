// KvPreparer: places a plan's reused KV into a session's cache on a background thread while
// the caller computes (docs/design.md §7, the first step of the IO-CPU-compute pipeline).
//
// The loader (reuse/kv_loader.h) reads the sources; the preparer takes the reused runs of the
// prompt in order — each run of tokens from consecutive tokens of one source — waits for its
// source and writes its K (re-rotated to the new positions) and V rows into the run's slots.
// The caller, before each graph call over tokens [begin, end), calls ReadyUntil(end): it
// waits until every run that starts before `end` is placed and then records those slots'
// positions, which is what makes them visible to attention. The preparer writes only rows of
// slots whose positions are not recorded yet, and a graph call that sees `end` slots reads no
// slot at or after `end`: the two never touch the same memory.
//
// The shard pipeline (seed §6.1; docs/design.md §7): given where the graph calls end and where the
// graphs' shards (layer groups) begin, the preparer places the runs each call needs shard by
// shard — layers of shard 0 of every run of the call, then shard 1, ... — and the caller, before
// shard s of a call, asks ReadyUntil(end, the shard's end layer). So a call's first shard runs
// while the later shards' KV is still being placed, and the next call's KV after that. The
// preparer then writes rows of recorded slots too, but only in layers of shards the caller
// has not been let run: a (slot, layer) row is never written and read at once.
//
// A source that fails to load stops the preparer; ReadyUntil then returns false and the
// caller plans again (the loader's WaitAll names the failed sources).
#pragma once

#include <atomic>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "engine/kv_transfer.h"
#include "kv/kv_cache.h"
#include "reuse/kv_loader.h"
#include "reuse/reuse_planner.h"

namespace reprise::engine {

// The order in which the preparer places the reused KV.
struct KvPreparationOrder {
  // Where the caller's graph calls end (prompt tokens, ascending): the runs a call needs are
  // placed before those of later calls. Empty = run by run.
  std::vector<int> call_ends;
  // The first layer of every shard but the first (ascending, inside (0, num_layers)): a
  // call's runs are placed shard by shard. Empty = all layers of a run at once.
  std::vector<int> shard_first_layers;
};

class KvPreparer {
 public:
  // Starts placing at once. Borrows everything: `plan`, `loader`, `cache` and `positions`
  // (the prompt tokens' positions) must outlive the preparer; the caller must not change
  // `cache`'s reused slots meanwhile.
  KvPreparer(const reuse::ReusePlan& plan, reuse::KvLoader& loader, kv::KvCache& cache,
             std::span<const int32_t> positions, const RopeLayout& rope,
             const kernels::KernelSet& kernels, KvPreparationOrder order = {});
  // Stops after the run being placed and waits for the thread.
  ~KvPreparer();
  KvPreparer(const KvPreparer&) = delete;
  KvPreparer& operator=(const KvPreparer&) = delete;

  // Blocks until every reused token before `end` is placed in layers [0, end_layer) (every
  // layer by default), then records the positions of the reused slots before `end` not
  // recorded yet. False when a source failed to load (its tokens are not placed). On the
  // caller's thread only.
  bool ReadyUntil(int end, int end_layer = std::numeric_limits<int>::max());

  // Time ReadyUntil blocked in all (what computing did not hide), and time the background
  // thread spent placing.
  double wait_ms() const { return wait_ms_; }
  double place_ms() const;

 private:
  // One run: prompt tokens [begin, end) from tokens [source_token, ...) of a source.
  struct Run {
    int begin = 0;
    int end = 0;
    int source = 0;
    int source_token = 0;
  };
  void PlaceAll();
  // Places layer group `group` of run `r` (waiting for its source on group 0); false when the
  // source failed.
  bool Place(size_t r, size_t group);

  const reuse::ReusePlan& plan_;
  reuse::KvLoader& loader_;
  kv::KvCache& cache_;
  const std::span<const int32_t> positions_;
  const RopeLayout rope_;
  const kernels::KernelSet& kernels_;
  std::vector<Run> runs_;
  // Layer groups [group_first_layer_[g], group_first_layer_[g + 1]); the last entry is the
  // number of layers.
  std::vector<int> group_first_layer_;
  // The runs in placing windows: window w is runs [window_begin_[w], window_begin_[w + 1]),
  // placed group by group.
  std::vector<size_t> window_begin_;
  std::vector<std::shared_ptr<const kv::ChunkKv>> run_kv_;  // the preparer thread's
  size_t num_committed_runs_ = 0;  // runs whose slot positions are recorded (caller's)
  double wait_ms_ = 0.0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable placed_;
  // Per run, how many of its layer groups are placed.
  std::vector<int> placed_groups_ REPRISE_GUARDED_BY(mutex_);
  bool failed_ REPRISE_GUARDED_BY(mutex_) = false;
  double place_ms_ REPRISE_GUARDED_BY(mutex_) = 0.0;
  std::thread worker_;  // last: started once everything above is set
};

}  // namespace reprise::engine
