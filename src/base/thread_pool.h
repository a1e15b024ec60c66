// ThreadPool: the one way math runs on several cores (docs/style.md §6).
//
// A pool owns N-1 worker threads; the thread that calls ParallelFor is the N-th and does its
// share of the work. ParallelFor splits [0, n) into at most N contiguous ranges, aligned to
// `grain`, by a static rule that depends only on (n, grain, N): the same call always gives
// the same split, so results are reproducible run to run. Kernels never start threads; the
// graph executor calls ParallelFor around them with [begin, end) ranges.
//
// Latency is what matters: a decode step runs a few hundred parallel regions per token, so a
// region must cost well under a few microseconds (about 0.4 us of fork/join measured on the
// 2-core dev machine). Workers spin (with a pause instruction) for `spin_us` after each
// region before they sleep on a futex; a region allocates nothing (the callable is passed as
// a function pointer plus a context pointer); a region whose work fits one grain runs inline
// without waking anyone; and the caller, once done with its own range, runs any range no
// worker has claimed yet, so a worker descheduled by a busy OS delays nobody (the split
// stays the same, only who runs a range changes).
//
// In debug builds each thread runs its range as grain-sized chunks in reverse order, to catch
// code that depends on the order of chunks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace reprise {

struct ThreadPoolOptions {
  // Threads that run a region, the caller included; 0 means GetCpuFeatures().num_usable_cores.
  int num_threads = 0;
  // How long an idle worker spins before it sleeps. Higher is lower latency for regions that
  // follow each other closely, at the cost of burning a core while idle.
  int spin_us = 200;
  // Run once by each worker thread as it starts, before it takes part in any region, and by
  // the thread that creates the pool; Create returns after every worker has run it. For
  // per-thread state that must exist before the first region, so that regions allocate
  // nothing even on a thread the OS starts late (the kernels' scratch). Must not throw.
  void (*thread_start)() = nullptr;
};

// Thread-safe: ParallelFor may be called from any thread. Calls from different threads are
// serialised (one region runs at a time); a call made from inside a region (by a callable
// running on a pool thread or on the caller, of this or any pool) runs inline on that
// thread, over the whole range, so nesting never deadlocks.
class ThreadPool {
 public:
  // Starts the workers. Errors: InvalidArgument for num_threads outside [0, 1024] or
  // spin_us < 0; ResourceExhausted when the system refuses a thread.
  static Result<std::unique_ptr<ThreadPool>> Create(const ThreadPoolOptions& options = {});

  // Stops and joins the workers. Requires: no region is running.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that take part in a region, the caller included.
  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint ranges that together cover [0, n), in parallel, and
  // returns when all calls have returned. The ranges are SplitRange(n, grain,
  // num_threads(), i) for each thread index i: every range starts at a multiple of `grain`
  // (ends too, except the last one, which ends at n). Which thread runs which range may vary.
  // `fn` must not throw and must be safe to call concurrently.
  // Requires: n >= 0, grain >= 1.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    Run(n, grain, &Trampoline<Fn>, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Range `range_index` of the static split of [0, n) into `num_ranges` parts, exposed for
  // callers that size per-range scratch and for tests. Empty ranges are {begin, begin}.
  static std::pair<int64_t, int64_t> SplitRange(int64_t n, int64_t grain, int num_ranges,
                                                int range_index);

 private:
  using RangeFn = void (*)(void* context, int64_t begin, int64_t end);

  template <typename Fn>
  static void Trampoline(void* context, int64_t begin, int64_t end) {
    (*static_cast<Fn*>(context))(begin, end);
  }

  struct Worker;

  ThreadPool(int num_threads, int spin_us, void (*thread_start)());
  // Starts the workers and waits until each has run thread_start_.
  Status StartWorkers();
  void Run(int64_t n, int64_t grain, RangeFn fn, void* context);
  void WorkerLoop();
  // Claims and runs ranges of region `generation` until none is left; returns how many.
  int RunClaimedRanges(uint32_t generation);
  static void RunRange(RangeFn fn, void* context, int64_t begin, int64_t end, int64_t grain);
  static void* WorkerMain(void* arg);

  const int num_threads_;
  const int spin_us_;
  void (*const thread_start_)();
  std::atomic<int> num_started_{0};  // workers that have run thread_start_
  std::mutex run_mutex_;             // serialises regions started by different threads

  // The job of the current region. Written by the caller before it publishes the region in
  // claim_ (release); read by a worker only after it has claimed a range of that region
  // (acquire), and never rewritten before every claimed range is done.
  RangeFn job_fn_ = nullptr;
  void* job_context_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;

  // Bumped once per region (and once at shutdown); idle workers wait on it, as a futex word.
  alignas(64) std::atomic<uint32_t> generation_{0};
  // (generation << 32) | (number of ranges << 16) | index of the next unclaimed range of
  // that generation's split. The split is static, but which thread runs a range is not: a
  // worker claims the next range, and the caller claims what is left after its own, so a
  // worker that the OS has not scheduled yet delays nobody.
  alignas(64) std::atomic<uint64_t> claim_{0};
  // Claimed ranges of the current region that are not finished yet.
  alignas(64) std::atomic<int> num_ranges_left_{0};
  // Workers asleep (or about to sleep) on generation_; the caller issues a futex wake only
  // when this is non-zero.
  alignas(64) std::atomic<int> num_sleepers_{0};
  std::atomic<bool> stopping_{false};

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace reprise
