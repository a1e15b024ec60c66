// KvPreparer: places a plan's reused KV into a session's cache on a background thread while
// the caller computes (DESIGN.md §7, the first step of the IO-CPU-compute pipeline).
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
// A source that fails to load stops the preparer; ReadyUntil then returns false and the
// caller plans again (the loader's WaitAll names the failed sources).
#pragma once

#include <atomic>
#include <condition_variable>
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

class KvPreparer {
 public:
  // Starts placing at once. Borrows everything: `plan`, `loader`, `cache` and `positions`
  // (the prompt tokens' positions) must outlive the preparer; the caller must not change
  // `cache`'s reused slots meanwhile.
  KvPreparer(const reuse::ReusePlan& plan, reuse::KvLoader& loader, kv::KvCache& cache,
             std::span<const int32_t> positions, const RopeLayout& rope,
             const kernels::KernelSet& kernels);
  // Stops after the run being placed and waits for the thread.
  ~KvPreparer();
  KvPreparer(const KvPreparer&) = delete;
  KvPreparer& operator=(const KvPreparer&) = delete;

  // Blocks until every reused token before `end` is placed, then records the positions of
  // the reused slots before `end` not recorded yet. False when a source failed to load (its
  // tokens are not placed). On the caller's thread only.
  bool ReadyUntil(int end);

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

  const reuse::ReusePlan& plan_;
  reuse::KvLoader& loader_;
  kv::KvCache& cache_;
  const std::span<const int32_t> positions_;
  const RopeLayout rope_;
  const kernels::KernelSet& kernels_;
  std::vector<Run> runs_;
  size_t num_committed_runs_ = 0;  // runs whose slot positions are recorded (caller's)
  double wait_ms_ = 0.0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable placed_;
  size_t num_placed_runs_ REPRISE_GUARDED_BY(mutex_) = 0;
  bool failed_ REPRISE_GUARDED_BY(mutex_) = false;
  double place_ms_ REPRISE_GUARDED_BY(mutex_) = 0.0;
  std::thread worker_;  // last: started once everything above is set
};

}  // namespace reprise::engine
